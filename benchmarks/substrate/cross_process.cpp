// Cross-process hand-off. Two processes (each nosv_init after fork) attach one
// thread each, strictly bound to the same CPU, and pass a turn counter kept in
// a shared anonymous mapping. Since both threads may only run on that one
// CPU, every pass needs the substrate to move the CPU to the other process.
// Player `me` makes its k-th pass when the counter equals 2k + me.
//
// Three ways to wait for the turn, all with the public API only:
// - relay: the player pauses; a plain (non-coexec) watcher thread of its
//   process sleeps on the counter (a shared futex) and submits the player's
//   task when its turn comes. The CPU leaves the process at once because the
//   pausing process has nothing else to run there. Measures: counter store +
//   futex wake of the other process's watcher + its nosv_submit + the grant
//   of the CPU to the other process's paused thread.
// - ready: the same, but after passing, the player waits (holding the CPU)
//   until the other watcher's nosv_submit has returned, and only then
//   pauses. Player 0 times from the other player's nosv_pause call to its own
//   return from nosv_pause: the substrate's hand-off alone, with the partner
//   already ready, comparable with a futex ping-pong.
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

enum class Wait { Relay, Ready, Yield };

// What the two player processes share besides the turn counter.
struct Table {
    Court court;
    std::atomic<uint32_t> submitted[2] = {}; // submits each watcher has returned from
    std::atomic<uint64_t> paused_at{0};      // now_ns() just before a ready-mode pause
};

// The non-coexec thread that resumes the paused player `me` on each turn.
void watch(Table& table, nosv_task_t player, int me, int64_t passes) {
    for (int64_t k = 0; k < passes; ++k) {
        futex_await_turn(table.court, uint32_t(2 * k + me));
        check(nosv_submit(player, NOSV_SUBMIT_NONE), "nosv_submit (watcher)");
        // Release: the other player reads it before pausing (ready mode).
        table.submitted[me].store(uint32_t(k + 1), std::memory_order_release);
    }
}

// Player 0's ready-mode clock: the mean pause-to-resume time of each repeat,
// skipping the first (warm-up) repeat and the first resume, which no pause
// of the other player precedes.
// Each sample comes with the segment's lock acquisitions per hand-off (two
// per round trip) in the same repeat.
class ResumeClock {
  public:
    ResumeClock(int64_t per_repeat, SampleBuffer& out, const LockCounter& locks)
        : per_repeat_(per_repeat), out_(out), locks_(locks) {}
    void on_resume(int64_t k, uint64_t paused_at) {
        if (k == per_repeat_) lock_mark_ = locks_.read();
        if (k <= per_repeat_) return;
        sum_ns_ += now_ns() - paused_at;
        if (k % per_repeat_ != 0) return;
        const uint64_t locks = locks_.read();
        out_.push(double(sum_ns_) / double(per_repeat_),
                  double(locks - lock_mark_) / double(2 * per_repeat_));
        sum_ns_ = 0;
        lock_mark_ = locks;
    }

  private:
    int64_t per_repeat_;
    SampleBuffer& out_;
    const LockCounter& locks_;
    uint64_t sum_ns_ = 0;
    uint64_t lock_mark_ = 0;
};

// One player process: joins its segment, attaches strictly to the shared CPU
// and passes the turn `passes` times.
class Player {
  public:
    Player(const Options& options, Table& table, int me, Wait wait)
        : options_(options), table_(table), court_(table.court), me_(me), wait_(wait),
          passes_(pass_count(options, options.round_trips)) {}

