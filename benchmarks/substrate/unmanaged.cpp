// coexec-bench-unmanaged: coexec threads next to threads coexec does not
// manage. A worker process runs CPU-bound work on every CPU, as coexec tasks
// (coexec) or as plain threads (native, the baseline), while N unmanaged
// threads spin (busy) or poll with usleep(500) (poll), in another process
// or in the worker's own (--where). For each N it prints how much work the
// workers did and how much CPU time each side got, and the ratio of the
// coexec workers' work to the native ones': the kernel shares the CPUs
// among the runnable threads, and coexec must neither lose that share
// (starve) nor take the unmanaged threads' (the reverse).
//
// One row per N: modes alternate per repeat, in a rotating order; the
// medians of the repeats and their min-max are printed. Every thread is
// created before the measured window starts. The CPU shares are of the
// processes' whole CPU time (creation included) over the window.
#include "nosv_util.hpp"
#include "stats.hpp"

#include <CLI/CLI.hpp>
#include <nosv.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using coexec::bench::now_ns;

enum class Mode { Native, Coexec };

struct Options {
    std::vector<int> counts{1, 2, 4, 16, 64, 256, 512};
    std::string style = "busy";
    std::string where = "other";
    double seconds = 1.0;
    int repeats = 3;
};

// Written by the children, read by the parent after waitpid.
struct Shared {
    std::atomic<uint64_t> chunks;        // work units the workers finished
    std::atomic<uint64_t> polls;         // loops of the unmanaged threads
    std::atomic<uint64_t> worker_cpu_ns; // CPU time of the workers' process
    std::atomic<uint64_t> other_cpu_ns;  // of the unmanaged threads' process
    std::atomic<int> failed;
};

Shared* g_shared = nullptr;
std::atomic<int> g_completed{0};
uint64_t g_start_ns = 0; // every thread starts counting then, once all exist
uint64_t g_deadline_ns = 0;

void sleep_until_start() {
    const timespec at{time_t(g_start_ns / 1'000'000'000ULL), long(g_start_ns % 1'000'000'000ULL)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) == EINTR) {
    }
}

// About 20 us of arithmetic that the compiler cannot drop.
void chunk() {
    static thread_local uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 20000; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    asm volatile("" : : "r"(x));
}

uint64_t process_cpu_ns() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return uint64_t(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1'000'000'000ULL +
           uint64_t(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1000ULL;
}

// The unmanaged threads: spin or poll until the deadline.
std::vector<std::thread> start_unmanaged(int n, bool busy) {
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i)
        threads.emplace_back([busy] {
            sleep_until_start();
            uint64_t loops = 0;
            while (now_ns() < g_deadline_ns) {
                if (!busy) ::usleep(500);
                ++loops;
            }
            g_shared->polls.fetch_add(loops, std::memory_order_relaxed);
        });
    return threads;
}

void on_completed(nosv_task_t) {
    g_completed.fetch_add(1, std::memory_order_release);
    g_completed.notify_all();
}

void run_task(nosv_task_t) {
    sleep_until_start();
    uint64_t done = 0;
    while (now_ns() < g_deadline_ns) {
        chunk();
        ++done;
        nosv_schedpoint(NOSV_SCHEDPOINT_NONE); // where a runtime would have one
    }
    g_shared->chunks.fetch_add(done, std::memory_order_relaxed);
}

// The workers' process: one worker per CPU, until the deadline.
int worker_main(Mode mode, int unmanaged, bool busy) {
    const int cpus = int(std::thread::hardware_concurrency());
    std::vector<std::thread> others;
    if (mode == Mode::Native) {
        std::vector<std::thread> workers;
        for (int i = 0; i < cpus; ++i)
            workers.emplace_back([] { run_task(nullptr); });
        others = start_unmanaged(unmanaged, busy);
        for (auto& w : workers)
            w.join();
    } else {
        coexec::bench::check(nosv_init(), "nosv_init");
        nosv_task_type_t type;
        coexec::bench::check(nosv_type_init(&type, run_task, nullptr, on_completed, "work", nullptr,
                                            nullptr, NOSV_TYPE_INIT_NONE),
                             "nosv_type_init");
        std::vector<nosv_task_t> tasks(static_cast<size_t>(cpus));
        for (auto& t : tasks) {
            coexec::bench::check(nosv_create(&t, type, 0, NOSV_CREATE_NONE), "nosv_create");
            coexec::bench::check(nosv_submit(t, NOSV_SUBMIT_NONE), "nosv_submit");
        }
        others = start_unmanaged(unmanaged, busy);
        // The main thread, not attached, sleeps until the tasks are done:
        // the workers hold the CPUs for the whole window, with no hand-off.
        for (int n = 0; (n = g_completed.load(std::memory_order_acquire)) < cpus;)
            g_completed.wait(n, std::memory_order_acquire);
        for (auto& t : tasks)
            coexec::bench::check(nosv_destroy(t, NOSV_DESTROY_NONE), "nosv_destroy");
        nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE);
        coexec::bench::check(nosv_shutdown(), "nosv_shutdown");
    }
    for (auto& t : others)
        t.join();
    // The unmanaged threads' time is counted with the workers' here.
    g_shared->worker_cpu_ns.store(process_cpu_ns());
    return 0;
}

