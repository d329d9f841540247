// Cross-process hand-off. Two processes (each nosv_init after fork) attach one
// thread each, strictly bound to the same CPU, and pass a turn counter kept in
// a shared anonymous mapping. Since both threads may only run on that one
// CPU, every pass needs the substrate to move the CPU to the other process.
// Player `me` makes its k-th pass when the counter equals 2k + me.
//
// Two ways to wait for the turn, both with the public API only:
// - pause: the player pauses; a plain (non-coexec) watcher thread of its
//   process sleeps on the counter (a shared futex) and submits the player's
//   task when its turn comes. The CPU leaves the process at once because the
//   pausing process has nothing else to run there. Measures: counter store +
//   futex wake of the other process's watcher + its nosv_submit + the grant
//   of the CPU to the other process's paused thread.
// - yield: the player spins on nosv_yield(). A yield switches to another
//   process only once the CPU's quantum is spent, so this measures the
//   round-robin period (the quantum, when the switch itself is faster); the
//   players' segment uses --quantum-ns.
#include "benchmarks.hpp"
#include "child_process.hpp"
#include "nosv_util.hpp"
#include "turn_game.hpp"

#include <coexec/ext.h>
#include <nosv/affinity.h>

#include <thread>

namespace coexec::bench {
namespace {

// The non-coexec thread that resumes the paused player `me` on each turn.
void watch(Court& court, nosv_task_t player, int me, int64_t passes) {
    for (int64_t k = 0; k < passes; ++k) {
        futex_await_turn(court, uint32_t(2 * k + me));
        check(nosv_submit(player, NOSV_SUBMIT_NONE), "nosv_submit (watcher)");
    }
}

// One player process: joins its segment, attaches strictly to the shared CPU
// and passes the turn `passes` times.
class Player {
  public:
    Player(const Options& options, Court& court, int me, bool pause_mode)
        : options_(options), court_(court), me_(me), pause_mode_(pause_mode),
          passes_(pass_count(options, options.round_trips)) {}

    int run() {
        use_segment(options_.segment + (pause_mode_ ? "-xpause" : "-xyield"),
                    pause_mode_ ? ""
                                : "scheduler.quantum_ns=" + std::to_string(options_.quantum_ns));
        Runtime runtime;
        cpu_ = strict_cpu(options_);
        nosv_affinity_t strict =
            nosv_affinity_get(uint32_t(cpu_), NOSV_AFFINITY_LEVEL_CPU, NOSV_AFFINITY_TYPE_STRICT);
        Attached attached(pause_mode_ ? "bench-xpause" : "bench-xyield", &strict);
        wait_for_partner();
        std::thread watcher;
        if (pause_mode_)
            watcher = std::thread(watch, std::ref(court_), attached.task(), me_, passes_);
        PassClock clock(options_.round_trips, court_.samples);
        for (int64_t k = 0; k < passes_; ++k) {
            const uint32_t turn = uint32_t(2 * k + me_);
            await_turn(turn);
            if (me_ == 0) clock.on_pass(k);
            pass(turn);
        }
        if (watcher.joinable()) join_blocking(watcher);
        return 0;
    }

  private:
    void wait_for_partner() {
        court_.arrived.fetch_add(1, std::memory_order_acq_rel);
        while (court_.arrived.load(std::memory_order_acquire) < 2)
            check(nosv_yield(NOSV_YIELD_NONE), "nosv_yield");
    }

    void await_turn(uint32_t turn) {
        if (pause_mode_) {
            check(nosv_pause(NOSV_PAUSE_NONE), "nosv_pause");
            if (court_.turn.load(std::memory_order_acquire) != turn)
                fail("cross-process: resumed out of turn");
        } else {
            // Acquire pairs with the other player's release store of the counter.
            while (court_.turn.load(std::memory_order_acquire) != turn)
                check(nosv_yield(NOSV_YIELD_NONE), "nosv_yield");
        }
        if (nosv_get_current_system_cpu() != cpu_)
            court_.wrong_cpu.fetch_add(1, std::memory_order_relaxed);
    }

    void pass(uint32_t turn) {
        court_.turn.store(turn + 1, std::memory_order_release);
        if (pause_mode_) futex_wake_all(court_.turn);
    }

    // A join blocks in the kernel: give the CPU back meanwhile.
    static void join_blocking(std::thread& thread) {
        check(coexec_block_enter(), "coexec_block_enter");
        thread.join();
        check(coexec_block_exit(), "coexec_block_exit");
    }

    const Options& options_;
    Court& court_;
    const int me_;
    const bool pause_mode_;
    const int64_t passes_;
    int cpu_ = -1;
};

Outcome measure_pair(const Options& options, bool pause_mode) {
    SharedObject<Court> court;
    ChildGroup players;
    for (int me = 0; me < 2; ++me)
        players.spawn([&, me] { return Player(options, *court, me, pause_mode).run(); });
    Outcome outcome;
    outcome.error = players.wait_all(std::chrono::seconds(options.timeout_s));
    if (outcome.error.empty() && court->wrong_cpu.load(std::memory_order_relaxed) != 0)
        outcome.error = "strictly bound threads ran off their CPU";
    if (outcome.error.empty()) outcome.samples = court->samples.samples();
    return outcome;
}

} // namespace

Outcome measure_cross_process_pause(const Options& options) {
    return measure_pair(options, true);
}

Outcome measure_cross_process_yield(const Options& options) {
    return measure_pair(options, false);
}

} // namespace coexec::bench
