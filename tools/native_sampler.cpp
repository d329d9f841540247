#include "native_sampler.hpp"

#include "shm/clock.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace coexec::cli {
namespace {

using shm::TraceEvent;
using shm::TraceKind;

// How often the tree is searched for new processes, in samples: a scan of
// all of /proc costs far more than reading the known threads.
constexpr unsigned kScanEvery = 10;

// A small /proc file's text (empty when it cannot be read), without
// iostreams: the sampler reads two files per thread per millisecond.
std::string read_small(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    char buf[1024];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

// The fields of a /proc/<pid>/stat line this file uses.
struct Stat {
    bool ok = false;
    std::string comm;
    char state = '?';
    pid_t ppid = 0;
    int cpu = -1; // field 39: the CPU it last ran on
};

Stat parse_stat(const std::string& text) {
    Stat s;
    // The command name may hold spaces and parentheses: it ends at the last ')'.
    const size_t open = text.find('('), close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) return s;
    s.comm = text.substr(open + 1, close - open - 1);
    std::vector<std::string_view> fields; // from field 3 (state) on
    std::string_view rest(text);
    rest.remove_prefix(close + 1);
    while (!rest.empty()) {
        const size_t start = rest.find_first_not_of(" \n");
        if (start == std::string_view::npos) break;
        rest.remove_prefix(start);
        const size_t end = std::min(rest.find_first_of(" \n"), rest.size());
        fields.push_back(rest.substr(0, end));
        rest.remove_prefix(end);
    }
    if (fields.size() < 37) return s;
    s.state = fields[0].empty() ? '?' : fields[0][0];
    s.ppid = pid_t(std::strtol(std::string(fields[1]).c_str(), nullptr, 10));
    s.cpu = int(std::strtol(std::string(fields[36]).c_str(), nullptr, 10));
    s.ok = true;
    return s;
}

// The numeric entries of a /proc directory.
std::vector<pid_t> numeric_entries(const std::string& dir) {
    std::vector<pid_t> out;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (const dirent* e = ::readdir(d)) {
        char* end = nullptr;
        const long v = std::strtol(e->d_name, &end, 10);
        if (end != e->d_name && *end == '\0' && v > 0) out.push_back(pid_t(v));
    }
    ::closedir(d);
    return out;
}

} // namespace

NativeSampler::NativeSampler(pid_t root, std::string label)
    : root_(root), label_(std::move(label)) {
    rec_.start_ns = shm::now_ns();
    rec_.producer = "coexec record --native";
    rec_.cpu_tracks_name = "CPUs (kernel, sampled)";
    rec_.shm_name = "native";
    const long cpus = std::clamp(sysconf(_SC_NPROCESSORS_CONF), 1L, long(shm::kMaxCpus));
    for (int c = 0; c < cpus; ++c)
        rec_.cpu_system_ids.push_back(c);
    last_ns_ = rec_.start_ns;
    add_process(root, rec_.start_ns);
    sample(); // the baseline of each thread's time on a CPU
}

void NativeSampler::add_process(pid_t pid, uint64_t now) {
    if (!procs_.insert(pid).second) return;
    const Stat st = parse_stat(read_small("/proc/" + std::to_string(pid) + "/stat"));
    rec_.process_names[pid] = st.ok ? st.comm : std::string();
    TraceEvent e;
    e.time_ns = now;
    e.kind = TraceKind::Join;
    e.pid = pid;
    st.comm.copy(e.label.data(), e.label.size());
    rec_.events.push_back(e);
}

void NativeSampler::find_children() {
    std::vector<std::pair<pid_t, pid_t>> parents; // (pid, ppid)
    for (pid_t pid : numeric_entries("/proc")) {
        // Not the recorder itself, when it samples its own parent's tree.
        if (procs_.count(pid) || pid == ::getpid()) continue;
        const Stat st = parse_stat(read_small("/proc/" + std::to_string(pid) + "/stat"));
        if (st.ok && st.state != 'Z') parents.emplace_back(pid, st.ppid);
    }
    // A grandchild may be listed before its parent: repeat until nothing is added.
    for (bool added = true; added;) {
        added = false;
        for (const auto& [pid, ppid] : parents)
            if (procs_.count(ppid) && !procs_.count(pid)) {
                add_process(pid, last_ns_);
                added = true;
            }
    }
}

