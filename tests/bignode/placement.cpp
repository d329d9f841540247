// coexec-placement: where coexec runs tasks on this node. One or more
// processes (--procs) submit short tasks through the nOS-V C API, and each
// task records, from inside, the CPU it runs on. Checks:
//   topology:  coexec's CPUs and NUMA nodes are the kernel's
//              (/sys/devices/system/node/node<N>/cpulist);
//   cover:     every CPU the segment manages runs a task;
//   numa:      a task with a strict NUMA affinity runs on a CPU of its node;
//   home:      with two or more nodes, a process whose memory policy prefers
//              one node (as `numactl --preferred` sets it) runs its tasks
//              without affinity on that node's CPUs while they are free;
//   occupancy: never two of these tasks on one CPU at once, across all the
//              processes;
//   pinned:    a task runs on the CPU coexec granted it, start to end.
// Written for the QEMU guest of `make test-bignode` (64 vCPUs, 4 NUMA nodes;
// tests/bignode), and as useful on a real big node. Prints one line a
// check, "ok" or "FAILED" with the evidence.
// Exit status: 0 every check passed, 1 one failed, 2 bad usage or no coexec.
#include "scheduler/topology.hpp"

#include <nosv.h>
#include <nosv/affinity.h>
#include <nosv/hwinfo.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numaif.h>
#include <sched.h>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// System CPU ids this program can record (coexec's own limit is lower).
constexpr int kMaxCpu = 4096;

struct Options {
    int procs = 1;
    double seconds = 60;        // the cover phase's limit
    long task_us = 1000;        // how long each task spins
    int numa_rounds = 3;        // rounds of strict NUMA tasks per node
    int home_rounds = 3;        // rounds of the home-node process (0: none)
    int expect_cpus = 0;        // 0: any
    int expect_numa = 0;        // 0: any
    std::string sysfs = "/sys"; // where the kernel's topology is read
};

// The first CPU a check failed on, as evidence: set once.
struct Example {
    std::atomic<int> cpu{-1};
    std::atomic<int> other{-1};
    void note(int c, int o) {
        int none = -1;
        if (cpu.compare_exchange_strong(none, c)) other.store(o);
    }
};

// Shared by every process of the run (MAP_SHARED, mapped before the forks).
struct Board {
    std::atomic<int> running[kMaxCpu]; // tasks running on the CPU now
    std::atomic<long> ran[kMaxCpu];    // tasks that ran there
    std::atomic<long> numa_ran[kMaxCpu];
    std::atomic<long> tasks;
    std::atomic<long> overlaps;   // a task started on a CPU where one ran
    std::atomic<long> unpinned;   // sched_getcpu() != the granted CPU
    std::atomic<long> off_node;   // a strict NUMA task off its node
    std::atomic<long> home_tasks; // tasks of the process with a home node
    std::atomic<long> off_home;   // ... that ran off that node
    std::atomic<long> node_ids;   // coexec's NUMA node of a CPU is not the kernel's
    std::atomic<long> bad_cpu;    // sched_getcpu() failed or out of range
    Example overlap_at, unpinned_at, off_node_at, node_id_at, off_home_at;
};

Board* g_board = nullptr;
// The kernel's NUMA node of each CPU (-1: none known), read before the forks.
std::vector<int> g_node_of(kMaxCpu, -1);

struct TaskArgs {
    int node; // system NUMA id of a strict affinity, or -1
    long spin_us;
    int home = -1; // the home node of the submitting process, or -1
};

void spin(long us) {
    const auto end = Clock::now() + std::chrono::microseconds(us);
    while (Clock::now() < end) {
    }
}

