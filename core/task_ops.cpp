// The task-level operations behind nosv_submit, pause, yield, waitfor,
// schedpoint, attach/detach and the block extension.
#include "runtime.hpp"

#include "scheduler/kernel_affinity.hpp"
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
    if (flags & NOSV_SUBMIT_DEADLINE_WAKE) {
        // Ends a timed sleep early; the task makes itself ready once off its
        // CPU. A task that is not in nosv_waitfor (its deadline passed, or
        // it never slept) has nothing to wake: never a resume.
        if (transition(t, TaskState::Waiting, TaskState::Ready))
            sched().wake_thread(t->thread->slot);
        return NOSV_SUCCESS;
    }
    // A fresh task runs on a worker of this process. With every worker
    // blocked and no thread slot for another, it might never run: an error,
    // not a silent wait (an unblocked worker runs it once it is free).
    if (!t->thread && t->state.load(acq) == TaskState::Created && !workers_.any_unblocked() &&
        !workers_.spawn(/*warn=*/false))
        return NOSV_ERR_OUT_OF_MEMORY;
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
            // Only this call's own waiter is withdrawn: another submitter's
            // BLOCKING wait for the task still stands.
            if (flags & NOSV_SUBMIT_BLOCKING) t->blocking_waiter = nullptr;
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
    if (!self.immediate && !sched().has_work(proc(), c) && !sched().foreign_work(proc(), c))
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
    bool switch_now = sched().foreign_work(proc(), c) && sched().turn_over(c, proc(), now_ns());
    if (!switch_now && segment()->procs[proc()].ready_total.load(rlx) > 0) {
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
    const ThreadSlot& th = segment()->threads[self.slot];
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
        sched().wait_word(self.slot, seq, deadline - now);
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
    // Each attached thread's task has a type of its own, so that the type's
    // label is the attach label (as nosv_get_task_type_label reports it).
    ctx->attach_type = std::make_unique<nosv_task_type>(external_type_);
    if (label) ctx->attach_type->label = label;
    nosv_task* t = new_task(ctx->attach_type.get(), 0);
    if (!t) return NOSV_ERR_OUT_OF_MEMORY;
    // From here on the thread shows the mask it has now (the kernel's: the
    // system call, not libcoexec's own sched_getaffinity). Listed before its
    // tid is in the segment, where granters find it to pin it.
    ctx->affinity.tid = ::gettid();
    ctx->affinity.pthread = pthread_self();
    cpu_set_t own;
    if (!scheduler::kernel_own_affinity(own)) own = process_mask_;
    affinity_.add(ctx->affinity, own);
    WakeList wakes;
    {
        auto lock = sched().lock(wakes);
        ctx->slot = sched().alloc_thread(proc(), ctx->affinity.tid, label ? label : "attached",
                                         ThreadState::Waiting, keeps_affinity);
    }
    wakes.flush(*segment());
    if (ctx->slot == kNone) {
        affinity_.remove(ctx->affinity, AffinityRegistry::Restore::no);
        delete_task(t);
        return NOSV_ERR_OUT_OF_MEMORY;
    }
    if (affinity) t->affinity = *affinity;
    t->thread = ctx.get();
    t->state.store(TaskState::Ready, rel);
    ctx->current = t;
    ctx->attach_task = t;
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
        // Also a CPU the thread still keeps or lends (detached between
        // coexec_keep_cpu or coexec_lend_cpu and coexec_block_exit).
        auto lock = sched().lock(wakes);
        sched().release_thread(self.slot, wakes);
    }
    wakes.flush(*segment());
    // The remembered mask: the one the thread had at attach, or the last it
    // set since. A thread that keeps its affinity gets it back only when
    // coexec pinned it or a set is pending, whatever the flags say.
    using Restore = AffinityRegistry::Restore;
    const Restore how =
        self.keeps_affinity
            ? (std::exchange(self.pinned, false) ? Restore::yes : Restore::if_changed)
            : (restore_affinity ? Restore::yes : Restore::no);
    affinity_.remove(self.affinity, how);
    delete_task(t);
    this_thread_context() = nullptr;
    delete &self;
    return NOSV_SUCCESS;
}

int Runtime::block_enter(ThreadContext& self) {
    if (self.cpu == kNone) return NOSV_ERR_INVALID_OPERATION;
    step_out(self);
    // Outside coexec the thread may change its own affinity: bind again on
    // the next grant. A mask it sets itself meanwhile goes to the kernel.
    binding_->forget(self);
    self.own_affinity_applies = true;
    WakeList wakes;
    leave_cpu(self, Leaving::Block, wakes);
    wakes.flush(*segment(), self.slot);
    self.cpu = kNone;
    return NOSV_SUCCESS;
}

int Runtime::lend_cpu(ThreadContext& self) {
    if (self.cpu == kNone) return NOSV_ERR_INVALID_OPERATION;
    // Work already waiting for this CPU (or a successor of ours) gets it now.
    if (self.immediate || self.has_batch() || cpu_wanted(self)) return block_enter(self);
    step_out(self);
    binding_->lend(self);
    // Still bound to its CPU: only a thread that keeps its affinity runs
    // with its own, and may change it, outside coexec.
    self.own_affinity_applies = self.keeps_affinity;
    return NOSV_SUCCESS;
}

int Runtime::keep_cpu(ThreadContext& self) {
    if (self.cpu == kNone) return NOSV_ERR_INVALID_OPERATION;
    // A successor or a batch of ours must not wait behind code of the user.
    if (self.immediate || self.has_batch()) return block_enter(self);
    step_out(self);
    binding_->keep(self);
    self.own_affinity_applies = self.keeps_affinity; // as for lend_cpu
    return NOSV_SUCCESS;
}

void Runtime::step_out(ThreadContext& self) {
    self.current->state.store(TaskState::Blocked, rel);
    workers_.blocked(self);
}

int Runtime::block_exit(ThreadContext& self) {
    nosv_task* t = self.current;
    if (t->state.load(acq) != TaskState::Blocked) return NOSV_ERR_INVALID_OPERATION;
    // Back in coexec, which binds the thread: a mask it sets is remembered.
    self.own_affinity_applies = false;
    // The cheap way back: no hand-off, no wake-up.
    if (binding_->reclaim(self)) {
        workers_.unblocked(self);
        t->state.store(TaskState::Running, rel);
        return NOSV_SUCCESS;
    }
    if (!transition(t, TaskState::Blocked, TaskState::Ready)) return NOSV_ERR_INVALID_OPERATION;
    make_ready(t, true);
    if (wait_for_cpu(self) == kNone) self.cpu = kNone;
    workers_.unblocked(self);
    t->state.store(TaskState::Running, rel);
    return NOSV_SUCCESS;
}

} // namespace coexec::core
