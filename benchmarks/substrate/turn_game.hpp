// The pieces shared by the ping-pong benchmarks whose players pass a turn
// counter in shared memory: the counter (also a process-shared futex), the
// pass count and player 0's clock.
#pragma once

#include "child_process.hpp"
#include "nosv_util.hpp"
#include "options.hpp"

#include <atomic>
#include <cstdint>

namespace coexec::bench {

// Lives in a SharedObject (processes) or plain memory (threads). Player `me`
// makes its k-th pass when `turn` equals 2k + me.
struct Court {
    std::atomic<uint32_t> turn{0}; // passes made so far by both players
    std::atomic<int> arrived{0};   // players ready so far
    std::atomic<int> wrong_cpu{0}; // passes made off the bound CPU (must stay 0)
    SampleBuffer samples;          // written by player 0 only
};

// The counter is a futex shared by two processes, so it must be a plain
// lock-free 32-bit word (lock-free atomics are address-free).
static_assert(std::atomic<uint32_t>::is_always_lock_free &&
              sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

// Sleeps while `word` still holds `value` (FUTEX_WAIT, process-shared, like
// the substrate's own futexes). May return spuriously.
void futex_wait_while(std::atomic<uint32_t>& word, uint32_t value);

// Wakes every thread sleeping on `word`, in any process.
void futex_wake_all(std::atomic<uint32_t>& word);

// Sleeps on the counter until it reaches `turn`.
void futex_await_turn(Court& court, uint32_t turn);

// Passes each player makes: one warm-up repeat plus `repeats`, each of
// `per_repeat` round trips, and a last pass that closes the final repeat.
inline int64_t pass_count(const Options& o, int64_t per_repeat) {
    return int64_t(o.repeats + 1) * per_repeat + 1;
}

// Player 0's clock: one sample every `per_repeat` round trips, skipping the
// first (warm-up) repeat. Between two passes of player 0 the turn goes to the
// other player and back: two hand-offs, so samples are ns per hand-off.
// With `locks`, each sample comes with the segment's lock acquisitions per
// hand-off in the same repeat.
class PassClock {
  public:
    PassClock(int64_t per_repeat, SampleBuffer& out, const LockCounter* locks = nullptr)
        : per_repeat_(per_repeat), out_(out), locks_(locks) {}
    // Call at player 0's k-th pass.
    void on_pass(int64_t k);

  private:
    int64_t per_repeat_;
    SampleBuffer& out_;
    const LockCounter* locks_;
    uint64_t mark_ = 0;
    uint64_t lock_mark_ = 0;
};

} // namespace coexec::bench
