#include "core/cpu/worker_pool.hpp"

#include "core/runtime/runtime.hpp"

#include <cstdio>
#include <mutex>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::WakeList;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
} // namespace

WorkerPool::WorkerPool(Runtime& rt) : rt_(rt), by_slot_(size_t(kMaxThreads), nullptr) {}

bool WorkerPool::spawn(bool warn) {
    auto ctx = std::make_unique<ThreadContext>();
    ctx->worker = true;
    ThreadContext* raw = ctx.get();
    std::lock_guard guard(mutex_);
    if (rt_.stopping_.load(rlx)) return false;
    auto& sched = rt_.sched();
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched, wakes);
        raw->slot = sched.procs().alloc_thread(rt_.proc(), 0, "worker", ThreadState::Blocked);
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
    raw->thread = rt_.thread_starts_.launch([this, raw] { rt_.worker_main(*raw); });
    workers_.push_back(std::move(ctx));
    return true;
}

void WorkerPool::ensure_receiver() {
    const ProcSlot& me = rt_.segment()->procs[rt_.proc()];
    if (me.pool_size.load(rlx) > 0 || rt_.stopping_.load(rlx)) return;
    // At most one running worker per CPU plus one spare to receive CPUs.
    if (unblocked_.load(rlx) > rt_.cpu_count()) return;
    spawn();
}

ThreadContext* WorkerPool::worker_at(int32_t slot) const {
    return by_slot_[size_t(slot)];
}

void WorkerPool::return_to_pool(ThreadContext& self) {
    auto& sched = rt_.sched();
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched, wakes);
        if (!rt_.stopping_.load(rlx)) sched.procs().pool_push(self.slot);
    }
    wakes.flush(sched.segment());
}

void WorkerPool::finish(ThreadContext& self) {
    rt_.ready_.return_batch(self);
    auto& sched = rt_.sched();
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
        rt_.sched().procs().wake_thread(w->slot);
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
