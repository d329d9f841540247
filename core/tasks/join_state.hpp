// What a joinable task (NOSV_CREATE_JOINABLE) carries for nosv_join and
// nosv_wait: how many of its runs were submitted and how many completed,
// who waits for the next completion, and the result of its last run.
#pragma once

#include <atomic>
#include <cstdint>

namespace coexec::core {

class JoinState {
  public:
    // Who waits, as stored in the word: nobody; a coexec thread that left
    // its CPU (woken through its thread slot `s`, stored as s + 1); or a
    // thread outside coexec, which sleeps on a condition variable (stored
    // as kThreadWaiter | a number of its own, so that two such joiners of
    // one task are told apart).
    static constexpr uint32_t kNobody = 0;
    static constexpr uint32_t kThreadWaiter = uint32_t(1) << 31;
    static constexpr uint32_t slot_waiter(int32_t slot) { return uint32_t(slot) + 1; }
    static constexpr int32_t slot_of(uint32_t waiter) { return int32_t(waiter - 1); }
    static constexpr bool is_thread(uint32_t waiter) { return waiter & kThreadWaiter; }

    // What claim() found.
    enum class Claim {
        Done,    // the run already completed: nothing to wait for
        Claimed, // the caller is now the waiter
        Busy,    // another joiner waits for the task
    };

    // By the submitter when a submit starts a new run (not when it resumes
    // a paused one): joiners from then on wait for this run.
    void begin_run() {
        result_ = nullptr;
        // Relaxed: a joiner learns of the submit from the program's own
        // ordering (it joins after the submit returned), and the task's run
        // is published to the worker by the ready queue.
        runs_.fetch_add(1, std::memory_order_relaxed);
    }
    uint32_t runs() const { return runs_.load(std::memory_order_relaxed); }

    // Whether the run numbered `target` (a runs() value) has completed.
    bool done(uint32_t target) const {
        return reached(completions_of(word_.load(std::memory_order_acquire)), target);
    }
    // Every submitted run completed and nobody waits: the runtime no longer
    // refers to the task, which may be destroyed.
    bool settled() const {
        const uint64_t w = word_.load(std::memory_order_acquire);
        return waiter_of(w) == kNobody && completions_of(w) == runs();
    }
    // Without claiming: Busy if someone waits, else Done or (not done) Claimed.
    Claim peek(uint32_t target) const {
        const uint64_t w = word_.load(std::memory_order_acquire);
        if (waiter_of(w) != kNobody) return Claim::Busy;
        return reached(completions_of(w), target) ? Claim::Done : Claim::Claimed;
    }

    // Makes `waiter` the one woken by the next completion, unless run
    // `target` already completed. Claiming again is cheap: a completion of
    // an earlier run (a task resubmitted from its completed callback) takes
    // the waiter, and the joiner then claims again for its own run.
    Claim claim(uint32_t target, uint32_t waiter) {
        uint64_t w = word_.load(std::memory_order_acquire);
        for (;;) {
            if (reached(completions_of(w), target)) return Claim::Done;
            if (waiter_of(w) == waiter) return Claim::Claimed;
            if (waiter_of(w) != kNobody) return Claim::Busy;
            // acq_rel: pairs with complete(): whichever comes second sees
            // the other, so the completion either finds the waiter (and
            // wakes it) or the claim finds the completion.
            if (word_.compare_exchange_weak(w, pack(completions_of(w), waiter),
                                            std::memory_order_acq_rel, std::memory_order_acquire))
                return Claim::Claimed;
        }
    }

    // Withdraws `waiter` (a timeout). False when the completion came first
    // and took it: the run is done, and a wake-up is (or was) on its way.
    bool withdraw(uint32_t waiter) {
        uint64_t w = word_.load(std::memory_order_acquire);
        while (waiter_of(w) == waiter)
            if (word_.compare_exchange_weak(w, pack(completions_of(w), kNobody),
                                            std::memory_order_acq_rel, std::memory_order_acquire))
                return true;
        return false;
    }

    // Counts one completed run and takes the waiter, in one step. Returns
    // whom to wake. The caller must not touch the task afterwards: once the
    // count moved, a joiner may destroy it.
    uint32_t complete() {
        uint64_t w = word_.load(std::memory_order_relaxed);
        // acq_rel: releases the run's writes (its result, the completed
        // callback's) to the joiner, which acquires the word.
        while (!word_.compare_exchange_weak(w, pack(completions_of(w) + 1, kNobody),
                                            std::memory_order_acq_rel, std::memory_order_relaxed)) {
        }
        return waiter_of(w);
    }

    // The run's result (nosv_set_result). Written by the task's body,
    // read by the joiner after done(): the word orders the two.
    void set_result(void* r) { result_ = r; }
    void* result() const { return result_; }

  private:
    static constexpr uint64_t pack(uint32_t completions, uint32_t waiter) {
        return uint64_t(waiter) << 32 | completions;
    }
    static constexpr uint32_t completions_of(uint64_t w) { return uint32_t(w); }
    static constexpr uint32_t waiter_of(uint64_t w) { return uint32_t(w >> 32); }
    // Counts wrap: compare by distance.
    static constexpr bool reached(uint32_t count, uint32_t target) {
        return int32_t(count - target) >= 0;
    }

    // Low half: completed runs; high half: the waiter.
    std::atomic<uint64_t> word_{0};
    std::atomic<uint32_t> runs_{0};
    void* result_ = nullptr;
};

} // namespace coexec::core
