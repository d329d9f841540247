// coexec-trace-script: two processes doing a fixed script on the substrate,
// for the tests that run it under `coexec record` and check the trace.
//
//   order  A runs one "alpha" task, then B joins and runs one "beta" task,
//          then A leaves, then B leaves. Prints "A <pid>" and "B <pid>".
//   crash  A victim fills every CPU with endless "victim" tasks; the
//          survivor joins with "survivor" tasks, SIGKILLs the victim, and
//          keeps running until the CPUs have been its own for a while.
//          Prints "victim <pid>" and "survivor <pid>".
//   shares A (this process) runs an attached "openmp" thread busy for
//          240 ms, then 2 "alpha" tasks of 50 ms, and stays a member, idle. Then B (its child)
//          runs an attached "pocl" thread busy for 100 ms, and an attached
//          "tbb" thread busy until A dies (or 20 s), for `coexec top`'s
//          CPU time per runtime label.
//   native Without coexec: a child process and two threads of this one
//          spin for 300 ms of CPU time each. Prints "main <pid>" and "child <pid>".
#include <nosv.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "coexec-trace-script: %s\n", what);
    std::_Exit(3);
}

void check(int rc, const char* what) {
    if (rc != NOSV_SUCCESS) die(what);
}

// Busy for `d` of wall time, the way a compute kernel would be.
void spin_for(std::chrono::milliseconds d) {
    const auto until = Clock::now() + d;
    while (Clock::now() < until) {
    }
}

// Spins until the calling thread has run for `d` on a CPU, however long a
// loaded machine keeps it waiting: a sampler then sees it run for `d`.
void spin_cpu_for(std::chrono::milliseconds d) {
    const auto cpu_ns = [] {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    };
    const int64_t until = cpu_ns() + std::chrono::nanoseconds(d).count();
    while (cpu_ns() < until) {
    }
}

// A pipe used as a one-way signal between the two processes.
struct Signal {
    int fd[2];
    Signal() {
        if (pipe(fd) != 0) die("pipe");
    }
    void post() {
        char c = 1;
        if (write(fd[1], &c, 1) != 1) die("write");
    }
    void wait() {
        char c;
        if (read(fd[0], &c, 1) != 1) die("read");
    }
};

// Runs `count` tasks of type `label`, each busy for `each`, and returns
// once they have all completed.
void run_tasks(const char* label, int count, std::chrono::milliseconds each) {
    static std::atomic<int> left;
    static std::chrono::milliseconds duration;
    left = count;
    duration = each;
    nosv_task_type_t type;
    check(nosv_type_init(
              &type, [](nosv_task_t) { spin_for(duration); }, nullptr,
              [](nosv_task_t t) {
                  nosv_destroy(t, NOSV_DESTROY_NONE);
                  left.fetch_sub(1);
              },
              label, nullptr, nullptr, NOSV_TYPE_INIT_NONE),
          "nosv_type_init");
    for (int i = 0; i < count; ++i) {
        nosv_task_t t;
        check(nosv_create(&t, type, 0, NOSV_CREATE_NONE), "nosv_create");
        check(nosv_submit(t, NOSV_SUBMIT_NONE), "nosv_submit");
    }
    while (left.load() > 0)
        std::this_thread::sleep_for(1ms);
    check(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), "nosv_type_destroy");
}

