// The task-level operations behind nosv_submit, pause, yield, waitfor and
// schedpoint (TaskOps; a body's run and its task's completion are in
// cpu/worker_loop.cpp, next to the loop that runs them).
#include "core/tasks/task_ops.hpp"

#include "core/cpu/worker_pool.hpp"

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
using LeaveReason = CpuHandover::LeaveReason;

namespace {
constexpr auto acq = std::memory_order_acquire;
} // namespace

int TaskOps::submit(nosv_task* t, nosv_flags_t flags) {
    ThreadContext* self = this_thread_context();
    nosv_task* caller = self ? self->work.current : nullptr;
    if ((flags & (NOSV_SUBMIT_BLOCKING | NOSV_SUBMIT_INLINE)) && !caller)
        return NOSV_ERR_OUTSIDE_TASK;

    if (flags & NOSV_SUBMIT_INLINE) {
        if (!t->status.transition(TaskState::Created, TaskState::Running))
            return NOSV_ERR_INVALID_OPERATION;
        if (t->join) t->join->begin_run();
        if (flags & NOSV_SUBMIT_BLOCKING) t->blocking_waiter = nullptr; // inline already waits
        // Degree 1 here (the C API refuses more): arm() makes it ordinary.
        if (t->par.flagged() || t->par.degree() < 0) t->par.arm();
        ready_.flush_window(*self); // as in nOS-V: what the caller held back goes first
        // The inline task has a window of its own (size 1 unless it sets one).
        const uint32_t caller_window = ready_.open_inline_window(*self);
        run_task(*self, t);
        ready_.restore_window(*self, caller_window);
        self->work.current = caller;
        show_label(*self, caller->type);
        return NOSV_SUCCESS;
    }
    if (flags & NOSV_SUBMIT_DEADLINE_WAKE) {
        // Ends a timed sleep early: the task makes itself ready once awake.
        // A task not asleep yet (not run yet, or running) keeps the wake for
        // its next nosv_waitfor. Never a resume.
        if (int32_t slot = t->deadline.wake(); slot != DeadlineWake::kNoSleeper)
            sched().procs().wake_thread(slot);
        return NOSV_SUCCESS;
    }
    // A fresh task runs on a worker of this process. With every worker
    // blocked and no thread slot for another, it might never run: an error,
    // not a silent wait (an unblocked worker runs it once it is free).
    // The state first: a task that is running may be writing `thread`; one
    // Created or Suspended wrote it before its status said so (release).
    const TaskState state = t->status.state();
    if ((state == TaskState::Created || state == TaskState::Suspended) && !t->thread &&
        !workers_.any_unblocked() && !workers_.spawn(/*warn=*/false))
        return NOSV_ERR_OUT_OF_MEMORY;
    if (flags & NOSV_SUBMIT_BLOCKING) t->blocking_waiter = caller;
    switch (t->status.submit()) {
    case TaskStatus::Submit::Readied:
        // A task with no thread is fresh (a paused one keeps its thread):
        // joiners from now on wait for this new run.
        if (t->join && !t->thread) t->join->begin_run();
        // A parallel task (or a cancelled one) is armed afresh; a parallel
        // run starts with the queue's count of its events.
        if ((t->par.flagged() || t->par.degree() < 0) && t->par.arm())
            t->events.store(1, std::memory_order_relaxed);
        break;
    case TaskStatus::Submit::Banked:
        // Ready, running, sleeping or blocked: its next pause returns at once.
        return (flags & NOSV_SUBMIT_BLOCKING) ? pause(*self) : NOSV_SUCCESS;
    case TaskStatus::Submit::Refused:
        // Only this call's own waiter is withdrawn: another submitter's
        // BLOCKING wait for the task still stands.
        if (flags & NOSV_SUBMIT_BLOCKING) t->blocking_waiter = nullptr;
        return NOSV_ERR_INVALID_OPERATION; // ended, its events still pending
    }
    // The successor runs next on the CPU this thread holds, when the thread
    // leaves it: after the calling task's body, or, from a completed
    // callback on a worker (no task bound then), once the callback returns.
    // As in nOS-V, a later successor takes the place of an earlier one,
    // which becomes an ordinary ready task.
    bool immediate =
        (flags & NOSV_SUBMIT_IMMEDIATE) && self && self->held.cpu != kNone && !t->thread &&
        !t->par.active() &&
        ready_.placement_of(t->affinity).allows(segment()->cpus[self->held.cpu], self->held.cpu);
    if (immediate) {
        if (nosv_task* earlier = std::exchange(self->work.immediate, t)) {
            ready_.make_ready(earlier, false); // the CPU's count of waiting work stays
        } else {
            ready_.count_successor(self->held.cpu, +1);
        }
    } else if (caller && ready_.window_holds(*self) && !(flags & NOSV_SUBMIT_BLOCKING)) {
        // The calling task's submit window holds it until it is full (or
        // flushed: nosv_flush_submit_window, or the task leaves its CPU).
        ready_.hold_back(*self, t, flags & NOSV_SUBMIT_UNLOCKED);
    } else if (t->par.active()) {
        ready_.make_ready_parallel(t);
    } else {
        ready_.make_ready(t, flags & NOSV_SUBMIT_UNLOCKED);
    }
    if (flags & NOSV_SUBMIT_BLOCKING) return pause(*self);
    return NOSV_SUCCESS;
}

