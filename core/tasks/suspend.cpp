// nosv_suspend and nosv_set_suspend_mode: a task's body returns without
// completing the task, which runs its body again when its mode says. Built
// on the existing pieces: the status word (a submit resumes a Suspended
// task as it resumes a paused one), the ready queue and the IMMEDIATE
// successor slot, the event counter, and a timer thread.
#include "core/api/c_api_support.hpp"
#include "core/tasks/task_ops.hpp"

#include "shm/clock.hpp"

#include <chrono>
#include <cstring>
#include <utility>

using coexec::core::in_task;
using coexec::core::RuntimeSection;
using coexec::core::TaskCall;
using coexec::core::this_thread_context;
using coexec::core::ThreadContext;

namespace coexec::core {

using namespace coexec::shm;
using scheduler::Placement;

// ---- SuspendTimers ----------------------------------------------------

SuspendTimers::Armed SuspendTimers::arm(nosv_task* task, uint64_t deadline_ns, Fire fire,
                                        const std::function<bool()>& suspend) {
    std::unique_lock lock(mutex_);
    if (stopping_) return Armed::Failed;
    if (!thread_.joinable()) {
        fire_ = std::move(fire);
        try {
            thread_ = starts_.launch([this] { main(); });
        } catch (const std::system_error&) {
            return Armed::Failed;
        }
    }
    // Under the lock: the task cannot be resumed, run and cancel() its timer
    // before the timer is in the list.
    if (!suspend()) return Armed::NotSuspended;
    due_.emplace(deadline_ns, task);
    changed_.notify_one();
    return Armed::Armed;
}

void SuspendTimers::cancel(nosv_task* task) {
    std::lock_guard lock(mutex_);
    for (auto it = due_.begin(); it != due_.end();)
        it = it->second == task ? due_.erase(it) : std::next(it);
}

void SuspendTimers::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        due_.clear();
        changed_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
}

void SuspendTimers::main() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        if (due_.empty()) {
            changed_.wait(lock);
            continue;
        }
        auto first = due_.begin();
        const uint64_t now = now_ns();
        if (first->first > now) {
            // steady_clock is CLOCK_MONOTONIC, the clock of now_ns().
            changed_.wait_until(lock, std::chrono::steady_clock::time_point(
                                          std::chrono::nanoseconds(first->first)));
            continue;
        }
        nosv_task* task = first->second;
        due_.erase(first);
        fire_(task); // with the lock held: see cancel()
    }
}

// ---- the task operations' side (TaskOps) ------------------------------

void TaskOps::begin_body(nosv_task* task) {
    SuspendState& s = task->suspend;
    if (!std::exchange(s.resuming, false)) {
        // A fresh run: one event for the body, and the default mode.
        task->events.store(1, std::memory_order_relaxed);
        s = SuspendState{};
        return;
    }
    // A suspended task runs again: its pending events (and the body's own
    // count) stay. Its timer, if any, must not fire from now on.
    if (std::exchange(s.timer, false)) suspend_timers_.cancel(task);
}

void TaskOps::resume_suspended(nosv_task* task) {
    if (task->status.transition(TaskState::Suspended, TaskState::Ready))
        ready_.make_ready(task, true);
}

bool TaskOps::discard_suspended(nosv_task* task) {
    // The transition first: a timer that fires from now on finds the task
    // not suspended and does nothing (resume_suspended). cancel() then waits
    // for a firing in progress, under the timers' mutex, and drops the
    // entry, so the timer thread holds no pointer to the task afterwards.
    if (!task->status.transition(TaskState::Suspended, TaskState::Created)) return false;
    if (std::exchange(task->suspend.timer, false)) suspend_timers_.cancel(task);
    return true;
}

