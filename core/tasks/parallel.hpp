// A task's parallel executions (NOSV_CREATE_PARALLEL, nosv_set_task_degree).
//
// As in nOS-V 4.1, a parallel task of degree N runs its body N times, maybe
// at once on several CPUs; each execution has an id in [0, N). The task is
// queued once: each pop hands out one execution and leaves it at the head
// while executions remain (ReadyQueue). Completion is counted in the task's
// events: the queue holds one count while executions remain, and each
// execution handed out holds one; the last pop passes the queue's count to
// its execution. nosv_cancel negates the degree (nOS-V's encoding): the
// executions still queued are withdrawn, and one popped but not started
// yet skips its body, so no body starts once a cancel returned.
#pragma once

#include <atomic>
#include <cstdint>

namespace coexec::core {

class ParallelState {
  public:
    // ---- set before submit, by the task's owner ----------------------
    void make_parallel() { flagged_ = true; }
    bool flagged() const { return flagged_; }
    // nosv_set_task_degree: only for a flagged task and degree > 0 (nOS-V
    // asserts both); false, and nothing changes, otherwise.
    bool set_degree(int32_t degree) {
        if (!flagged_ || degree <= 0) return false;
        degree_.store(degree, std::memory_order_relaxed);
        return true;
    }
    // Negative once cancelled (until the next submit re-arms it).
    int32_t degree() const { return degree_.load(std::memory_order_relaxed); }
    // Whether a submit now would run it in parallel (nOS-V's test: a degree
    // other than 1, cancelled or not).
    bool multi() const {
        const int32_t d = degree();
        return flagged_ && (d > 1 || d < -1);
    }

    // ---- at submit, before the task is queued ------------------------
    // Re-arms a cancelled degree and decides how this run executes: in
    // parallel only for a flagged task of degree > 1 (nOS-V treats degree 1
    // as an ordinary task). Returns whether it runs in parallel.
    bool arm() {
        int32_t d = degree_.load(std::memory_order_relaxed);
        if (d < 0) degree_.store(d = -d, std::memory_order_relaxed);
        active_ = flagged_ && d > 1;
        started_.store(0, std::memory_order_relaxed);
        return active_;
    }
    // Whether the current run executes in parallel. Written by the submitter
    // before the task is queued; the queue's publication orders it for the
    // workers that pop it.
    bool active() const { return active_; }

    // ---- under the ready queue's lock ---------------------------------
    uint32_t queued() const { return queued_; }
    void set_queued(uint32_t n) { queued_ = n; }

    // ---- by the running executions -------------------------------------
    // nosv_cancel: false if already cancelled.
    bool cancel() {
        int32_t d = degree_.load(std::memory_order_relaxed);
        // seq_cst pairs with start(): a start after the cancel sees it.
        while (d > 0)
            if (degree_.compare_exchange_weak(d, -d, std::memory_order_seq_cst,
                                              std::memory_order_relaxed))
                return true;
        return false;
    }
    bool cancelled() const { return degree_.load(std::memory_order_seq_cst) < 0; }
    // An execution begins: its id, or -1 when the task was cancelled (the
    // body is skipped). Ids are dense over the bodies that run.
    int64_t start() {
        if (cancelled()) return -1;
        return started_.fetch_add(1, std::memory_order_relaxed);
    }

  private:
    bool flagged_ = false;
    bool active_ = false;
    std::atomic<int32_t> degree_{1};
    uint32_t queued_ = 0;              // executions still in the ready queue
    std::atomic<uint32_t> started_{0}; // execution ids handed to bodies
};

} // namespace coexec::core