int TaskOps::pause(ThreadContext& self) {
    ready_.flush_window(self); // held submits must not wait for this task
    nosv_task* t = self.work.current;
    // A submit that arrived before the pause paid for it.
    if (t->status.pay()) return NOSV_SUCCESS;
    // No work of any process waits for our CPU: we keep it, parked, and
    // sleep; the submit that resumes the task wakes us with the CPU still
    // ours (ReadyWork::resume_parked()), unless work came for it meanwhile
    // and took it. Neither step takes the segment lock: a team whose
    // threads sleep at every barrier would otherwise take it twice per
    // thread and barrier (docs/design.md, "The segment lock").
    if (handover_.park(self)) {
        // Before the task is Paused (release, in park()): a submitter that
        // resumes it sees that we sleep parked.
        self.park.state.store(ThreadContext::Park::Asleep, std::memory_order_relaxed);
        // A submit banked since pay() leaves the task Ready: it runs on.
        if (t->status.park()) handover_.sleep_parked(self);
        self.park.state.store(ThreadContext::Park::None, std::memory_order_relaxed);
        if (!handover_.unpark(self)) {
            // Taken meanwhile: as after a lost keep (block_exit()).
            WakeList wakes;
            ready_.make_ready(t, true);
            handover_.step_on_cpu(self, wakes);
        }
        t->status.relabel(TaskState::Running);
        return NOSV_SUCCESS;
    }
    // The task stays Running until the thread is off its CPU: a submit
    // meanwhile is banked, and we make the task ready ourselves.
    WakeList wakes;
    handover_.step_off_cpu(self, LeaveReason::Block, wakes);
    if (!t->status.park()) ready_.make_ready(t, true);
    handover_.step_on_cpu(self, wakes);
    t->status.relabel(TaskState::Running);
    return NOSV_SUCCESS;
}

int TaskOps::yield(ThreadContext& self) {
    const int32_t c = self.held.cpu;
    // With no work of its own process waiting, only another process's work
    // could take the CPU, and only once this process's turn on it is over:
    // until then the locked decision keeps it (Policy::decide()). Read
    // without the lock, so that a thread spinning on nosv_yield() next to a
    // waiting process takes the segment lock once its turn is over, not at
    // every call (it took it some 200 times per 50 us quantum). A stale read
    // delays the switch to the next yield, as in schedpoint().
    if (!self.work.immediate && !sched().policy().has_work(proc(), c) &&
        (!sched().policy().foreign_work(proc(), c) ||
         !sched().policy().turn_over(c, proc(), now_ns())))
        return NOSV_SUCCESS;
    WakeList wakes;
    if (!handover_.step_off_cpu(self, LeaveReason::Yield, wakes)) {
        wakes.flush(*segment(), self.slot);
        return NOSV_SUCCESS;
    }
    // The task stays Running while it waits: a submit meanwhile is banked,
    // and its next pause returns at once.
    ready_.make_ready(self.work.current, false);
    handover_.step_on_cpu(self, wakes);
    return NOSV_SUCCESS;
}

int TaskOps::schedpoint(ThreadContext& self) {
    const int32_t c = self.held.cpu;
    // Another process waits for this CPU and our process's turn is over.
    if (sched().policy().foreign_work(proc(), c) && sched().policy().turn_over(c, proc(), now_ns()))
        return yield(self);
    // Our own work waits for it. As in nOS-V, the quantum applies to tasks
    // too: once this thread has held the CPU for a quantum, the next ready
    // task runs and the caller queues behind it (yield: the CPU is handed
    // within the process, the caller made ready only once off it). A
    // higher-priority task goes first at once.
    if (!sched().policy().has_work(proc(), c)) return NOSV_SUCCESS;
    if (sched().cpus().stint_over(c, now_ns())) return yield(self);
    const bool higher = ready_.top_priority(c) > self.work.current->priority;
    return higher ? yield(self) : NOSV_SUCCESS;
}

int TaskOps::waitfor(ThreadContext& self, uint64_t ns, uint64_t* actual_ns) {
    ready_.flush_window(self);
    nosv_task* t = self.work.current;
    const uint64_t start = now_ns();
    // A DEADLINE_WAKE that came before (even before the task ran) ends this
    // wait at once: the task keeps its CPU.
    if (!t->deadline.sleep(self.slot)) {
        if (actual_ns) *actual_ns = now_ns() - start;
        return NOSV_SUCCESS;
    }
    const uint64_t deadline = start + ns;
    t->status.relabel(TaskState::Waiting);
    WakeList wakes;
    handover_.step_off_cpu(self, LeaveReason::Block, wakes);
    wakes.flush(*segment(), self.slot);
    // A DEADLINE_WAKE only marks the word and wakes us: we make the task
    // ready ourselves, now that we are off the CPU.
    const ThreadSlot& th = segment()->threads[self.slot];
    bool woken = false;
    for (;;) {
        uint32_t seq = th.word.load(acq);
        if (t->deadline.woken()) {
            t->deadline.clear();
            woken = true;
            break;
        }
        uint64_t now = now_ns();
        if (now >= deadline) {
            woken = !t->deadline.expire(self.slot);
            break;
        }
        sched().procs().wait_word(self.slot, seq, deadline - now);
    }
    t->status.relabel(TaskState::Ready);
    ready_.make_ready(t, woken);
    handover_.step_on_cpu(self, wakes); // nothing left to wake
    t->status.relabel(TaskState::Running);
    if (actual_ns) *actual_ns = now_ns() - start;
    return NOSV_SUCCESS;
}

} // namespace coexec::core
