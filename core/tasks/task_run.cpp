// How a task's body runs on a thread, and how its task completes when its
// last event is gone (TaskOps::run_task(), release_events()); the label its
// thread shows while it runs.
#include "core/tasks/task_ops.hpp"

#include "core/runtime/thread_context.hpp"
#include "core/tasks/ready_work.hpp"

#include <utility>

namespace coexec::core {

void TaskOps::show_label(ThreadContext& self, const nosv_task_type* type) {
    if (self.work.shown_type == type) return;
    self.work.shown_type = type;
    sched().procs().set_label(self.slot, type && !type->label.empty() ? type->label : "task");
}

void TaskOps::run_task(ThreadContext& self, nosv_task* task) {
    if (task->par.active()) return run_execution(self, task);
    task->thread = &self;
    begin_body(task); // one event for the body, or those of a suspended task
    // The status stays Ready (or Running, inline): see TaskState::Ready.
    self.work.current = task;
    show_label(self, task->type);
    {
        UserSection body;
        if (task->type->run) task->type->run(task);
        // A suspended body has not ended: it runs again later.
        if (task->type->end && !task->suspend.requested) task->type->end(task);
    }
    if (self.pending.window_size != 1) ready_.end_window(self); // the window ends with the body
    self.work.current = nullptr;
    task->thread = nullptr;
    if (task->suspend.requested) return suspend_after_body(self, task);
    task->status.reset(TaskState::Ended); // submits nothing paused for are dropped
    task->deadline.clear();               // and a wake no waitfor used
    release_events(task, 1);
}

void TaskOps::release_events(nosv_task* task, uint64_t count) {
    // acq_rel: the decrement that reaches zero sees every write the task
    // and its event producers made before their own decrements.
    if (task->events.fetch_sub(count, std::memory_order_acq_rel) != count) return;
    if (resume_after_events(task)) return; // suspended with EVENT_SUBMIT
    nosv_task* waiter = std::exchange(task->blocking_waiter, nullptr);
    auto completed = task->type->completed;
    JoinState* join = task->join.get(); // a joinable task outlives its callback
    task->status.reset(TaskState::Created);
    if (completed) completed(task); // may destroy or resubmit the task
    if (join) finish_join(*join);   // the last access: a joiner may destroy it
    if (waiter) submit(waiter, NOSV_SUBMIT_NONE);
}

} // namespace coexec::core