    int run() {
        const bool yield = wait_ == Wait::Yield;
        const std::string segment = options_.segment + (yield ? "-xyield" : "-xpause");
        use_segment(segment,
                    yield ? "scheduler.quantum_ns=" + std::to_string(options_.quantum_ns) : "");
        Runtime runtime;
        const LockCounter locks(segment);
        cpu_ = strict_cpu(options_);
        nosv_affinity_t strict =
            nosv_affinity_get(uint32_t(cpu_), NOSV_AFFINITY_LEVEL_CPU, NOSV_AFFINITY_TYPE_STRICT);
        Attached attached(yield ? "bench-xyield" : "bench-xpause", &strict);
        // The watcher starts before the players meet: a ready-mode player
        // holds the shared CPU until the other watcher has submitted, so
        // that watcher must not need the other player to run first.
        std::thread watcher;
        if (!yield) watcher = std::thread(watch, std::ref(table_), attached.task(), me_, passes_);
        wait_for_partner();
        PassClock pass_clock(options_.round_trips, court_.samples, &locks);
        ResumeClock resume_clock(options_.round_trips, court_.samples, locks);
        for (int64_t k = 0; k < passes_; ++k) {
            const uint32_t turn = uint32_t(2 * k + me_);
            await_turn(turn);
            if (me_ == 0) {
                if (wait_ == Wait::Ready)
                    resume_clock.on_resume(k, table_.paused_at.load(std::memory_order_acquire));
                else
                    pass_clock.on_pass(k);
            }
            pass(turn);
            if (wait_ == Wait::Ready) await_partner_ready(k);
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
        if (wait_ == Wait::Yield) {
            // Acquire pairs with the other player's release store of the counter.
            while (court_.turn.load(std::memory_order_acquire) != turn)
                check(nosv_yield(NOSV_YIELD_NONE), "nosv_yield");
        } else {
            check(nosv_pause(NOSV_PAUSE_NONE), "nosv_pause");
            if (court_.turn.load(std::memory_order_acquire) != turn)
                fail("cross-process: resumed out of turn");
        }
        if (nosv_get_current_system_cpu() != cpu_)
            court_.wrong_cpu.fetch_add(1, std::memory_order_relaxed);
    }

    void pass(uint32_t turn) {
        court_.turn.store(turn + 1, std::memory_order_release);
        if (wait_ != Wait::Yield) futex_wake_all(court_.turn);
    }

    // Ready mode, after the k-th pass: holds the CPU until the other player
    // is submitted for its next turn (if it has one), then stamps the clock
    // for the pause that follows. The other watcher runs on another CPU or,
    // on a one-CPU machine, when this spin yields the CPU to it.
    void await_partner_ready(int64_t k) {
        if (k + 1 >= passes_) return; // no pause follows the last pass
        const int other = 1 - me_;
        const int64_t next = me_ == 0 ? k : k + 1; // the other's next turn index
        // Acquire pairs with the watcher's release store after its submit.
        while (table_.submitted[other].load(std::memory_order_acquire) < uint32_t(next + 1))
            std::this_thread::yield();
        table_.paused_at.store(now_ns(), std::memory_order_release);
    }

    // A join blocks in the kernel: give the CPU back meanwhile.
    static void join_blocking(std::thread& thread) {
        check(coexec_block_enter(), "coexec_block_enter");
        thread.join();
        check(coexec_block_exit(), "coexec_block_exit");
    }

    const Options& options_;
    Table& table_;
    Court& court_;
    const int me_;
    const Wait wait_;
    const int64_t passes_;
    int cpu_ = -1;
};

Outcome measure_pair(const Options& options, Wait wait) {
    SharedObject<Table> table;
    ChildGroup players;
    for (int me = 0; me < 2; ++me)
        players.spawn([&, me] { return Player(options, *table, me, wait).run(); });
    Outcome outcome;
    outcome.error = players.wait_all(std::chrono::seconds(options.timeout_s));
    const Court& court = table->court;
    if (outcome.error.empty() && court.wrong_cpu.load(std::memory_order_relaxed) != 0)
        outcome.error = "strictly bound threads ran off their CPU";
    if (outcome.error.empty()) {
        outcome.samples = court.samples.samples();
        outcome.locks_per_op = court.samples.lock_samples();
    }
    return outcome;
}

} // namespace

Outcome measure_cross_process_pause(const Options& options) {
    return measure_pair(options, Wait::Relay);
}

Outcome measure_cross_process_ready(const Options& options) {
    return measure_pair(options, Wait::Ready);
}

Outcome measure_cross_process_yield(const Options& options) {
    return measure_pair(options, Wait::Yield);
}

} // namespace coexec::bench
