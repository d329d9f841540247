// ThreadSlot::word: the futex a thread waits on, and how it is moved, so
// that a mover makes the futex_wake system call only for a thread that sleeps.
#pragma once

#include <atomic>
#include <cstdint>

namespace coexec::scheduler {

// The word counts moves (grants, wakes, evictions) in its upper 31 bits; its
// low bit says that the owning thread sleeps, or is about to sleep, in
// FUTEX_WAIT on it. Only the owning thread sets the bit (announce_sleep()),
// and only a mover that then wakes the thread clears it (move()), so a
// thread that waits by other means (it yields, it spins) costs its granter
// no system call.
//
// Why no wake is lost: both sides change the word by compare-exchange, so
// they are ordered. If the move comes first, the sleeper's compare-exchange
// fails and it looks at its grant again instead of sleeping. If the bit is
// set first, the mover sees it and wakes the thread; FUTEX_WAIT compares the
// word with the value that carries the bit, so a move made before the
// thread is queued in the kernel returns it at once.
class ThreadWord {
  public:
    static constexpr uint32_t kSleeper = 1;

    // Moves `word`. Release: what the mover wrote before (a grant, a task's
    // state) is visible to the thread once it sees the word change. Returns
    // whether the thread sleeps on it and must be woken (futex_wake).
    static bool move(std::atomic<uint32_t>& word) {
        uint32_t old = word.load(std::memory_order_relaxed);
        // +2 keeps the count apart from the bit; clearing the bit on an odd
        // value still changes the word.
        while (!word.compare_exchange_weak(old, (old + 2) & ~kSleeper, std::memory_order_release,
                                           std::memory_order_relaxed)) {
        }
        return (old & kSleeper) != 0;
    }

    // Moves `word` without waking its thread (it looks at the word when it
    // next wakes). The announcement stays, so the next move() wakes it.
    static void move_quietly(std::atomic<uint32_t>& word) {
        word.fetch_add(2, std::memory_order_release);
    }

    // By the owning thread: announces a sleep on `word`, which it last read
    // as `seen`, and sets `expected` to the value to pass to FUTEX_WAIT.
    // Returns false when the word has moved past `seen`: the caller looks
    // again instead of sleeping. Acquire on failure: the move's writes are
    // visible then.
    static bool announce_sleep(std::atomic<uint32_t>& word, uint32_t seen, uint32_t& expected) {
        expected = seen | kSleeper;
        if (seen & kSleeper) return true; // announced before; FUTEX_WAIT compares
        return word.compare_exchange_strong(seen, expected, std::memory_order_acquire,
                                            std::memory_order_acquire);
    }
};

} // namespace coexec::scheduler
