#include "trace_recorder.hpp"

#include "shm/clock.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <time.h>
#include <unistd.h>

namespace coexec::cli {
namespace {

using namespace coexec::shm;

constexpr auto rlx = std::memory_order_relaxed;

// Keeps printable ASCII, so that names from the segment or /proc are safe
// to print and to put in JSON.
std::string printable(std::string_view text) {
    std::string out;
    for (char ch : text)
        if (ch >= 0x20 && ch < 0x7f) out += ch;
    return out;
}

template <size_t N>
std::string field_text(const char (&field)[N]) {
    char copy[N];
    std::memcpy(copy, field, N);
    return printable(std::string_view(copy, strnlen(copy, N)));
}

// The kernel's name of a thread, or empty when it is gone.
std::string kernel_thread_name(int32_t pid, int32_t tid) {
    if (pid <= 0 || tid <= 0) return {};
    std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
    std::string name;
    std::getline(in, name);
    return printable(name);
}

TraceKind kind_for_held(CpuState st) {
    switch (st) {
    case CpuState::Running:
        return TraceKind::Grant;
    case CpuState::Idle:
        return TraceKind::Idle;
    case CpuState::Sleeping:
        return TraceKind::Sleep;
    case CpuState::Lent:
        return TraceKind::Lend;
    default:
        return TraceKind::None;
    }
}

} // namespace

TraceRecorder::TraceRecorder(Segment& segment, std::string shm_name)
    : sched_(segment), readers_(size_t(trace_ring_count(segment.header))) {
    rec_.shm_name = std::move(shm_name);
    Segment& s = segment;
    scheduler::WakeList wakes;
    {
        // Under the lock: no locked change falls between the state noted
        // here and the rings' positions (see add_recorder()).
        scheduler::SchedulerLock lock(sched_, wakes, scheduler::SchedulerLock::Check::No);
        on_ = sched_.add_recorder(::getpid());
        if (!on_)
            throw std::runtime_error("already " + std::to_string(kMaxRecorders) +
                                     " coexec record processes recording this segment");
        for (size_t r = 0; r < readers_.size(); ++r)
            readers_[r].start(s.traces[std::ptrdiff_t(r)]);
        rec_.start_ns = now_ns();
        const Header& h = s.header;
        const int alive = std::clamp(h.alive_count, 0, kMaxProcs);
        for (int i = 0; i < alive; ++i) {
            const int32_t p = h.alive[i];
            if (p < 0 || p >= kMaxProcs) continue;
            TraceEvent e;
            e.time_ns = rec_.start_ns;
            e.kind = TraceKind::Join;
            e.proc = p;
            e.pid = s.procs[p].pid;
            e.detail = 1; // a member when the recording started
            std::memcpy(e.label.data(), s.procs[p].name, kNameSize);
            rec_.events.push_back(e);
        }
        const int cpus = std::clamp(h.cpu_count, 0, h.max_cpus);
        for (int c = 0; c < cpus; ++c) {
            const CpuSlot& cpu = s.cpus[c];
            const TraceKind kind = kind_for_held(cpu.state.load(rlx));
            const int32_t t = cpu.owner_thread.load(rlx);
            if (kind == TraceKind::None || t < 0 || t >= kMaxThreads) continue;
            const ThreadSlot& th = s.threads[t];
            TraceEvent e;
            e.time_ns = rec_.start_ns;
            e.kind = kind;
            e.cpu = c;
            e.thread = t;
            e.tid = th.tid.load(rlx);
            e.proc = th.proc;
            if (th.proc >= 0 && th.proc < kMaxProcs) e.pid = s.procs[th.proc].pid;
            std::memcpy(e.label.data(), th.label, kTraceLabelSize);
            rec_.events.push_back(e);
        }
    }
    wakes.flush(s);
    name_new_threads(0);
}

TraceRecorder::~TraceRecorder() {
    if (on_) switch_off();
}

void TraceRecorder::switch_off() {
    scheduler::WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched_, wakes, scheduler::SchedulerLock::Check::No);
        sched_.remove_recorder(::getpid());
    }
    wakes.flush(sched_.segment());
    on_ = false;
}

void TraceRecorder::poll() {
    const size_t before = rec_.events.size();
    Segment& s = sched_.segment();
    const int32_t process_ring = process_trace_ring(s.header);
    for (int32_t r = 0; r < int32_t(readers_.size()); ++r) {
        const size_t from = rec_.events.size();
        readers_[size_t(r)].poll(s.traces[r], rec_.events);
        // A CPU ring's records are about its CPU, whatever a corrupt
        // record says.
        for (size_t i = from; i < rec_.events.size(); ++i)
            rec_.events[i].cpu = r == process_ring ? kNone : r;
    }
    name_new_threads(before);
}

void TraceRecorder::name_new_threads(size_t from) {
    for (size_t i = from; i < rec_.events.size(); ++i) {
        const TraceEvent& e = rec_.events[i];
        if (e.kind == TraceKind::Join || e.kind == TraceKind::Leave || e.kind == TraceKind::Reap) {
            rec_.process_names.try_emplace(e.pid, printable(e.label_text()));
            continue;
        }
        if (e.tid <= 0 || rec_.thread_names.count(e.tid)) continue;
        // Read while the thread most likely still runs.
        rec_.thread_names[e.tid] = kernel_thread_name(e.pid, e.tid);
    }
}

size_t TraceRecorder::pending() const {
    size_t n = 0;
    for (const auto& r : readers_)
        n += r.pending();
    return n;
}

Recording TraceRecorder::finish() {
    if (on_) switch_off();
    rec_.end_ns = now_ns();
    // Writers that read the switch before it went off may still append
    // (their records' times are earlier): the records they finish are read,
    // up to the grace period.
    poll();
    for (const uint64_t until = now_ns() + kPendingGraceNs; pending() > 0 && now_ns() < until;) {
        const timespec ms{0, 1'000'000};
        nanosleep(&ms, nullptr);
        poll();
    }
    Segment& s = sched_.segment();
    // Members that joined before any Join record of theirs was read (lost).
    const int alive = std::clamp(s.header.alive_count, 0, kMaxProcs);
    for (int i = 0; i < alive; ++i) {
        const int32_t p = s.header.alive[i];
        if (p >= 0 && p < kMaxProcs)
            rec_.process_names.try_emplace(s.procs[p].pid, field_text(s.procs[p].name));
    }
    const int cpus = std::clamp(s.header.cpu_count, 0, s.header.max_cpus);
    for (int c = 0; c < cpus; ++c)
        rec_.cpu_system_ids.push_back(s.cpus[c].system_id);
    for (auto& r : readers_) {
        r.abandon_pending();
        rec_.overwritten += r.overwritten();
        rec_.unfinished += r.unfinished();
    }
    std::stable_sort(
        rec_.events.begin(), rec_.events.end(),
        [](const TraceEvent& a, const TraceEvent& b) { return a.time_ns < b.time_ns; });
    return std::move(rec_);
}

} // namespace coexec::cli
