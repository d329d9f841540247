// Worker threads: created lazily, reused, and parked in the shared pool
// when they have nothing to do.
#include "runtime.hpp"

#include "shm/futex.hpp"

#include <cstring>
#include <sys/prctl.h>
#include <unistd.h>
#include <utility>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::WakeList;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
constexpr uint64_t kSleepSliceNs = 50'000'000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}
} // namespace

bool Runtime::spawn_worker() {
    auto ctx = std::make_unique<ThreadContext>();
    ctx->worker = true;
    ThreadContext* raw = ctx.get();
    std::lock_guard guard(workers_mutex_);
    if (stopping_.load(rlx)) return false;
    WakeList wakes;
    {
        auto lock = sched_->lock(wakes);
        raw->slot = sched_->alloc_thread(proc_, 0, "worker", ThreadState::Blocked);
        if (raw->slot != kNone) {
            by_slot_[size_t(raw->slot)] = raw;
            sched_->pool_push(raw->slot);
        }
    }
    wakes.flush(*segment());
    if (raw->slot == kNone) {
        static std::once_flag once;
        std::call_once(once, [] {
            std::fprintf(stderr, "coexec: the shared segment has no free thread slot; "
                                 "work waits for running threads\n");
        });
        return false;
    }
    unblocked_workers_.fetch_add(1, rlx);
    raw->thread = std::thread([this, raw] { worker_main(*raw); });
    workers_.push_back(std::move(ctx));
    return true;
}

void Runtime::show_label(ThreadContext& self, const nosv_task_type* type) {
    if (self.shown_type == type) return;
    self.shown_type = type;
    ThreadSlot& th = segment()->threads[self.slot];
    // Display only: a reader may see a torn label for one refresh.
    char buf[kLabelSize] = {};
    std::strncpy(buf, type && !type->label.empty() ? type->label.c_str() : "task", kLabelSize - 1);
    std::memcpy(th.label, buf, kLabelSize);
}

void Runtime::worker_main(ThreadContext& self) {
    RuntimeSection section; // a worker is in coexec but for its task bodies
    this_thread_context() = &self;
    segment()->threads[self.slot].tid = int32_t(::gettid());
    prctl(PR_SET_NAME, "coexec-worker", 0, 0, 0);
    while (wait_for_cpu(self) != kNone) {
        // A fresh grant runs this process's work before any new decision:
        // the turn was just given to us, and with a short quantum deciding
        // again could hand the CPU straight back.
        nosv_task* task = nullptr;
        WakeList wakes; // woken once this worker has nothing left to do
        if (nosv_task* t = next_for_worker(self);
            t && hand_to(self, t, true, wakes, &task) == Leave::Gone) {
            return_to_pool(self);
            wakes.flush(*segment(), self.slot);
            continue;
        }
        for (;;) {
            if (stopping_.load(std::memory_order_acquire)) break;
            if (!task) {
                Leave how = leave_cpu(self, Leaving::Done, wakes, &task);
                if (how == Leave::Gone) return_to_pool(self);
                wakes.flush(*segment(), self.slot);
                if (how == Leave::Gone || how == Leave::Pooled) break;
                if (how == Leave::Holding && !hold_idle(self)) break; // evicted: pooled
                if (!task) continue;
            }
            run_task(self, task);
            task = nullptr;
        }
        if (stopping_.load(std::memory_order_acquire)) break;
    }
    finish_worker(self);
}

