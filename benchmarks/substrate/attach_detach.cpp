// Attach+detach latency: a plain pthread (never a coexec thread before)
// attaches and detaches in a loop; each pair waits for a CPU grant, binds the
// thread, then gives the CPU back and restores the original affinity.
#include "benchmarks.hpp"
#include "child_process.hpp"
#include "nosv_util.hpp"

#include <thread>

namespace coexec::bench {
namespace {

// Returns nanoseconds per attach+detach pair over `n` pairs.
double one_run(int64_t n) {
    const uint64_t start = now_ns();
    for (int64_t i = 0; i < n; ++i) {
        nosv_task_t task;
        check(nosv_attach(&task, nullptr, "bench-attach", NOSV_ATTACH_NONE), "nosv_attach");
        check(nosv_detach(NOSV_DETACH_NONE), "nosv_detach");
    }
    return double(now_ns() - start) / double(n);
}

void body(const Options& options, SampleBuffer& out) {
    Runtime runtime;
    // A separate std::thread, so the measured thread is a fresh plain pthread.
    std::thread worker([&] {
        one_run(std::max<int64_t>(1, options.attaches / 10));
        const LockCounter locks(options.segment);
        for (int r = 0; r < options.repeats; ++r) {
            const uint64_t before = locks.read();
            const double ns = one_run(options.attaches);
            out.push(ns, double(locks.read() - before) / double(options.attaches));
        }
    });
    worker.join();
}

} // namespace

Outcome measure_attach_detach(const Options& options) {
    return run_in_child(options, body);
}

} // namespace coexec::bench
