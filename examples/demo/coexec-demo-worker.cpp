// coexec-demo-worker: keeps the substrate busy with CPU-bound tasks for a
// while, then reports how many tasks it ran and the CPU time it used.
//
// Used by `make demo` (scripts/demo.sh) and the CLI tests: run two of these
// at once and `coexec top` shows them sharing the CPUs.
#include <nosv.h>
#include <nosv/hwinfo.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fmt/format.h>
#include <string>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace {

uint64_t clock_ns(clockid_t clock) {
    timespec ts{};
    clock_gettime(clock, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000ULL + uint64_t(ts.tv_nsec);
}

// Fixed amounts of arithmetic, sized once so that a task costs about the
// same CPU time whoever else runs on the machine.
class Spinner {
  public:
    // Measures this thread's CPU time (not wall time, so other load does
    // not skew it) for growing batches until the estimate is stable.
    explicit Spinner(double task_ms) {
        uint64_t iterations = 1 << 16, spent = 0;
        while ((spent = cpu_time_of(iterations)) < 20'000'000)
            iterations *= 2;
        per_task_ = uint64_t(double(iterations) * task_ms * 1e6 / double(spent)) + 1;
    }

    // One task's worth of arithmetic.
    void run() const { run_iterations(per_task_); }

  private:
    // A serial dependency chain the compiler cannot shorten.
    static uint64_t burn(uint64_t iterations) {
        uint64_t x = 0x9e3779b97f4a7c15ULL;
        for (uint64_t i = 0; i < iterations; ++i) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            x ^= x >> 29;
        }
        return x;
    }

    uint64_t cpu_time_of(uint64_t iterations) const {
        uint64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        run_iterations(iterations);
        return clock_ns(CLOCK_THREAD_CPUTIME_ID) - start;
    }
    void run_iterations(uint64_t n) const { sink_.fetch_add(burn(n), std::memory_order_relaxed); }

    uint64_t per_task_ = 0;
    // Results land here so the arithmetic is not optimised away; relaxed
    // because nobody reads it.
    mutable std::atomic<uint64_t> sink_{0};
};

void check(int rc, const char* what) {
    if (rc == NOSV_SUCCESS) return;
    std::fprintf(stderr, "coexec-demo-worker: %s: %s\n", what, nosv_get_error_string(rc));
    std::exit(1);
}

// Keeps `in_flight` tasks submitted until the deadline, then resumes the
// attached main task once the last one completes.
class TaskPump {
  public:
    TaskPump(const Spinner& spinner, uint64_t deadline_ns)
        : spinner_(spinner), deadline_(deadline_ns) {
        check(nosv_type_init(&type_, run, nullptr, completed, "demo", this, nullptr,
                             NOSV_TYPE_INIT_NONE),
              "nosv_type_init");
    }
    ~TaskPump() { nosv_type_destroy(type_, NOSV_TYPE_DESTROY_NONE); }
    TaskPump(const TaskPump&) = delete;
    TaskPump& operator=(const TaskPump&) = delete;

    // From the attached main task: submits `in_flight` tasks and pauses
    // until all work is done.
    void run_until_deadline(int in_flight) {
        main_ = nosv_self();
        // Count first: a task may complete before the next one is submitted.
        pending_.store(in_flight, std::memory_order_relaxed);
        for (int i = 0; i < in_flight; ++i)
            submit_one();
        check(nosv_pause(NOSV_PAUSE_NONE), "nosv_pause");
    }

    uint64_t tasks_run() const { return tasks_.load(std::memory_order_relaxed); }