void TaskOps::suspend_after_body(ThreadContext& self, nosv_task* t) {
    SuspendState& s = t->suspend;
    s.requested = false;
    s.resuming = true;
    t->deadline.clear(); // a wake no waitfor used does not reach the next run
    switch (static_cast<nosv_suspend_mode_t>(s.mode)) {
    case NOSV_SUSPEND_MODE_NONE:
        if (!t->status.suspend()) ready_.make_ready(t, true); // a submit came while it ran
        return;
    case NOSV_SUSPEND_MODE_SUBMIT: {
        const bool fresh_on_worker = t->status.state() == TaskState::Ready;
        t->status.relabel(TaskState::Ready);
        // args 0: next on this CPU, as an IMMEDIATE successor (a worker
        // takes it before its batch and the queue). A body run inline or
        // resumed after a pause, or a successor already set: the front of
        // the queue. args 1: behind every ready task, as nosv_yield.
        const bool next_here =
            s.args == 0 && fresh_on_worker && self.worker && self.held.cpu != kNone &&
            !self.work.immediate &&
            ready_.placement_of(t->affinity).allows(segment()->cpus[self.held.cpu], self.held.cpu);
        if (next_here) {
            self.work.immediate = t;
            ready_.count_successor(self.held.cpu, +1);
        } else {
            ready_.make_ready(t, s.args == 0);
        }
        return;
    }
    case NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT: {
        s.timer = true;
        const uint64_t deadline = now_ns() + s.args;
        const auto armed = suspend_timers_.arm(
            t, deadline, [this](nosv_task* task) { resume_suspended(task); },
            [t] { return t->status.suspend(); });
        if (armed == SuspendTimers::Armed::Armed) return;
        s.timer = false;
        if (armed == SuspendTimers::Armed::NotSuspended) {
            ready_.make_ready(t, true); // a submit came while it ran
        } else if (t->status.suspend()) {
            resume_suspended(t); // no timer thread: resumed at once
        } else {
            ready_.make_ready(t, true);
        }
        return;
    }
    case NOSV_SUSPEND_MODE_EVENT_SUBMIT:
        // Ended refuses submits while events are pending. The body's own
        // count goes now; the decrement that reaches zero resumes the task
        // (release_events), maybe this one.
        s.event_wait = true;
        t->status.reset(TaskState::Ended);
        release_events(t, 1);
        return;
    }
}

bool TaskOps::resume_after_events(nosv_task* task) {
    // Only the decrement that reached zero gets here: nobody else touches
    // the counter or the flag until the task runs again.
    if (!std::exchange(task->suspend.event_wait, false)) return false;
    task->events.store(1, std::memory_order_relaxed); // the next run's own count
    task->status.reset(TaskState::Ready);
    ready_.make_ready(task, true);
    return true;
}

} // namespace coexec::core

// ---- C API ------------------------------------------------------------

COEXEC_API int nosv_set_suspend_mode(nosv_suspend_mode_t suspend_mode, uint64_t args) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    ThreadContext* self = c.self;
    // A C caller may pass any int: read it as one (in C++ an enum value
    // outside the enumerators' range must not be loaded as the enum).
    int mode = 0;
    static_assert(sizeof mode == sizeof suspend_mode);
    std::memcpy(&mode, &suspend_mode, sizeof mode);
    switch (mode) {
    case NOSV_SUSPEND_MODE_SUBMIT:
        if (args > 1) return NOSV_ERR_INVALID_PARAMETER;
        break;
    case NOSV_SUSPEND_MODE_NONE:
    case NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT:
    case NOSV_SUSPEND_MODE_EVENT_SUBMIT:
        break;
    default:
        return NOSV_ERR_INVALID_PARAMETER;
    }
    self->work.current->suspend.mode = static_cast<uint8_t>(mode);
    self->work.current->suspend.args = args;
    return NOSV_SUCCESS;
}

COEXEC_API int nosv_suspend(void) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    ThreadContext* self = c.self;
    // An attached thread's task has no body that could return.
    if (self->work.current->type->external) return NOSV_ERR_INVALID_OPERATION;
    // Nor has one execution of a parallel task: the others share the body.
    if (coexec::core::in_parallel_execution(self)) return NOSV_ERR_INVALID_OPERATION;
    self->work.current->suspend.requested = true;
    return NOSV_SUCCESS;
}
