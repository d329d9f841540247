// A task's life-cycle state and its banked submits, in one atomic word.
//
// nOS-V counts submits against pauses (its blocking count): a task may be
// submitted several times before it pauses, and each submit pays for one
// later nosv_pause(), which then returns at once. A submit that finds the
// task paused (or never run) makes it ready instead. Keeping the count in
// the same word as the state makes each decision one atomic step: a submit
// is either banked while the task is not paused, or it resumes the paused
// task, never lost in between.
#pragma once

#include <atomic>
#include <cstdint>

namespace coexec::core {

enum class TaskState : uint32_t {
    Created, // never submitted, or completed and not resubmitted
    // In the ready queue (or stashed as an IMMEDIATE successor), or a fresh
    // task whose body a worker took from there and runs: the worker does not
    // relabel it Running, since that would cost an atomic read-modify-write
    // per task, and a submit or a pause treats both states alike.
    Ready,
    Running, // bound to a thread that holds a CPU, after blocking once (or inline)
    Paused,  // waiting for nosv_submit
    Waiting, // in nosv_waitfor
    Blocked, // between coexec_block_enter and coexec_block_exit
    Ended,   // run and end callbacks done, events still pending
    // Its body returned after nosv_suspend (mode NONE or TIMEOUT_SUBMIT):
    // a submit resumes it, like a paused task but with no thread of its own.
    Suspended,
};

class TaskStatus {
  public:
    // What a submit did.
    enum class Submit {
        Readied, // Created or Paused -> Ready: the submitter makes it ready
        Banked,  // started and not paused: one more pause is paid for
        Refused, // ended with events pending: not complete yet
    };

    TaskState state() const { return state_of(word_.load(std::memory_order_acquire)); }
    uint32_t banked() const { return banked_of(word_.load(std::memory_order_acquire)); }

    // Sets `to` and drops any banked submit: a body that ended without
    // pausing again does not carry them into its next run (nOS-V resets its
    // blocking count there too).
    void reset(TaskState to) { word_.store(pack(to, 0), std::memory_order_release); }

    // `from` -> `to`, keeping the banked submits; false if not in `from`.
    bool transition(TaskState from, TaskState to) {
        uint64_t w = word_.load(std::memory_order_acquire);
        // A failed CAS reloads `w`: only a banked count that moved is
        // retried, a state that moved ends the attempt.
        while (state_of(w) == from)
            if (word_.compare_exchange_weak(w, pack(to, banked_of(w)), std::memory_order_acq_rel,
                                            std::memory_order_acquire))
                return true;
        return false;
    }

    // Whatever the state, -> `to`, keeping the banked submits. Only by the
    // task's own thread, while no other thread changes the state: others
    // only bank submits, which the CAS keeps.
    void relabel(TaskState to) {
        uint64_t w = word_.load(std::memory_order_relaxed);
        while (!word_.compare_exchange_weak(w, pack(to, banked_of(w)), std::memory_order_acq_rel,
                                            std::memory_order_relaxed)) {
        }
    }

    // A submit: resumes a paused or fresh task, or banks one pause.
    Submit submit() {
        uint64_t w = word_.load(std::memory_order_acquire);
        for (;;) {
            const TaskState s = state_of(w);
            // Nothing is banked in Created, Paused or Suspended.
            const bool resumes =
                s == TaskState::Created || s == TaskState::Paused || s == TaskState::Suspended;
            if (!resumes && (s == TaskState::Ended || banked_of(w) == UINT32_MAX))
                return Submit::Refused;
            const uint64_t next = resumes ? pack(TaskState::Ready, 0) : w + kOneBanked;
            // acq_rel: the submitter's writes before the submit reach the
            // task's thread, which acquires the word when it pays or parks.
            if (word_.compare_exchange_weak(w, next, std::memory_order_acq_rel,
                                            std::memory_order_acquire))
                return resumes ? Submit::Readied : Submit::Banked;
        }
    }

    // Pays one banked submit (the pause returns at once); false if none.
    bool pay() {
        uint64_t w = word_.load(std::memory_order_acquire);
        while (banked_of(w) > 0)
            if (word_.compare_exchange_weak(w, w - kOneBanked, std::memory_order_acq_rel,
                                            std::memory_order_acquire))
                return true;
        return false;
    }