void task_run(nosv_task_t task) {
    const auto* args = static_cast<const TaskArgs*>(nosv_get_task_metadata(task));
    Board& b = *g_board;
    // coexec's preemption signal (SIGURG) makes a thread wait in its handler
    // for a CPU while this task's count still claims the old one: blocked
    // here, so that a late holder is not taken for two tasks on one CPU.
    sigset_t urg, old;
    sigemptyset(&urg);
    sigaddset(&urg, SIGURG);
    pthread_sigmask(SIG_BLOCK, &urg, &old);
    const int cpu = sched_getcpu();
    const int granted = nosv_get_current_system_cpu();
    if (cpu < 0 || cpu >= kMaxCpu) {
        b.bad_cpu++;
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
        return;
    }
    if (cpu != granted) {
        b.unpinned++;
        b.unpinned_at.note(cpu, granted);
    }
    if (b.running[cpu].fetch_add(1) != 0) {
        b.overlaps++;
        b.overlap_at.note(cpu, -1);
    }
    const int coexec_node = nosv_get_current_system_numa_node();
    if (g_node_of[size_t(cpu)] >= 0 && coexec_node != g_node_of[size_t(cpu)]) {
        b.node_ids++;
        b.node_id_at.note(cpu, coexec_node);
    }
    spin(args->spin_us);
    const int after = sched_getcpu();
    b.running[cpu].fetch_sub(1);
    if (after != cpu) {
        b.unpinned++;
        b.unpinned_at.note(after, cpu);
    }
    b.ran[cpu]++;
    if (args->home >= 0) {
        b.home_tasks++;
        if (g_node_of[size_t(cpu)] != args->home) {
            b.off_home++;
            b.off_home_at.note(cpu, args->home);
        }
    }
    if (args->node >= 0) {
        b.numa_ran[cpu]++;
        if (g_node_of[size_t(cpu)] != args->node) {
            b.off_node++;
            b.off_node_at.note(cpu, args->node);
        }
    }
    b.tasks++;
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// A sysfs CPU list ("0-3,8,10-11\n"; empty for a node without CPUs) ->
// {0,1,2,3,8,10,11}; false on a malformed list.
bool parse_cpu_list(std::string text, std::vector<int>& out) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.pop_back();
    out.clear();
    std::string error;
    return text.empty() || coexec::scheduler::parse_cpu_list(text, out, error);
}

// The CPUs as a Linux CPU list, "none" for no CPU.
std::string format_cpu_list(std::vector<int> cpus) {
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    return cpus.empty() ? "none" : coexec::scheduler::format_cpu_list(cpus);
}