bool Runtime::hold_idle(ThreadContext& self) {
    Segment& s = *segment();
    ThreadSlot& th = s.threads[self.slot];
    const auto policy = GovernorPolicy(s.header.config.governor_policy);
    uint64_t spins = policy == GovernorPolicy::Idle ? 0 : s.header.config.governor_spins;
    uint32_t seq = th.word.load(std::memory_order_acquire);
    for (;;) {
        int32_t g = th.grant.exchange(kNone, std::memory_order_acquire);
        if (g != kNone) {
            bind_to(self, g);
            return true;
        }
        if (th.state.load(std::memory_order_acquire) == ThreadState::Pool || stopping_.load(rlx)) {
            self.cpu = kNone;
            return false; // evicted to the pool, or stopping (worker exits)
        }
        uint32_t now = th.word.load(std::memory_order_acquire);
        if (now != seq) {
            seq = now;
            continue;
        }
        if (policy == GovernorPolicy::Busy || spins > 0) {
            if (spins > 0) --spins;
            // Submitters leave work to spinning holders (see kick()). Work we
            // see but cannot place (its process has no thread to receive a
            // CPU) ends the spinning: sleeping holders are kicked instead.
            if (cpu_wanted(self) && !offer_own_cpu(self) && policy != GovernorPolicy::Busy)
                spins = 0;
            cpu_relax();
            continue;
        }
        if (sleep_holding(self)) futex_wait(th.word, seq, kSleepSliceNs);
    }
}

bool Runtime::sleep_holding(ThreadContext& self) {
    Segment& s = *segment();
    WakeList wakes;
    bool still_ours;
    {
        auto lock = sched_->lock(wakes);
        const CpuSlot& cpu = s.cpus[self.cpu];
        still_ours =
            cpu.owner_thread.load(rlx) == self.slot && cpu.state.load(rlx) != CpuState::Running;
        if (still_ours) {
            sched_->set_holding(self.cpu, true);
            // Work queued while we spun is offered now.
            if (sched_->offer_released(self.cpu, wakes) != kNone) still_ours = false;
        }
    }
    wakes.flush(s, self.slot);
    return still_ours;
}

bool Runtime::offer_own_cpu(ThreadContext& self) {
    Segment& s = *segment();
    WakeList wakes;
    bool placed = true; // granted or evicted meanwhile: the caller's loop sees which
    {
        auto lock = sched_->lock(wakes);
        const CpuSlot& cpu = s.cpus[self.cpu];
        if (cpu.owner_thread.load(rlx) == self.slot && cpu.state.load(rlx) == CpuState::Idle)
            placed = sched_->offer(self.cpu, wakes) != kNone; // to us, or to another process
    }
    wakes.flush(s, self.slot);
    return placed;
}

void Runtime::run_task(ThreadContext& self, nosv_task* task) {
    task->thread = &self;
    task->events.store(1, std::memory_order_relaxed);
    task->state.store(TaskState::Running, std::memory_order_release);
    self.current = task;
    show_label(self, task->type);
    {
        UserSection body;
        if (task->type->run) task->type->run(task);
        if (task->type->end) task->type->end(task);
    }
    self.current = nullptr;
    task->thread = nullptr;
    task->state.store(TaskState::Ended, std::memory_order_release);
    release_events(task, 1);
}

void Runtime::release_events(nosv_task* task, uint64_t count) {
    // acq_rel: the decrement that reaches zero sees every write the task
    // and its event producers made before their own decrements.
    if (task->events.fetch_sub(count, std::memory_order_acq_rel) != count) return;
    nosv_task* waiter = std::exchange(task->blocking_waiter, nullptr);
    auto completed = task->type->completed;
    task->state.store(TaskState::Created, std::memory_order_release);
    if (completed) completed(task); // may destroy or resubmit the task
    if (waiter) submit(waiter, NOSV_SUBMIT_NONE);
}

void Runtime::return_to_pool(ThreadContext& self) {
    WakeList wakes;
    {
        auto lock = sched_->lock(wakes);
        if (!stopping_.load(rlx)) sched_->pool_push(self.slot);
    }
    wakes.flush(*segment());
}

void Runtime::finish_worker(ThreadContext& self) {
    return_batch(self);
    Segment& s = *segment();
    WakeList wakes;
    {
        auto lock = sched_->lock(wakes);
        // Also a CPU this worker still holds idle: it stopped without
        // leaving it (hold_idle() saw the runtime stop).
        sched_->release_thread(self.slot, wakes);
    }
    wakes.flush(s);
    unblocked_workers_.fetch_sub(1, rlx);
    this_thread_context() = nullptr;
}

} // namespace coexec::core
