// Workloads run by forked children in the multi-process tests.
#pragma once

#include <nosv.h>

#include <atomic>
#include <chrono>
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
        int cpu = sched_getcpu();
        if (cpu < 0 || cpu >= 256) return;
        if (cpu != nosv_get_current_system_cpu()) wrong_cpu++;
        if (on_cpu[cpu].fetch_add(1) != 0) violations++;
        samples++;
        spin(d);
        on_cpu[cpu].fetch_sub(1);
    }
    static void spin(std::chrono::microseconds d) {
        auto end = std::chrono::steady_clock::now() + d;
        while (std::chrono::steady_clock::now() < end) {
        }
    }
};

} // namespace coexec::test