void NativeSampler::read_threads(pid_t pid, std::map<int, Candidate>& best) {
    const std::string task = "/proc/" + std::to_string(pid) + "/task/";
    for (pid_t tid : numeric_entries(task)) {
        const std::string dir = task + std::to_string(tid);
        const Stat st = parse_stat(read_small(dir + "/stat"));
        if (!st.ok || st.state == 'Z' || st.state == 'X') continue;
        const std::string sched = read_small(dir + "/schedstat");
        if (sched.empty()) continue;
        const uint64_t run_ns = std::strtoull(sched.c_str(), nullptr, 10);
        auto [it, fresh] = threads_.try_emplace(tid);
        Thread& th = it->second;
        th.seen = true;
        if (fresh) {
            th.pid = pid;
            th.run_ns = run_ns;
        }
        // Names change at exec (a child is first seen as its parent's copy):
        // the trace keeps the last ones seen.
        if (std::string& name = rec_.thread_names[tid]; name != st.comm) name = st.comm;
        if (tid == pid) rec_.process_names[pid] = st.comm;
        const uint64_t ran = run_ns > th.run_ns ? run_ns - th.run_ns : 0;
        th.run_ns = run_ns;
        // Runnable there now, or ran since the last sample (and blocked).
        if (st.cpu < 0 || st.cpu >= shm::kMaxCpus || (st.state != 'R' && ran == 0)) continue;
        const Holder h{pid, tid};
        auto held = holders_.find(st.cpu);
        const bool holder = held != holders_.end() && held->second == h;
        Candidate& b = best[st.cpu];
        // Most CPU time gained wins; then the CPU's holder so far; then any.
        if (b.holder.tid == 0 || ran > b.ran || (ran == b.ran && holder && !b.was_holder))
            b = Candidate{h, ran, holder};
    }
}

void NativeSampler::push(TraceKind kind, int cpu, const Holder& h, uint64_t at) {
    TraceEvent e;
    e.time_ns = at;
    e.kind = kind;
    e.cpu = cpu;
    e.pid = h.pid;
    e.tid = h.tid;
    label_.copy(e.label.data(), e.label.size());
    rec_.events.push_back(e);
}

void NativeSampler::set_holder(int cpu, const Holder& h, uint64_t at) {
    auto it = holders_.find(cpu);
    const bool held = it != holders_.end();
    if (held && it->second == h) return;
    if (held) {
        push(TraceKind::Release, cpu, it->second, at);
        holders_.erase(it);
    }
    if (h.tid != 0) {
        push(TraceKind::Grant, cpu, h, at);
        holders_[cpu] = h;
    }
}

void NativeSampler::sample() {
    const uint64_t now = shm::now_ns();
    if (samples_++ % kScanEvery == 0) find_children();
    for (auto& [tid, th] : threads_)
        th.seen = false;
    std::map<int, Candidate> best;
    std::vector<pid_t> gone;
    for (pid_t pid : procs_) {
        const Stat st = parse_stat(read_small("/proc/" + std::to_string(pid) + "/stat"));
        if (!st.ok || st.state == 'Z' || st.state == 'X')
            gone.push_back(pid);
        else
            read_threads(pid, best);
    }
    // Each CPU, over [last_ns_, now): the best candidate, or nobody of the tree.
    std::set<int> cpus;
    for (const auto& [cpu, h] : holders_)
        cpus.insert(cpu);
    for (const auto& [cpu, b] : best)
        cpus.insert(cpu);
    for (int cpu : cpus) {
        auto it = best.find(cpu);
        set_holder(cpu, it != best.end() ? it->second.holder : Holder{}, last_ns_);
    }
    for (pid_t pid : gone) {
        procs_.erase(pid);
        TraceEvent e;
        e.time_ns = now;
        e.kind = TraceKind::Leave;
        e.pid = pid;
        rec_.events.push_back(e);
    }
    std::erase_if(threads_, [](const auto& t) { return !t.second.seen; });
    last_ns_ = now;
}

Recording NativeSampler::finish() {
    sample();
    rec_.end_ns = last_ns_;
    rec_.sample_period_ns = samples_ > 1 ? (rec_.end_ns - rec_.start_ns) / (samples_ - 1) : 0;
    return std::move(rec_);
}

} // namespace coexec::cli
