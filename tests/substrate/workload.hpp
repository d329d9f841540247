// Workloads run by forked children in the multi-process tests.
#pragma once

#include <nosv.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <pthread.h>
#include <sched.h>

namespace coexec::test {

// Per-CPU occupancy, shared between processes: a task increments its CPU's
// slot while it computes. Two tasks on one CPU at once is a violation of
// "at most one running coexec thread per CPU".
struct Occupancy {
    std::atomic<int> on_cpu[256];
    std::atomic<long> violations;
    std::atomic<long> wrong_cpu; // ran somewhere other than its granted CPU
    std::atomic<long> samples;

    void compute(std::chrono::microseconds d) {
        // coexec's preemption signal waits until the slot is given back: a
        // thread preempted inside this section waits in the handler for a
        // CPU, not running, while its slot would still claim the old CPU
        // (a false violation once a loaded machine delays a holder past its
        // quantum plus scheduler.preempt_after_ns).
        sigset_t preempt, old;
        sigemptyset(&preempt);
        sigaddset(&preempt, SIGURG);
        pthread_sigmask(SIG_BLOCK, &preempt, &old);
        int cpu = sched_getcpu();
        if (cpu >= 0 && cpu < 256) {
            if (cpu != nosv_get_current_system_cpu()) wrong_cpu++;
            if (on_cpu[cpu].fetch_add(1) != 0) violations++;
            samples++;
            spin(d);
            on_cpu[cpu].fetch_sub(1);
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }
    static void spin(std::chrono::microseconds d) {
        auto end = std::chrono::steady_clock::now() + d;
        while (std::chrono::steady_clock::now() < end) {
        }
    }
};

} // namespace coexec::test