int order() {
    Signal a_done, b_done, a_left;
    std::fflush(stdout);
    const pid_t b = fork();
    if (b < 0) die("fork");
    if (b == 0) {
        a_done.wait();
        check(nosv_init(), "nosv_init (B)");
        run_tasks("beta", 1, 40ms);
        b_done.post();
        a_left.wait();
        check(nosv_shutdown(), "nosv_shutdown (B)");
        std::_Exit(0);
    }
    std::printf("A %d\nB %d\n", int(getpid()), int(b));
    std::fflush(stdout);
    check(nosv_init(), "nosv_init (A)");
    run_tasks("alpha", 1, 40ms);
    a_done.post();
    b_done.wait();
    check(nosv_shutdown(), "nosv_shutdown (A)");
    a_left.post();
    int status = 0;
    if (waitpid(b, &status, 0) != b || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die("B failed");
    return 0;
}

int crash() {
    Signal victim_runs;
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    std::fflush(stdout);
    const pid_t victim = fork();
    if (victim < 0) die("fork");
    if (victim == 0) {
        check(nosv_init(), "nosv_init (victim)");
        static Signal* runs = &victim_runs;
        nosv_task_type_t type;
        check(nosv_type_init(
                  &type,
                  [](nosv_task_t) {
                      runs->post();
                      for (;;) // until killed; schedpoints let the scheduler share
                          nosv_schedpoint(NOSV_SCHEDPOINT_NONE), spin_for(1ms);
                  },
                  nullptr, nullptr, "victim", nullptr, nullptr, NOSV_TYPE_INIT_NONE),
              "nosv_type_init");
        for (long i = 0; i < cpus; ++i) {
            nosv_task_t t;
            check(nosv_create(&t, type, 0, NOSV_CREATE_NONE), "nosv_create");
            check(nosv_submit(t, NOSV_SUBMIT_NONE), "nosv_submit");
        }
        for (;;)
            pause();
    }
    std::printf("victim %d\nsurvivor %d\n", int(victim), int(getpid()));
    std::fflush(stdout);
    victim_runs.wait();
    std::this_thread::sleep_for(50ms);
    check(nosv_init(), "nosv_init (survivor)");
    std::thread killer([victim] {
        std::this_thread::sleep_for(100ms);
        kill(victim, SIGKILL);
        waitpid(victim, nullptr, 0);
    });
    // Work while the victim lives, and for a while after its death: its
    // CPUs come back within the reap interval.
    run_tasks("survivor", int(cpus) * 30, 10ms);
    killer.join();
    run_tasks("survivor", int(cpus) * 20, 10ms);
    check(nosv_shutdown(), "nosv_shutdown (survivor)");
    return 0;
}

// Busy for `d` in a thread of this process attached to coexec as `label`.
void attached_spin(const char* label, std::chrono::milliseconds d, pid_t while_parent = 0) {
    std::thread([&] {
        nosv_task_t task;
        check(nosv_attach(&task, nullptr, label, NOSV_ATTACH_NONE), "nosv_attach");
        const auto until = Clock::now() + d;
        while (Clock::now() < until && (while_parent == 0 || getppid() == while_parent)) {
        }
        check(nosv_detach(NOSV_DETACH_NONE), "nosv_detach");
    }).join();
}

int shares() {
    Signal a_done;
    std::fflush(stdout);
    const pid_t a = getpid();
    const pid_t b = fork();
    if (b < 0) die("fork");
    if (b == 0) {
        a_done.wait();
        check(nosv_init(), "nosv_init (B)");
        attached_spin("pocl", 100ms);
        attached_spin("tbb", 20s, a);
        check(nosv_shutdown(), "nosv_shutdown (B)");
        std::_Exit(0);
    }
    check(nosv_init(), "nosv_init (A)");
    attached_spin("openmp", 240ms);
    run_tasks("alpha", 2, 50ms);
    a_done.post();
    waitpid(b, nullptr, 0);
    check(nosv_shutdown(), "nosv_shutdown (A)");
    return 0;
}

int native() {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        spin_cpu_for(300ms);
        std::_Exit(0);
    }
    std::printf("main %d\nchild %d\n", int(getpid()), int(child));
    std::fflush(stdout);
    std::thread other([] { spin_cpu_for(300ms); });
    spin_cpu_for(300ms);
    other.join();
    waitpid(child, nullptr, 0);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::strcmp(argv[1], "order") == 0) return order();
    if (argc == 2 && std::strcmp(argv[1], "crash") == 0) return crash();
    if (argc == 2 && std::strcmp(argv[1], "shares") == 0) return shares();
    if (argc == 2 && std::strcmp(argv[1], "native") == 0) return native();
    std::fprintf(stderr, "usage: coexec-trace-script order|crash|shares|native\n");
    return 2;
}
