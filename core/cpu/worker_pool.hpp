// The process's worker threads: created lazily, one spare kept in the
// shared pool to receive CPUs from other processes, reused between tasks,
// and joined when the runtime stops.
#pragma once

#include "core/runtime/membership.hpp"
#include "core/runtime/thread_context.hpp"
#include "core/runtime/thread_starts.hpp"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace coexec::core {

class WorkerPool {
  public:
    // A worker runs `main` on its own thread (launched by `starts`), from
    // its start to its finish(); no worker starts once `stopping` is set.
    WorkerPool(const Membership& member, const std::atomic<bool>& stopping, ThreadStarts& starts,
               std::function<void(ThreadContext&)> main);

    // Starts a worker, parked in the pool; false when no thread slot is left
    // (said once on stderr when `warn`) or the runtime stops.
    bool spawn(bool warn = true);
    // Keeps one pool worker available to receive CPUs from other processes.
    void ensure_receiver();
    // A worker of this process whose slot is `slot`, or null.
    ThreadContext* worker_at(int32_t slot) const;

    // A worker that gave its CPU away parks in the pool again.
    void return_to_pool(ThreadContext& self);
    // The worker's last act: frees its slot (and any CPU it still holds).
    void finish(ThreadContext& self);
    // Wakes every worker and joins it (the runtime is stopping).
    void stop_all();

    // A worker's task blocks (it leaves its CPU) or runs again: only the
    // unblocked workers count against the one-per-CPU limit of spawning.
    void blocked(const ThreadContext& self);
    void unblocked(const ThreadContext& self);
    // Whether some worker's task is not blocked (it will run queued work).
    bool any_unblocked() const { return unblocked_.load(std::memory_order_relaxed) > 0; }

  private:
    scheduler::SharedScheduler& sched() const { return member_.scheduler(); }

    const Membership& member_;
    const std::atomic<bool>& stopping_;
    ThreadStarts& starts_;
    const std::function<void(ThreadContext&)> main_;
    std::mutex mutex_; // guards workers_
    std::vector<std::unique_ptr<ThreadContext>> workers_;
    std::atomic<int> unblocked_{0};
    // Slot -> context, for this process's workers. Written under the
    // segment lock before the slot can be granted, read by the hand-over
    // that took the slot from the pool (under the same lock).
    std::vector<ThreadContext*> by_slot_;
};

} // namespace coexec::core