    // By the task's own thread once it is off its CPU: Running -> Paused if
    // nothing is banked (a later submit resumes it); otherwise pays one
    // banked submit and -> Ready (the caller makes it ready), returning false.
    bool park() {
        uint64_t w = word_.load(std::memory_order_acquire);
        for (;;) {
            const uint32_t n = banked_of(w);
            const uint64_t next =
                n == 0 ? pack(TaskState::Paused, 0) : pack(TaskState::Ready, n - 1);
            if (word_.compare_exchange_weak(w, next, std::memory_order_acq_rel,
                                            std::memory_order_acquire))
                return n == 0;
        }
    }

    // By the thread that ran the body of a task that suspends: -> Suspended
    // if nothing is banked (a later submit resumes it); otherwise pays one
    // banked submit and -> Ready (the caller makes it ready), returning false.
    bool suspend() {
        uint64_t w = word_.load(std::memory_order_acquire);
        for (;;) {
            const uint32_t n = banked_of(w);
            const uint64_t next =
                n == 0 ? pack(TaskState::Suspended, 0) : pack(TaskState::Ready, n - 1);
            if (word_.compare_exchange_weak(w, next, std::memory_order_acq_rel,
                                            std::memory_order_acquire))
                return n == 0;
        }
    }

  private:
    static constexpr uint64_t kOneBanked = uint64_t(1) << 32;
    static constexpr uint64_t pack(TaskState s, uint32_t banked) {
        return uint64_t(banked) << 32 | uint64_t(s);
    }
    static constexpr TaskState state_of(uint64_t w) { return TaskState(uint32_t(w)); }
    static constexpr uint32_t banked_of(uint64_t w) { return uint32_t(w >> 32); }

    // Low half: the TaskState; high half: the banked submits.
    std::atomic<uint64_t> word_{pack(TaskState::Created, 0)};
};

// A task's nosv_waitfor and the NOSV_SUBMIT_DEADLINE_WAKE submits that end
// it early agree through one word: no wake pending, a wake pending, or the
// thread slot of the task asleep in waitfor. As in nOS-V, a wake that comes
// while the task is not asleep (it has not run yet, or runs) is kept: its
// next waitfor returns at once. One wake ends one sleep; more wakes during
// the same sleep change nothing.
class DeadlineWake {
  public:
    static constexpr int32_t kNoSleeper = -1;

    // A DEADLINE_WAKE. Returns the slot of the thread to wake (the task is
    // asleep), or kNoSleeper (the wake is kept for its next waitfor).
    int32_t wake() {
        // acq_rel: the waker's writes reach the sleeper, which acquires the
        // word when it sees the wake.
        const int32_t before = word_.exchange(kPending, std::memory_order_acq_rel);
        return before >= 0 ? before : kNoSleeper;
    }
    // By the task's thread before it sleeps on `slot`: true if it may sleep;
    // false if a wake was pending (consumed now: the waitfor returns).
    bool sleep(int32_t slot) {
        int32_t none = kNone;
        if (word_.compare_exchange_strong(none, slot, std::memory_order_acq_rel)) return true;
        clear();
        return false;
    }
    // By the sleeper: whether a wake came.
    bool woken() const { return word_.load(std::memory_order_acquire) == kPending; }
    // By the sleeper once its deadline passed: true if the deadline ended
    // the sleep, false if a wake came first. The word is clear either way.
    bool expire(int32_t slot) {
        if (word_.compare_exchange_strong(slot, kNone, std::memory_order_acq_rel)) return true;
        clear();
        return false;
    }
    // Drops a pending wake (after a woken sleep, and when a body ends: a
    // wake no waitfor used does not reach the task's next run).
    void clear() { word_.store(kNone, std::memory_order_release); }

  private:
    static constexpr int32_t kNone = -1;    // no wake pending, not asleep
    static constexpr int32_t kPending = -2; // a wake no waitfor used yet
    std::atomic<int32_t> word_{kNone};      // or the sleeper's thread slot (>= 0)
};

} // namespace coexec::core