int unmanaged_main(int n, bool busy) {
    std::vector<std::thread> threads = start_unmanaged(n, busy);
    for (auto& t : threads)
        t.join();
    g_shared->other_cpu_ns.store(process_cpu_ns());
    return 0;
}

struct Point {
    double chunks_per_s = 0;
    double worker_share = 0; // of the machine's CPU time
    double other_share = 0;
};

Point run_point(const Options& o, Mode mode, int n) {
    std::memset(static_cast<void*>(g_shared), 0, sizeof(Shared));
    const bool busy = o.style == "busy", same = o.where == "same";
    // Both processes' threads start counting at once, after a moment to
    // create them all, and stop at the same deadline.
    g_start_ns = now_ns() + 300'000'000;
    g_deadline_ns = g_start_ns + uint64_t(o.seconds * 1e9);
    std::fflush(nullptr);
    pid_t worker = ::fork();
    if (worker == 0) ::_exit(worker_main(mode, same ? n : 0, busy));
    pid_t other = -1;
    if (!same) {
        other = ::fork();
        if (other == 0) ::_exit(unmanaged_main(n, busy));
    }
    int st = 0;
    ::waitpid(worker, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) g_shared->failed = 1;
    if (other > 0) ::waitpid(other, &st, 0);
    Point p;
    const double machine_ns = o.seconds * 1e9 * double(std::thread::hardware_concurrency());
    p.chunks_per_s = double(g_shared->chunks.load()) / o.seconds;
    p.worker_share = double(g_shared->worker_cpu_ns.load()) / machine_ns;
    p.other_share = double(g_shared->other_cpu_ns.load()) / machine_ns;
    return p;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    CLI::App app{"coexec threads next to N threads coexec does not manage (busy or polling), "
                 "against plain threads next to the same",
                 "coexec-bench-unmanaged"};
    app.add_option("-n,--counts", o.counts, "Numbers of unmanaged threads")
        ->check(CLI::Range(0, 4096));
    app.add_option("--style", o.style, "busy: they spin; poll: they loop on usleep(500)")
        ->check(CLI::IsMember({"busy", "poll"}))
        ->capture_default_str();
    app.add_option("--where", o.where,
                   "other: in another process; same: in the workers' process (their CPU time "
                   "is then counted with the workers')")
        ->check(CLI::IsMember({"other", "same"}))
        ->capture_default_str();
    app.add_option("-s,--seconds", o.seconds, "Seconds per run")
        ->check(CLI::Range(0.1, 60.0))
        ->capture_default_str();
    app.add_option("-r,--repeats", o.repeats, "Runs per mode and count")
        ->check(CLI::Range(1, 50))
        ->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    coexec::bench::use_segment("bench-unmanaged-" + std::to_string(::getpid()));
    void* mem =
        ::mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) coexec::bench::fail("mmap: " + std::string(std::strerror(errno)));
    g_shared = static_cast<Shared*>(mem);
    std::printf("unmanaged threads: %s, in the %s process; %d CPUs; %.1f s a run, %d repeats\n",
                o.style.c_str(), o.where == "same" ? "workers'" : "other",
                int(std::thread::hardware_concurrency()), o.seconds, o.repeats);
    std::printf("%6s  %-28s %-28s %-22s %-22s\n", "N", "coexec/native work (min-max)",
                "native chunks/s (min-max)", "coexec workers' share", "unmanaged share n|c");
    bool failed = false;
    for (int n : o.counts) {
        std::vector<double> ratio, native_rate, coexec_share, other_native, other_coexec;
        for (int r = 0; r < o.repeats; ++r) {
            Point pt[2];
            // Alternate which mode runs first.
            for (int k = 0; k < 2; ++k) {
                const Mode m = Mode((k + r) % 2);
                pt[int(m)] = run_point(o, m, n);
                failed |= g_shared->failed.load() != 0;
            }
            ratio.push_back(pt[1].chunks_per_s / std::max(pt[0].chunks_per_s, 1.0));
            native_rate.push_back(pt[0].chunks_per_s);
            coexec_share.push_back(pt[1].worker_share);
            other_native.push_back(pt[0].other_share);
            other_coexec.push_back(pt[1].other_share);
        }
        auto q = coexec::bench::summarize(ratio);
        auto nr = coexec::bench::summarize(native_rate);
        auto cs = coexec::bench::summarize(coexec_share);
        auto on = coexec::bench::summarize(other_native);
        auto oc = coexec::bench::summarize(other_coexec);
        std::printf("%6d  %.3f (%.3f-%.3f)          %9.0f (%.0f-%.0f)     %.3f (%.3f-%.3f)    "
                    "%.3f | %.3f\n",
                    n, q.median, q.min, q.max, nr.median, nr.min, nr.max, cs.median, cs.min, cs.max,
                    on.median, oc.median);
        std::fflush(stdout);
    }
    return failed ? 1 : 0;
}
