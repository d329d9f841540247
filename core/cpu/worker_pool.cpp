#include "core/cpu/worker_pool.hpp"

#include <cstdio>
#include <mutex>
#include <utility>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::WakeList;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
} // namespace

WorkerPool::WorkerPool(const Membership& member, const std::atomic<bool>& stopping,
                       ThreadStarts& starts, std::function<void(ThreadContext&)> main)
    : member_(member), stopping_(stopping), starts_(starts), main_(std::move(main)),
      by_slot_(size_t(kMaxThreads), nullptr) {}

bool WorkerPool::spawn(bool warn) {
    auto ctx = std::make_unique<ThreadContext>();
    ctx->worker = true;
    ThreadContext* raw = ctx.get();
    std::lock_guard guard(mutex_);
    if (stopping_.load(rlx)) return false;
    auto& sched = member_.scheduler();
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched, wakes);
        raw->slot = sched.procs().alloc_thread(member_.proc(), 0, "worker", ThreadState::Blocked);
        if (raw->slot != kNone) {
            by_slot_[size_t(raw->slot)] = raw;
            sched.procs().pool_push(raw->slot);
        }
    }
    wakes.flush(sched.segment());
    if (raw->slot == kNone) {
        static std::once_flag once;
        if (warn)
            std::call_once(once, [] {
                std::fprintf(stderr, "coexec: the shared segment has no free thread slot; "
                                     "work waits for running threads\n");
            });
        return false;
    }
    unblocked_.fetch_add(1, rlx);
    raw->thread = starts_.launch([this, raw] { main_(*raw); });
    workers_.push_back(std::move(ctx));
    return true;
}

void WorkerPool::ensure_receiver() {
    const ProcSlot& me = member_.segment().procs[member_.proc()];
    if (me.pool_size.load(rlx) > 0 || stopping_.load(rlx)) return;
    // At most one running worker per CPU plus one spare to receive CPUs.
    if (unblocked_.load(rlx) > member_.cpu_count()) return;
    spawn();
}

ThreadContext* WorkerPool::worker_at(int32_t slot) const {
    return by_slot_[size_t(slot)];
}

void WorkerPool::return_to_pool(ThreadContext& self) {
    auto& sched = member_.scheduler();
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched, wakes);
        if (!stopping_.load(rlx)) sched.procs().pool_push(self.slot);
    }
    wakes.flush(sched.segment());
}

void WorkerPool::finish(ThreadContext& self) {
    auto& sched = member_.scheduler();
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched, wakes);
        // Also a CPU this worker still holds idle: it stopped without
        // leaving it (IdlePolicy::hold() saw the runtime stop).
        sched.release_thread(self.slot, wakes);
        by_slot_[size_t(self.slot)] = nullptr;
    }
    wakes.flush(sched.segment());
    unblocked_.fetch_sub(1, rlx);
    this_thread_context() = nullptr;
}

void WorkerPool::stop_all() {
    std::vector<std::unique_ptr<ThreadContext>> workers;
    {
        std::lock_guard guard(mutex_);
        workers.swap(workers_);
    }
    for (auto& w : workers)
        sched().procs().wake_thread(w->slot);
    // A worker still inside a paused task is let go without a CPU (the
    // task was never resumed: the program's error) and finishes on its own.
    for (auto& w : workers)
        w->thread.join();
}

void WorkerPool::blocked(const ThreadContext& self) {
    if (self.worker) unblocked_.fetch_sub(1, rlx);
}

void WorkerPool::unblocked(const ThreadContext& self) {
    if (self.worker) unblocked_.fetch_add(1, rlx);
}

} // namespace coexec::core
