// The task-level operations behind nosv_submit, pause, yield, waitfor,
// schedpoint, attach/detach and the block extension.
#include "runtime.hpp"

#include "shm/clock.hpp"
#include "shm/futex.hpp"

#include <cstring>
#include <new>
#include <pthread.h>
#include <unistd.h>
#include <utility>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::Placement;
using scheduler::WakeList;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
constexpr auto acq = std::memory_order_acquire;
constexpr auto rel = std::memory_order_release;

bool transition(nosv_task* t, TaskState from, TaskState to) {
    return t->state.compare_exchange_strong(from, to, std::memory_order_acq_rel);
}

void wake_thread(Segment& s, int32_t slot) {
    s.threads[slot].word.fetch_add(1, rel);
    futex_wake(s.threads[slot].word);
}
} // namespace

nosv_task* Runtime::new_task(nosv_task_type* type, size_t metadata_size) {
    void* mem = task_pool_.allocate(sizeof(nosv_task) + metadata_size);
    if (!mem) return nullptr;
    auto* t = new (mem) nosv_task;
    t->type = type;
    t->metadata_size = metadata_size;
    if (metadata_size) std::memset(t->metadata(), 0, metadata_size);
    t->magic = kTaskMagic;
    return t;
}

void Runtime::delete_task(nosv_task* t) {
    size_t bytes = sizeof(nosv_task) + t->metadata_size;
    t->magic = 0;
    t->~nosv_task();
    task_pool_.release(t, bytes);
}

int Runtime::submit(nosv_task* t, nosv_flags_t flags) {
    ThreadContext* self = this_thread_context();
    nosv_task* caller = self ? self->current : nullptr;
    if ((flags & (NOSV_SUBMIT_BLOCKING | NOSV_SUBMIT_INLINE)) && !caller)
        return NOSV_ERR_OUTSIDE_TASK;

    if (flags & NOSV_SUBMIT_INLINE) {
        if (!transition(t, TaskState::Created, TaskState::Running))
            return NOSV_ERR_INVALID_OPERATION;
        if (flags & NOSV_SUBMIT_BLOCKING) t->blocking_waiter = nullptr; // inline already waits
        run_task(*self, t);
        self->current = caller;
        show_label(*self, caller->type);
        return NOSV_SUCCESS;
    }
    if ((flags & NOSV_SUBMIT_DEADLINE_WAKE) &&
        transition(t, TaskState::Waiting, TaskState::Ready)) {
        // Ends its timed sleep; it makes itself ready once off its CPU.
        wake_thread(*segment(), t->thread->slot);
        return NOSV_SUCCESS;
    }
    if (flags & NOSV_SUBMIT_BLOCKING) t->blocking_waiter = caller;
    for (;;) {
        TaskState st = t->state.load(acq);
        switch (st) {
        case TaskState::Running:
            // Not paused yet: its next pause returns at once.
            if (transition(t, st, TaskState::Resumed)) return NOSV_SUCCESS;
            continue;
        case TaskState::Waiting:
            return NOSV_SUCCESS; // its deadline wakes it
        case TaskState::Created:
        case TaskState::Paused:
            if (!transition(t, st, TaskState::Ready)) continue;
            break;
        default:
            t->blocking_waiter = nullptr;
            return NOSV_ERR_INVALID_OPERATION; // already ready, or not resumable
        }
        break;
    }
    bool immediate = (flags & NOSV_SUBMIT_IMMEDIATE) && self && caller && self->cpu != kNone &&
                     !self->immediate && !t->thread &&
                     placement_of(t->affinity).allows(segment()->cpus[self->cpu], self->cpu);
    if (immediate) {
        self->immediate = t;
        std::lock_guard guard(queue_mutex_);
        queue_->count_external({Placement::Kind::Cpu, self->cpu, true}, +1);
    } else {
        make_ready(t, flags & NOSV_SUBMIT_UNLOCKED);
    }
    if (flags & NOSV_SUBMIT_BLOCKING) return pause(*self);
    return NOSV_SUCCESS;
}

int Runtime::pause(ThreadContext& self) {
    nosv_task* t = self.current;
    // A submit that arrived before the pause: consume it.
    if (transition(t, TaskState::Resumed, TaskState::Running)) return NOSV_SUCCESS;
    // The task stays Running until the thread is off its CPU: a submit
    // meanwhile marks it Resumed, and we make it ready ourselves.
    WakeList wakes;
    step_off_cpu(self, Leaving::Block, wakes);
    if (!transition(t, TaskState::Running, TaskState::Paused)) {
        t->state.store(TaskState::Ready, rel);
        make_ready(t, true);
    }
    step_on_cpu(self, wakes);
    t->state.store(TaskState::Running, rel);
    return NOSV_SUCCESS;
}