  private:
    static TaskPump& of(nosv_task_t task) {
        return *static_cast<TaskPump*>(nosv_get_task_type_metadata(nosv_get_task_type(task)));
    }
    static void run(nosv_task_t task) {
        TaskPump& pump = of(task);
        pump.spinner_.run();
        pump.tasks_.fetch_add(1, std::memory_order_relaxed);
    }
    // Replaces the finished task while time remains; the last one to stop
    // wakes the main task. acq_rel on pending_ orders the workers' task
    // counts before the main task's report.
    static void completed(nosv_task_t task) {
        TaskPump& pump = of(task);
        nosv_destroy(task, NOSV_DESTROY_NONE);
        if (clock_ns(CLOCK_MONOTONIC) < pump.deadline_) {
            pump.submit_one();
            return;
        }
        if (pump.pending_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            nosv_submit(pump.main_, NOSV_SUBMIT_NONE);
    }
    void submit_one() {
        nosv_task_t task;
        check(nosv_create(&task, type_, 0, NOSV_CREATE_NONE), "nosv_create");
        check(nosv_submit(task, NOSV_SUBMIT_NONE), "nosv_submit");
    }

    const Spinner& spinner_;
    const uint64_t deadline_;
    nosv_task_type_t type_ = nullptr;
    nosv_task_t main_ = nullptr;
    std::atomic<int> pending_{0};
    std::atomic<uint64_t> tasks_{0};
};

double process_cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto sec = [](const timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) / 1e6; };
    return sec(ru.ru_utime) + sec(ru.ru_stime);
}

// A CLI11 validator: 1-15 characters (the kernel's limit) from [A-Za-z0-9._-].
std::string valid_process_name(const std::string& name) {
    bool ok = !name.empty() && name.size() <= 15;
    for (char c : name)
        ok =
            ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
    return ok ? std::string() : "must be 1-15 characters from A-Z a-z 0-9 . _ -";
}

} // namespace

int main(int argc, char** argv) {
    double seconds = 4.0, task_ms = 2.0;
    bool json = false;
    std::string name = "demo-worker";
    CLI::App app{"Runs CPU-bound coexec tasks for a while and reports what it did",
                 "coexec-demo-worker"};
    app.add_option("-s,--seconds", seconds, "How long to keep submitting tasks")
        ->check(CLI::Range(0.0, 3600.0))
        ->capture_default_str();
    app.add_option("--task-ms", task_ms, "CPU time of one task, in milliseconds")
        ->check(CLI::Range(0.01, 1000.0))
        ->capture_default_str();
    app.add_option("--process-name", name, "Process name shown by `coexec top`")
        ->check(valid_process_name)
        ->capture_default_str();
    app.add_flag("--json", json, "Print the report as one JSON line");
    CLI11_PARSE(app, argc, argv);

    // The segment records the process name when nosv_init() registers it.
    prctl(PR_SET_NAME, name.c_str(), 0, 0, 0);
    Spinner spinner(task_ms);
    check(nosv_init(), "nosv_init");
    const uint64_t start = clock_ns(CLOCK_MONOTONIC);
    const double cpu_before = process_cpu_seconds();
    uint64_t tasks = 0;
    {
        TaskPump pump(spinner, start + uint64_t(seconds * 1e9));
        nosv_task_t main_task;
        check(nosv_attach(&main_task, nullptr, "demo", NOSV_ATTACH_NONE), "nosv_attach");
        pump.run_until_deadline(2 * nosv_get_num_cpus());
        tasks = pump.tasks_run();
        check(nosv_detach(NOSV_DETACH_NONE), "nosv_detach");
    }
    const double wall = double(clock_ns(CLOCK_MONOTONIC) - start) / 1e9;
    const double cpu = process_cpu_seconds() - cpu_before;
    check(nosv_shutdown(), "nosv_shutdown");
    if (json)
        fmt::print(
            "{{\"pid\": {}, \"name\": \"{}\", \"tasks\": {}, \"task_ms\": {}, \"wall_s\": {:.3f}, "
            "\"cpu_s\": {:.3f}}}\n",
            getpid(), name, tasks, task_ms, wall, cpu);
    else
        fmt::print("{} (pid {}): {} tasks of {} ms in {:.2f} s, CPU time {:.2f} s\n", name,
                   getpid(), tasks, task_ms, wall, cpu);
    return 0;
}
