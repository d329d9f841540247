// Same-CPU hand-off: two tasks strictly bound to one CPU play ping-pong, each
// submitting the other and then pausing, so every step moves the CPU from one
// task's thread to the other's through pause/submit.
#include "benchmarks.hpp"
#include "child_process.hpp"
#include "nosv_util.hpp"

#include <nosv/affinity.h>

#include <atomic>

namespace coexec::bench {
namespace {

// One ping-pong run. Only one task runs at a time and pause/submit order the
// steps, so the plain fields are race-free; the counters are atomic anyway so
// that the run stays well-defined (and is reported) if strictness ever broke.
struct PingPong {
    nosv_task_t player[2] = {nullptr, nullptr};
    int cpu = -1;
    std::atomic<int64_t> steps{0};
    std::atomic<bool> done{false};
    std::atomic<int> finished{0};
    std::atomic<int> wrong_cpu{0};
    uint64_t start_ns = 0;
    uint64_t end_ns = 0;
    int64_t handoffs = 0;
    nosv_task_t waiter = nullptr;
};
PingPong g_game;

int index_of(nosv_task_t task) {
    return *static_cast<int*>(nosv_get_task_metadata(task));
}

// Counts a step; returns false (and records the end) after the last hand-off.
bool step() {
    const int64_t left = g_game.steps.fetch_sub(1, std::memory_order_relaxed);
    if (left == g_game.handoffs) g_game.start_ns = now_ns();
    if (left > 0) return true;
    g_game.end_ns = now_ns();
    return false;
}

void play(nosv_task_t self) {
    nosv_task_t other = g_game.player[1 - index_of(self)];
    for (;;) {
        if (nosv_get_current_system_cpu() != g_game.cpu)
            g_game.wrong_cpu.fetch_add(1, std::memory_order_relaxed);
        if (!step()) {
            // Release pairs with the acquire below: the other task ends after us.
            g_game.done.store(true, std::memory_order_release);
            check(nosv_submit(other, NOSV_SUBMIT_NONE), "nosv_submit (last)");
            return;
        }
        check(nosv_submit(other, NOSV_SUBMIT_NONE), "nosv_submit");
        check(nosv_pause(NOSV_PAUSE_NONE), "nosv_pause");
        if (g_game.done.load(std::memory_order_acquire)) return;
    }
}

void completed(nosv_task_t) {
    // acq_rel: the second completion sees everything the first task wrote.
    if (g_game.finished.fetch_add(1, std::memory_order_acq_rel) == 1)
        check(nosv_submit(g_game.waiter, NOSV_SUBMIT_NONE), "nosv_submit (wake main)");
}

// One game of `handoffs` hand-offs; returns nanoseconds per hand-off.
double one_game(nosv_task_type_t type, nosv_task_t self, int cpu, int64_t handoffs) {
    g_game.cpu = cpu;
    g_game.handoffs = handoffs;
    g_game.steps.store(handoffs, std::memory_order_relaxed);
    g_game.done.store(false, std::memory_order_relaxed);
    g_game.finished.store(0, std::memory_order_relaxed);
    g_game.waiter = self;
    nosv_affinity_t strict =
        nosv_affinity_get(uint32_t(cpu), NOSV_AFFINITY_LEVEL_CPU, NOSV_AFFINITY_TYPE_STRICT);
    for (int i = 0; i < 2; ++i) {
        check(nosv_create(&g_game.player[i], type, sizeof(int), NOSV_CREATE_NONE), "nosv_create");
        *static_cast<int*>(nosv_get_task_metadata(g_game.player[i])) = i;
        nosv_set_task_affinity(g_game.player[i], &strict);
    }
    check(nosv_submit(g_game.player[0], NOSV_SUBMIT_NONE), "nosv_submit (first)");
    check(nosv_pause(NOSV_PAUSE_NONE), "nosv_pause (main)");
    for (nosv_task_t t : g_game.player)
        check(nosv_destroy(t, NOSV_DESTROY_NONE), "nosv_destroy");
    if (int n = g_game.wrong_cpu.load(std::memory_order_relaxed))
        fail("handoff: strictly bound tasks ran " + std::to_string(n) + " steps off CPU " +
             std::to_string(cpu));
    // The steps counted from `handoffs` down to 0 span exactly `handoffs` hand-offs.
    return double(g_game.end_ns - g_game.start_ns) / double(handoffs);
}

void body(const Options& options, SampleBuffer& out) {
    Runtime runtime;
    const int cpu = strict_cpu(options);
    TaskType type(play, completed, "bench-pingpong");
    Attached main_thread("bench-main");
    one_game(type.get(), main_thread.task(), cpu, std::max<int64_t>(1, options.handoffs / 10));
    const LockCounter locks(options.segment);
    for (int r = 0; r < options.repeats; ++r) {
        const uint64_t before = locks.read();
        const double ns = one_game(type.get(), main_thread.task(), cpu, options.handoffs);
        out.push(ns, double(locks.read() - before) / double(options.handoffs));
    }
}

} // namespace

Outcome measure_same_cpu_handoff(const Options& options) {
    return run_in_child(options, body);
}

} // namespace coexec::bench