int Runtime::yield(ThreadContext& self) {
    const int32_t c = self.cpu;
    if (!self.immediate && !sched_->has_work(proc_, c) && !sched_->foreign_work(proc_, c))
        return NOSV_SUCCESS;
    WakeList wakes;
    if (!step_off_cpu(self, Leaving::Yield, wakes)) {
        wakes.flush(*segment(), self.slot);
        return NOSV_SUCCESS;
    }
    // The task stays Running while it waits: a submit meanwhile marks it
    // Resumed, and its next pause returns at once.
    make_ready(self.current, false);
    step_on_cpu(self, wakes);
    return NOSV_SUCCESS;
}

int Runtime::schedpoint(ThreadContext& self) {
    const int32_t c = self.cpu;
    const CpuSlot& cpu = segment()->cpus[c];
    bool switch_now = false;
    if (sched_->foreign_work(proc_, c))
        switch_now = cpu.turn_proc.load(rlx) != proc_ ||
                     now_ns() - cpu.turn_start_ns.load(rlx) >= sched_->quantum_ns();
    if (!switch_now && segment()->procs[proc_].ready_total.load(rlx) > 0) {
        std::lock_guard guard(queue_mutex_);
        switch_now = queue_->top_priority(c, numa_of_cpu(c)) > self.current->priority;
    }
    return switch_now ? yield(self) : NOSV_SUCCESS;
}

int Runtime::waitfor(ThreadContext& self, uint64_t ns, uint64_t* actual_ns) {
    nosv_task* t = self.current;
    const uint64_t start = now_ns();
    const uint64_t deadline = start + ns;
    t->state.store(TaskState::Waiting, rel);
    WakeList wakes;
    step_off_cpu(self, Leaving::Block, wakes);
    wakes.flush(*segment(), self.slot);
    // A DEADLINE_WAKE submit only marks the task Ready and wakes us: we make
    // it ready ourselves, now that we are off the CPU.
    ThreadSlot& th = segment()->threads[self.slot];
    bool woken = false;
    for (;;) {
        uint32_t seq = th.word.load(acq);
        if (t->state.load(acq) != TaskState::Waiting) {
            woken = true;
            break;
        }
        uint64_t now = now_ns();
        if (now >= deadline) {
            woken = !transition(t, TaskState::Waiting, TaskState::Ready);
            break;
        }
        futex_wait(th.word, seq, deadline - now);
    }
    make_ready(t, woken);
    step_on_cpu(self, wakes); // nothing left to wake
    t->state.store(TaskState::Running, rel);
    if (actual_ns) *actual_ns = now_ns() - start;
    return NOSV_SUCCESS;
}

int Runtime::attach(nosv_task** out, const nosv_affinity_t* affinity, const char* label,
                    bool keeps_affinity) {
    auto ctx = std::make_unique<ThreadContext>();
    ctx->attached = true;
    ctx->keeps_affinity = keeps_affinity;
    pthread_getaffinity_np(pthread_self(), sizeof ctx->original_mask, &ctx->original_mask);
    WakeList wakes;
    {
        auto lock = sched_->lock(wakes);
        ctx->slot = sched_->alloc_thread(proc_, ::gettid(), label ? label : "attached",
                                         ThreadState::Waiting, keeps_affinity);
        if (ctx->slot != kNone) by_slot_[size_t(ctx->slot)] = ctx.get();
    }
    wakes.flush(*segment());
    if (ctx->slot == kNone) return NOSV_ERR_OUT_OF_MEMORY;
    // Each attached thread's task has a type of its own, so that the type's
    // label is the attach label (as nosv_get_task_type_label reports it).
    ctx->attach_type = std::make_unique<nosv_task_type>(external_type_);
    if (label) ctx->attach_type->label = label;
    nosv_task* t = new_task(ctx->attach_type.get(), 0);
    if (!t) {
        auto lock = sched_->lock(wakes);
        sched_->release_thread(ctx->slot, wakes);
        return NOSV_ERR_OUT_OF_MEMORY;
    }
    if (affinity) t->affinity = *affinity;
    t->thread = ctx.get();
    t->state.store(TaskState::Ready, rel);
    ctx->current = t;
    ctx->shown_type = ctx->attach_type.get(); // the slot already shows the attach label
    ThreadContext* raw = ctx.release();
    this_thread_context() = raw;
    make_ready(t, false);
    wait_for_cpu(*raw);
    t->state.store(TaskState::Running, rel);
    *out = t;
    return NOSV_SUCCESS;
}

int Runtime::detach(ThreadContext& self, bool restore_affinity) {
    nosv_task* t = self.current;
    WakeList wakes;
    if (self.cpu != kNone) leave_cpu(self, Leaving::Block, wakes);
    {
        auto lock = sched_->lock(wakes);
        sched_->release_thread(self.slot, wakes);
        by_slot_[size_t(self.slot)] = nullptr;
    }
    wakes.flush(*segment());
    if (restore_affinity)
        pthread_setaffinity_np(pthread_self(), sizeof self.original_mask, &self.original_mask);
    unpin(self);
    delete_task(t);
    this_thread_context() = nullptr;
    delete &self;
    return NOSV_SUCCESS;
}