std::string read_file(const std::string& path) {
    std::ifstream f(path);
    if (!f) return {};
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The kernel's NUMA nodes (node id -> its CPUs), from sysfs. A kernel
// without NUMA has no node directories: then every CPU is on node 0.
std::vector<std::vector<int>> read_nodes(const std::string& sysfs, std::string& error) {
    std::vector<std::vector<int>> nodes;
    const std::string online = read_file(sysfs + "/devices/system/node/online");
    std::vector<int> ids;
    if (online.empty()) {
        std::vector<int> cpus;
        if (!parse_cpu_list(read_file(sysfs + "/devices/system/cpu/online"), cpus) ||
            cpus.empty()) {
            error = "cannot read " + sysfs + "/devices/system/cpu/online";
            return {};
        }
        nodes.push_back(cpus);
        return nodes;
    }
    if (!parse_cpu_list(online, ids)) {
        error = "cannot parse " + sysfs + "/devices/system/node/online";
        return {};
    }
    nodes.resize(size_t(ids.back()) + 1);
    for (int id : ids) {
        const std::string path =
            sysfs + "/devices/system/node/node" + std::to_string(id) + "/cpulist";
        if (!parse_cpu_list(read_file(path), nodes[size_t(id)])) {
            error = "cannot parse " + path;
            return {};
        }
    }
    return nodes;
}

void check(int rc, const char* what) {
    if (rc != NOSV_SUCCESS) {
        std::fprintf(stderr, "coexec-placement: %s: %s\n", what, nosv_get_error_string(rc));
        std::_Exit(2);
    }
}

// Submits every task, and waits for all of them (sleeping: this thread is
// not coexec's).
void run_batch(std::vector<nosv_task_t>& tasks) {
    for (nosv_task_t t : tasks)
        check(nosv_submit(t, NOSV_SUBMIT_NONE), "nosv_submit");
    check(nosv_wait_all(tasks.data(), tasks.size(), uint64_t(-1)), "nosv_wait_all");
}

bool covered(const std::vector<int>& cpus) {
    for (int c : cpus)
        if (g_board->ran[c].load() == 0) return false;
    return true;
}

struct Seen {
    std::vector<int> cpus;  // the managed CPUs, system ids
    std::vector<int> nodes; // the managed NUMA nodes, system ids
    std::vector<int> cpus_in_node;
    int rounds = 0;
    double cover_seconds = 0;
};

// `n` joinable tasks of `type`, each with `args` as its metadata and, when
// `args.node` names a node, a strict affinity to it.
std::vector<nosv_task_t> make_tasks(nosv_task_type_t type, size_t n, TaskArgs args) {
    std::vector<nosv_task_t> tasks(n);
    for (auto& t : tasks) {
        check(nosv_create(&t, type, sizeof(TaskArgs), NOSV_CREATE_JOINABLE), "nosv_create");
        *static_cast<TaskArgs*>(nosv_get_task_metadata(t)) = args;
        if (args.node >= 0) {
            nosv_affinity_t a = nosv_affinity_get(uint32_t(args.node), NOSV_AFFINITY_LEVEL_NUMA,
                                                  NOSV_AFFINITY_TYPE_STRICT);
            nosv_set_task_affinity(t, &a);
        }
    }
    return tasks;
}

void destroy_tasks(const std::vector<nosv_task_t>& tasks) {
    for (nosv_task_t t : tasks)
        check(nosv_destroy(t, NOSV_DESTROY_NONE), "nosv_destroy");
}

// One process's work: the cover rounds until every managed CPU ran a task
// (of any process) or the limit, then the strict NUMA rounds.
Seen work(const Options& o) {
    Seen seen;
    check(nosv_init(), "nosv_init");
    const int ncpus = nosv_get_num_cpus();
    int* cpus = nosv_get_available_cpus();
    if (ncpus <= 0 || !cpus) check(NOSV_ERR_UNKNOWN, "nosv_get_available_cpus");
    seen.cpus.assign(cpus, cpus + ncpus);
    std::free(cpus);
    const int nnodes = nosv_get_num_numa_nodes();
    int* nodes = nosv_get_available_numa_nodes();
    if (nnodes <= 0 || !nodes) check(NOSV_ERR_UNKNOWN, "nosv_get_available_numa_nodes");
    seen.nodes.assign(nodes, nodes + nnodes);
    std::free(nodes);
    for (int n : seen.nodes)
        seen.cpus_in_node.push_back(nosv_get_num_cpus_in_numa(n));
    for (int c : seen.cpus)
        if (c < 0 || c >= kMaxCpu) check(NOSV_ERR_UNKNOWN, "a managed CPU's system id");

    nosv_task_type_t type;
    check(nosv_type_init(&type, task_run, nullptr, nullptr, "placement", nullptr, nullptr,
                         NOSV_TYPE_INIT_NONE),
          "nosv_type_init");

    // Four tasks a CPU in flight, so that every CPU has work to be woken for.
    std::vector<nosv_task_t> batch = make_tasks(type, 4 * size_t(ncpus), {-1, o.task_us});
    const auto start = Clock::now();
    const auto limit = start + std::chrono::duration<double>(o.seconds);
    while (!covered(seen.cpus) && Clock::now() < limit) {
        run_batch(batch);
        ++seen.rounds;
    }
    seen.cover_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    destroy_tasks(batch);

    for (size_t i = 0; i < seen.nodes.size(); ++i) {
        const size_t n = 2 * size_t(std::max(1, seen.cpus_in_node[i]));
        std::vector<nosv_task_t> strict = make_tasks(type, n, {seen.nodes[i], o.task_us});
        for (int r = 0; r < o.numa_rounds; ++r)
            run_batch(strict);
        destroy_tasks(strict);
    }
    check(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), "nosv_type_destroy");
    check(nosv_shutdown(), "nosv_shutdown");
    return seen;
}

// The home-node process: its memory policy prefers system node `node` (set
// before nosv_init, as `numactl --preferred` would), and it runs rounds of
// `n` tasks without affinity, fewer than the node has CPUs, alone on the
// segment: each should find a free CPU of the node.
void home_work(const Options& o, int node, int n) {
    unsigned long mask[16] = {};
    mask[size_t(node) / 64] = 1ul << (node % 64);
    if (set_mempolicy(MPOL_PREFERRED, mask, sizeof mask * 8) != 0) {
        std::perror("coexec-placement: set_mempolicy");
        std::_Exit(2);
    }
    check(nosv_init(), "nosv_init");
    nosv_task_type_t type;
    check(nosv_type_init(&type, task_run, nullptr, nullptr, "home", nullptr, nullptr,
                         NOSV_TYPE_INIT_NONE),
          "nosv_type_init");
    std::vector<nosv_task_t> tasks = make_tasks(type, size_t(n), {-1, o.task_us, node});
    for (int r = 0; r < o.home_rounds; ++r)
        run_batch(tasks);
    destroy_tasks(tasks);
    check(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), "nosv_type_destroy");
    check(nosv_shutdown(), "nosv_shutdown");
}

