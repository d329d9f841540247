// A plain oneTBB program with one scenario per command-line argument. It
// knows nothing about coexec: the tests run it with and without the adapter
// preloaded and compare what it prints. Each scenario prints one line
// "<name> <result>" whose result must not depend on the thread pool.
//
// Usage: tbb_scenarios SCENARIO   (exit 2 with a message on a bad argument)

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <pthread.h>
#include <sched.h>
#include <set>
#include <string>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

const pthread_t main_thread = pthread_self();

// Busy work that the optimiser cannot remove, roughly `micros` long.
void spin_for(std::chrono::microseconds micros) {
    const auto end = std::chrono::steady_clock::now() + micros;
    while (std::chrono::steady_clock::now() < end) {
    }
}

// The CPUs the process may run on.
int usable_cpus() {
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

// Called by the main thread from an item of an algorithm, so that a worker
// runs some of the others however late it comes (on a loaded machine the
// main thread could otherwise run them all): waits until `seen()` says a
// worker ran one. Gives up after a minute, a hang-catcher (a worker comes
// within milliseconds). Returns at once on one CPU, where TBB's default
// arena has no worker.
template <class Seen>
void wait_for_a_worker(Seen seen) {
    if (usable_cpus() < 2) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!seen() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Tracks how many threads are inside a section at once.
class ConcurrencyMeter {
  public:
    void enter() {
        const int now = inside_.fetch_add(1, std::memory_order_acq_rel) + 1;
        int seen = peak_.load(std::memory_order_relaxed);
        // Raise the peak monotonically; relaxed is enough for a statistic read after a join.
        while (now > seen && !peak_.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
        }
    }
    void leave() { inside_.fetch_sub(1, std::memory_order_acq_rel); }
    int peak() const { return peak_.load(std::memory_order_relaxed); }

  private:
    std::atomic<int> inside_{0};
    std::atomic<int> peak_{0};
};

long checksum_parallel_for() {
    std::vector<long> values(1'000'000);
    oneapi::tbb::parallel_for(oneapi::tbb::blocked_range<size_t>(0, values.size(), 1000),
                              [&](const auto& range) {
                                  for (size_t i = range.begin(); i != range.end(); ++i)
                                      values[i] = static_cast<long>(i * i % 1009);
                              });
    return std::accumulate(values.begin(), values.end(), 0L);
}

long sum_parallel_reduce(long n) {
    return oneapi::tbb::parallel_reduce(
        oneapi::tbb::blocked_range<long>(0, n), 0L,
        [](const auto& range, long sum) {
            for (long i = range.begin(); i != range.end(); ++i)
                sum += i % 13;
            return sum;
        },
        std::plus<long>());
}

long fib_task_group(int n) {
    if (n < 16) return n < 2 ? n : fib_task_group(n - 1) + fib_task_group(n - 2);
    long x = 0;
    long y = 0;
    oneapi::tbb::task_group group;
    group.run([&] { x = fib_task_group(n - 1); });
    group.run([&] { y = fib_task_group(n - 2); });
    group.wait();
    return x + y;
}

long flow_graph_sum() {
    using namespace oneapi::tbb::flow;
    graph g;
    std::atomic<long> total{0};
    function_node<int, int> square(g, unlimited, [](int v) { return v * v; });
    function_node<int, int> triple(g, unlimited, [](int v) { return 3 * v; });
    function_node<int, continue_msg> sink(g, unlimited, [&](int v) {
        total.fetch_add(v, std::memory_order_relaxed);
        return continue_msg();
    });
    broadcast_node<int> source(g);
    make_edge(source, square);
    make_edge(source, triple);
    make_edge(square, sink);
    make_edge(triple, sink);
    for (int i = 0; i < 2000; ++i)
        source.try_put(i);
    g.wait_for_all();
    return total.load();
}

long nested_arenas() {
    oneapi::tbb::task_arena outer(2);
    oneapi::tbb::task_arena inner(3);
    std::atomic<long> total{0};
    outer.execute([&] {
        oneapi::tbb::parallel_for(0, 8, [&](int i) {
            const long part = inner.execute([&] { return sum_parallel_reduce(20'000 + i); });
            total.fetch_add(part, std::memory_order_relaxed);
        });
    });
    return total.load();
}

// Peak number of threads inside the body of an arena limited to `limit`.
int limited_arena_peak(int limit) {
    oneapi::tbb::task_arena arena(limit);
    ConcurrencyMeter meter;
    arena.execute([&] {
        oneapi::tbb::parallel_for(0, 64, [&](int) {
            meter.enter();
            spin_for(std::chrono::microseconds(300));
            meter.leave();
        });
    });
    return meter.peak();
}

// Distinct threads that ran a parallel_for under a parallelism limit.
size_t threads_under_global_control(size_t limit) {
    oneapi::tbb::global_control control(oneapi::tbb::global_control::max_allowed_parallelism,
                                        limit);
    std::mutex mutex;
    std::set<std::thread::id> seen;
    oneapi::tbb::parallel_for(0, 256, [&](int) {
        spin_for(std::chrono::microseconds(200));
        std::lock_guard lock(mutex);
        seen.insert(std::this_thread::get_id());
    });
    return seen.size();
}

int scenario_parallel_for() {
    std::printf("parallel_for %ld\n", checksum_parallel_for());
    return 0;
}

int scenario_parallel_reduce() {
    std::printf("parallel_reduce %ld\n", sum_parallel_reduce(20'000'000));
    return 0;
}

int scenario_task_group() {
    std::printf("task_group %ld\n", fib_task_group(27));
    return 0;
}

int scenario_flow_graph() {
    std::printf("flow_graph %ld\n", flow_graph_sum());
    return 0;
}

int scenario_nested_arenas() {
    std::printf("nested_arenas %ld\n", nested_arenas());
    return 0;
}

int scenario_limited_arena() {
    const int peak = limited_arena_peak(1);
    std::printf("limited_arena %s\n", peak == 1 ? "peak=1" : "peak>1");
    return 0;
}

int scenario_global_control() {
    const size_t one = threads_under_global_control(1);
    const long sum = sum_parallel_reduce(1'000'000);
    std::printf("global_control threads_at_limit_1=%zu sum=%ld\n", one, sum);
    return 0;
}

// Leaves through std::exit() while workers are in the middle of long tasks.
int scenario_exit_busy() {
    static std::atomic<bool> started{false};
    // Leaked on purpose: a task_group's destructor would wait for the work.
    auto* group = new oneapi::tbb::task_group;
    for (int i = 0; i < 8; ++i)
        group->run([] {
            started.store(true, std::memory_order_release);
            spin_for(std::chrono::seconds(30));
        });
    while (!started.load(std::memory_order_acquire))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::printf("exit_busy exiting\n");
    std::fflush(stdout);
    std::exit(0);
}

// Blocking termination: TBB closes the connection and joins its workers.
int scenario_finalize() {
    oneapi::tbb::task_scheduler_handle handle{oneapi::tbb::attach{}};
    const long sum = sum_parallel_reduce(5'000'000);
    const bool finalized = oneapi::tbb::finalize(handle, std::nothrow);
    std::printf("finalize sum=%ld finalized=%s\n", sum, finalized ? "yes" : "no");
    return 0;
}

// Whether the threads that ran TBB work were coexec threads: it asks
// libcoexec (if loaded) through dlsym, so the program needs no coexec header.
int scenario_worker_identity() {
    using self_fn = void* (*)();
    auto nosv_self = reinterpret_cast<self_fn>(dlsym(RTLD_DEFAULT, "nosv_self"));
    std::atomic<int> attached{0};
    std::atomic<int> unattached{0};
    std::atomic<int> pinned{0};
    std::atomic<int> see_process{0};
    cpu_set_t process;
    CPU_ZERO(&process);
    sched_getaffinity(0, sizeof process, &process);
    oneapi::tbb::parallel_for(0, 200, [&](int) {
        spin_for(std::chrono::microseconds(500));
        if (pthread_equal(pthread_self(), main_thread))
            return wait_for_a_worker([&] { return attached + unattached > 0; });
        const bool is_task = nosv_self != nullptr && nosv_self() != nullptr;
        (is_task ? attached : unattached).fetch_add(1, std::memory_order_relaxed);
        // Pinned: the kernel's mask (the system call). What the worker
        // sees: libc's call, which libcoexec answers when it comes first.
        cpu_set_t set;
        CPU_ZERO(&set);
        if (syscall(SYS_sched_getaffinity, 0, sizeof set, &set) > 0 && CPU_COUNT(&set) == 1)
            pinned.fetch_add(1, std::memory_order_relaxed);
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_EQUAL(&set, &process))
            see_process.fetch_add(1, std::memory_order_relaxed);
    });
    const char* kind = attached > 0 && unattached == 0   ? "coexec"
                       : attached == 0 && unattached > 0 ? "plain"
                                                         : "mixed-or-none";
    std::printf("worker_identity %s pinned=%s sees=%s\n", kind,
                pinned == attached + unattached ? "all" : "not-all",
                see_process == attached + unattached ? "process" : "not-all-process");
    return 0;
}

// The main thread, as TBB's external thread: whether it is a coexec thread
// before any algorithm, while it runs its share of a parallel_for and of a
// task_group's wait, and which mask it shows afterwards.
int scenario_master_identity() {
    using self_fn = void* (*)();
    auto nosv_self = reinterpret_cast<self_fn>(dlsym(RTLD_DEFAULT, "nosv_self"));
    auto is_task = [&] { return nosv_self != nullptr && nosv_self() != nullptr; };
    cpu_set_t process;
    CPU_ZERO(&process);
    sched_getaffinity(0, sizeof process, &process);
    const bool before = is_task();
    // Items the main thread ran, and how many of them as a coexec task.
    std::atomic<int> ran{0}, as_task{0};
    auto item = [&] {
        spin_for(std::chrono::microseconds(200));
        if (!pthread_equal(pthread_self(), main_thread)) return;
        ran.fetch_add(1, std::memory_order_relaxed);
        if (is_task()) as_task.fetch_add(1, std::memory_order_relaxed);
    };
    auto verdict = [&] {
        const int n = ran.exchange(0), tasks = as_task.exchange(0);
        return n == 0 ? "none" : tasks == n ? "task" : tasks == 0 ? "plain" : "mixed";
    };
    oneapi::tbb::parallel_for(0, 200, [&](int) { item(); });
    const char* in_for = verdict();
    // In an arena of one slot, which no worker joins: a worker could
    // otherwise take every item before the main thread gets to its wait.
    oneapi::tbb::task_arena alone(1);
    alone.execute([&] {
        oneapi::tbb::task_group group;
        for (int i = 0; i < 100; ++i)
            group.run(item);
        group.wait();
    });
    const char* in_wait = verdict();
    cpu_set_t after;
    CPU_ZERO(&after);
    sched_getaffinity(0, sizeof after, &after);
    std::printf("master_identity before=%s for=%s wait=%s mask=%s\n", before ? "task" : "plain",
                in_for, in_wait, CPU_EQUAL(&after, &process) ? "process" : "other");
    return 0;
}

// Peak number of worker threads running at once when TBB asks for 8.
int scenario_worker_peak() {
    oneapi::tbb::global_control control(oneapi::tbb::global_control::max_allowed_parallelism, 9);
    oneapi::tbb::task_arena arena(9);
    ConcurrencyMeter meter;
    arena.execute([&] {
        oneapi::tbb::parallel_for(0, 400, [&](int) {
            const bool worker = !pthread_equal(pthread_self(), main_thread);
            if (worker) meter.enter();
            spin_for(std::chrono::microseconds(500));
            if (worker)
                meter.leave();
            else
                wait_for_a_worker([&] { return meter.peak() > 0; });
        });
    });
    std::printf("worker_peak %d\n", meter.peak());
    return 0;
}

// A barrier for more threads than there are CPUs, inside TBB tasks. Waiters
// yield, then sleep: under coexec both must release the CPU, or the threads
// that still have to arrive never get one.
int scenario_oversubscribed_barrier() {
    const int parties = 2 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    oneapi::tbb::global_control control(oneapi::tbb::global_control::max_allowed_parallelism,
                                        static_cast<size_t>(parties));
    oneapi::tbb::task_arena arena(parties);
    std::atomic<int> arrived{0};
    arena.execute([&] {
        oneapi::tbb::parallel_for(
            oneapi::tbb::blocked_range<int>(0, parties, 1),
            [&](const auto&) {
                arrived.fetch_add(1, std::memory_order_acq_rel);
                for (int spins = 0; arrived.load(std::memory_order_acquire) < parties; ++spins) {
                    if (spins < 100)
                        std::this_thread::yield();
                    else
                        std::this_thread::sleep_for(std::chrono::microseconds(50));
                }
            },
            oneapi::tbb::simple_partitioner());
    });
    std::printf("oversubscribed_barrier arrived=%d\n", arrived.load());
    return 0;
}

// Keeps workers busy until stdin closes, after printing "busy": lets a test
// look at the process from outside (coexec top).
int scenario_hold() {
    std::atomic<bool> stop{false};
    std::atomic<int> running{0};
    std::thread watcher([&] {
        char buffer[64];
        while (read(STDIN_FILENO, buffer, sizeof buffer) > 0) {
        }
        stop.store(true, std::memory_order_release);
    });
    oneapi::tbb::task_group group;
    const int workers = static_cast<int>(std::thread::hardware_concurrency());
    for (int i = 0; i < workers; ++i)
        group.run([&] {
            running.fetch_add(1, std::memory_order_relaxed);
            while (!stop.load(std::memory_order_acquire))
                spin_for(std::chrono::microseconds(200));
        });
    while (running.load(std::memory_order_relaxed) == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::printf("busy\n");
    std::fflush(stdout);
    // Main stays out of the work so that only workers run it.
    watcher.join();
    group.wait();
    std::printf("hold done\n");
    return 0;
}

const std::map<std::string, int (*)()>& scenarios() {
    static const std::map<std::string, int (*)()> table = {
        {"parallel_for", scenario_parallel_for},
        {"parallel_reduce", scenario_parallel_reduce},
        {"task_group", scenario_task_group},
        {"flow_graph", scenario_flow_graph},
        {"nested_arenas", scenario_nested_arenas},
        {"limited_arena", scenario_limited_arena},
        {"global_control", scenario_global_control},
        {"exit_busy", scenario_exit_busy},
        {"finalize", scenario_finalize},
        {"worker_identity", scenario_worker_identity},
        {"master_identity", scenario_master_identity},
        {"worker_peak", scenario_worker_peak},
        {"hold", scenario_hold},
        {"oversubscribed_barrier", scenario_oversubscribed_barrier},
    };
    return table;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2 || scenarios().count(argv[1]) == 0) {
        std::fprintf(stderr, "usage: %s SCENARIO\nscenarios:", argv[0]);
        for (const auto& [name, run] : scenarios())
            std::fprintf(stderr, " %s", name.c_str());
        std::fprintf(stderr, "\n");
        return 2;
    }
    return scenarios().at(argv[1])();
}