int Runtime::block_enter(ThreadContext& self) {
    if (self.cpu == kNone) return NOSV_ERR_INVALID_OPERATION;
    step_out(self);
    // Outside coexec the thread may change its own affinity: bind again on
    // the next grant.
    forget_binding(self);
    unpin(self);
    WakeList wakes;
    leave_cpu(self, Leaving::Block, wakes);
    wakes.flush(*segment(), self.slot);
    self.cpu = kNone;
    return NOSV_SUCCESS;
}

int Runtime::lend_cpu(ThreadContext& self) {
    const int32_t c = self.cpu;
    if (c == kNone) return NOSV_ERR_INVALID_OPERATION;
    // Work already waiting for this CPU (or a successor of ours) gets it now.
    if (self.immediate || self.has_batch() || cpu_wanted(self)) return block_enter(self);
    step_out(self);
    WakeList wakes;
    int32_t taker;
    {
        auto lock = sched_->lock(wakes);
        sched_->set_lent(c);
        taker = sched_->offer_released(c, wakes); // work queued meanwhile takes it at once
    }
    wakes.flush(*segment());
    self.cpu = kNone;
    self.lent_cpu = taker == kNone ? c : kNone;
    unpin(self);
    return NOSV_SUCCESS;
}

int Runtime::keep_cpu(ThreadContext& self) {
    const int32_t c = self.cpu;
    if (c == kNone) return NOSV_ERR_INVALID_OPERATION;
    // A successor or a batch of ours must not wait behind code of the user.
    if (self.immediate || self.has_batch()) return block_enter(self);
    unpin(self);
    step_out(self);
    ThreadSlot& th = segment()->threads[self.slot];
    self.kept_word = ((th.serial.load(rlx) >> 2) + 1) << 2 | 1u;
    // Release: a monitor that sees the new period sees the thread's CPU
    // state as of now. Only this thread writes the word outside a period.
    th.serial.store(self.kept_word, std::memory_order_release);
    self.kept_cpu = c;
    self.cpu = kNone;
    return NOSV_SUCCESS;
}

// The caller's task stops running and the thread leaves coexec's view.
void Runtime::step_out(ThreadContext& self) {
    self.current->state.store(TaskState::Blocked, rel);
    if (self.worker) unblocked_workers_.fetch_sub(1, rlx);
}

// Ends a coexec_keep_cpu() period: true if the CPU is still ours.
bool Runtime::reclaim_kept_cpu(ThreadContext& self) {
    const int32_t c = std::exchange(self.kept_cpu, kNone);
    if (c == kNone) return false;
    ThreadSlot& th = segment()->threads[self.slot];
    uint32_t word = self.kept_word;
    const uint32_t idle = word & ~3u;
    // Against take_kept()'s compare-exchange: exactly one of us wins.
    if (th.serial.compare_exchange_strong(word, idle, std::memory_order_acq_rel,
                                          std::memory_order_acquire)) {
        bind_to(self, c);
        return true;
    }
    th.serial.store(idle, std::memory_order_relaxed); // the taker is done with it
    return false;
}

// Ends a coexec_lend_cpu() period: true if nobody took the CPU meanwhile.
bool Runtime::reclaim_lent_cpu(ThreadContext& self) {
    const int32_t c = std::exchange(self.lent_cpu, kNone);
    if (c == kNone) return false;
    WakeList wakes;
    bool back;
    {
        auto lock = sched_->lock(wakes);
        back = sched_->reclaim_lent(c, self.slot);
    }
    wakes.flush(*segment());
    // A thread that keeps its affinity may need pinning again.
    if (back) bind_to(self, c);
    return back;
}

int Runtime::block_exit(ThreadContext& self) {
    nosv_task* t = self.current;
    if (t->state.load(acq) != TaskState::Blocked) return NOSV_ERR_INVALID_OPERATION;
    // The cheap way back: no hand-off, no wake-up.
    if (reclaim_kept_cpu(self) || reclaim_lent_cpu(self)) {
        if (self.worker) unblocked_workers_.fetch_add(1, rlx);
        t->state.store(TaskState::Running, rel);
        return NOSV_SUCCESS;
    }
    if (!transition(t, TaskState::Blocked, TaskState::Ready)) return NOSV_ERR_INVALID_OPERATION;
    make_ready(t, true);
    if (wait_for_cpu(self) == kNone) self.cpu = kNone;
    if (self.worker) unblocked_workers_.fetch_add(1, rlx);
    t->state.store(TaskState::Running, rel);
    return NOSV_SUCCESS;
}

} // namespace coexec::core