bool report(const char* check, bool ok, const std::string& text) {
    std::printf("coexec-placement: %s: %s, %s\n", check, ok ? "ok" : "FAILED", text.c_str());
    return ok;
}

int usage(const char* why) {
    std::fprintf(stderr,
                 "coexec-placement: %s\n"
                 "usage: coexec-placement [--procs N] [--seconds S] [--task-us US]\n"
                 "         [--numa-rounds N] [--home-rounds N] [--expect-cpus N]\n"
                 "         [--expect-numa N] [--sysfs DIR]\n",
                 why);
    return 2;
}

bool parse_number(const char* text, double min, double max, double& out) {
    char* end = nullptr;
    const double v = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(v >= min && v <= max)) return false;
    out = v;
    return true;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            usage("checks that coexec uses every CPU and keeps NUMA-strict tasks on their node");
            return 0;
        }
        if (i + 1 >= argc) return usage(("missing value after " + arg).c_str());
        const char* value = argv[++i];
        double v = 0;
        auto in = [&](double min, double max) { return parse_number(value, min, max, v); };
        if (arg == "--procs" && in(1, 64)) {
            o.procs = int(v);
        } else if (arg == "--seconds" && in(0.1, 86400)) {
            o.seconds = v;
        } else if (arg == "--task-us" && in(1, 1000000)) {
            o.task_us = long(v);
        } else if (arg == "--numa-rounds" && in(1, 1000)) {
            o.numa_rounds = int(v);
        } else if (arg == "--home-rounds" && in(0, 1000)) {
            o.home_rounds = int(v);
        } else if (arg == "--expect-cpus" && in(1, kMaxCpu)) {
            o.expect_cpus = int(v);
        } else if (arg == "--expect-numa" && in(1, 1024)) {
            o.expect_numa = int(v);
        } else if (arg == "--sysfs") {
            o.sysfs = value;
        } else {
            return usage(("bad option or value: " + arg + " " + value).c_str());
        }
    }

    std::string error;
    const std::vector<std::vector<int>> kernel_nodes = read_nodes(o.sysfs, error);
    if (kernel_nodes.empty()) return usage(error.c_str());
    for (size_t n = 0; n < kernel_nodes.size(); ++n)
        for (int c : kernel_nodes[n])
            g_node_of[size_t(c)] = int(n);

    void* mem =
        ::mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return usage("mmap of the shared board failed");
    g_board = new (mem) Board();

    // The other processes, forked before any of them starts coexec.
    std::vector<pid_t> kids;
    for (int p = 1; p < o.procs; ++p) {
        const pid_t pid = ::fork();
        if (pid < 0) return usage("fork failed");
        if (pid == 0) {
            work(o);
            std::fflush(stdout);
            std::_Exit(0);
        }
        kids.push_back(pid);
    }
    const Seen seen = work(o);
    bool all = true;
    for (pid_t k : kids) {
        int status = 0;
        if (::waitpid(k, &status, 0) != k || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::fprintf(stderr, "coexec-placement: process %d failed (status %d)\n", int(k),
                         status);
            all = false;
        }
    }
    // The home-node process, alone on the segment once the others left.
    const bool homes = seen.nodes.size() >= 2 && o.home_rounds > 0;
    const int home = homes ? seen.nodes.back() : -1;
    const int home_tasks = homes ? std::max(1, seen.cpus_in_node.back() - 1) : 0;
    if (homes) {
        const pid_t pid = ::fork();
        if (pid < 0) return usage("fork failed");
        if (pid == 0) {
            home_work(o, home, home_tasks);
            std::_Exit(0);
        }
        int status = 0;
        if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::fprintf(stderr, "coexec-placement: the home-node process failed (status %d)\n",
                         status);
            all = false;
        }
    }
    const Board& b = *g_board;

    std::printf("coexec-placement: %d process(es), %zu CPUs (%s) on %zu NUMA node(s)\n", o.procs,
                seen.cpus.size(), format_cpu_list(seen.cpus).c_str(), seen.nodes.size());

    // topology: the node coexec gives each CPU is the kernel's, and so is
    // each node's CPU count (of the managed CPUs).
    std::string topo;
    bool topo_ok = b.node_ids.load() == 0;
    for (size_t i = 0; i < seen.nodes.size(); ++i) {
        const int n = seen.nodes[i];
        int kernel = 0;
        if (n >= 0 && size_t(n) < kernel_nodes.size())
            for (int c : kernel_nodes[size_t(n)])
                kernel += std::count(seen.cpus.begin(), seen.cpus.end(), c) > 0;
        if (kernel != seen.cpus_in_node[i]) topo_ok = false;
        topo += (topo.empty() ? "" : "; ") + std::string("node ") + std::to_string(n) + ": " +
                std::to_string(seen.cpus_in_node[i]) + " CPUs (kernel: " + std::to_string(kernel) +
                ")";
    }
    if (b.node_ids.load())
        topo += "; a task on CPU " + std::to_string(b.node_id_at.cpu.load()) +
                " was told NUMA node " + std::to_string(b.node_id_at.other.load());
    if (o.expect_cpus && int(seen.cpus.size()) != o.expect_cpus) {
        topo_ok = false;
        topo += "; expected " + std::to_string(o.expect_cpus) + " CPUs";
    }
    if (o.expect_numa && int(seen.nodes.size()) != o.expect_numa) {
        topo_ok = false;
        topo += "; expected " + std::to_string(o.expect_numa) + " NUMA nodes";
    }
    all &= report("topology", topo_ok, topo);

    std::vector<int> unused;
    for (int c : seen.cpus)
        if (b.ran[c].load() == 0) unused.push_back(c);
    char when[64];
    std::snprintf(when, sizeof when, "%.1f s", seen.cover_seconds);
    all &= report("cover", unused.empty(),
                  std::to_string(seen.cpus.size() - unused.size()) + " of " +
                      std::to_string(seen.cpus.size()) + " CPUs ran a task (" +
                      std::to_string(seen.rounds) + " rounds of " +
                      std::to_string(4 * seen.cpus.size()) + " tasks in " + when +
                      (unused.empty() ? ")" : "); never used: " + format_cpu_list(unused)));

    std::string numa;
    long strict = 0;
    for (size_t i = 0; i < seen.nodes.size(); ++i) {
        const int n = seen.nodes[i];
        long count = 0;
        int used = 0;
        for (int c = 0; c < kMaxCpu; ++c)
            if (g_node_of[size_t(c)] == n && b.numa_ran[c].load()) {
                count += b.numa_ran[c].load();
                ++used;
            }
        strict += count;
        numa += "; node " + std::to_string(n) + ": " + std::to_string(count) + " on " +
                std::to_string(used) + " of " + std::to_string(seen.cpus_in_node[i]) + " CPUs";
    }
    if (b.off_node.load())
        numa += "; first off its node: a task for node " +
                std::to_string(b.off_node_at.other.load()) + " on CPU " +
                std::to_string(b.off_node_at.cpu.load());
    all &= report("numa", b.off_node.load() == 0 && strict > 0,
                  std::to_string(strict) + " strict NUMA tasks, " +
                      std::to_string(b.off_node.load()) + " off their node" + numa);

    if (!homes) {
        report("home", true,
               o.home_rounds > 0 ? "skipped: one NUMA node, no home to prefer"
                                 : "skipped (--home-rounds 0)");
    } else {
        const long off = b.off_home.load();
        all &= report("home", off == 0 && b.home_tasks.load() > 0,
                      std::to_string(b.home_tasks.load()) + " tasks of a process preferring node " +
                          std::to_string(home) + " (" + std::to_string(home_tasks) +
                          " at a time), " + std::to_string(off) + " off it" +
                          (off ? " (first on CPU " + std::to_string(b.off_home_at.cpu.load()) + ")"
                               : std::string()));
    }
    all &= report(
        "occupancy", b.overlaps.load() == 0 && b.bad_cpu.load() == 0,
        std::to_string(b.overlaps.load()) + " of " + std::to_string(b.tasks.load()) +
            " tasks started on a CPU where another ran" +
            (b.overlaps.load() ? " (first on CPU " + std::to_string(b.overlap_at.cpu.load()) + ")"
                               : std::string()) +
            (b.bad_cpu.load()
                 ? "; sched_getcpu() failed " + std::to_string(b.bad_cpu.load()) + " times"
                 : std::string()));
    all &= report("pinned", b.unpinned.load() == 0,
                  std::to_string(b.unpinned.load()) + " tasks off the CPU coexec granted" +
                      (b.unpinned.load()
                           ? " (first: on CPU " + std::to_string(b.unpinned_at.cpu.load()) +
                                 ", granted " + std::to_string(b.unpinned_at.other.load()) + ")"
                           : std::string()));
    return all ? 0 : 1;
}
