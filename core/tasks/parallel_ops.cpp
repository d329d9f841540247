// Parallel tasks: the task operations' side of
// c_api_parallel.cpp. See core/tasks/parallel.hpp for how executions are counted.
#include "core/tasks/task_ops.hpp"

#include <algorithm>
#include <cstdint>

namespace coexec::core {

using scheduler::Placement;

void TaskOps::run_execution(ThreadContext& self, nosv_task* task) {
    // The task is never bound to this thread (task->thread): its other
    // executions run on other threads meanwhile, and it cannot block.
    if (const int64_t id = task->par.start(); id >= 0) {
        self.work.current = task;
        self.work.execution_id = uint32_t(id);
        show_label(self, task->type);
        {
            UserSection body;
            if (task->type->run) task->type->run(task);
            if (task->type->end) task->type->end(task); // once per execution, as in nOS-V
        }
        ready_.end_window(self);
        self.work.current = nullptr;
        self.work.execution_id = 0;
    }
    // The last execution to end (with no events pending) completes the task.
    release_events(task, 1);
}

int TaskOps::cancel(ThreadContext& self) {
    nosv_task* t = self.work.current;
    if (!t->par.cancel()) return NOSV_ERR_INVALID_OPERATION;
    if (!t->par.active()) return NOSV_SUCCESS; // an ordinary run: nothing else to stop
    const uint32_t withdrawn = ready_.withdraw(t);
    // The queue's count; never the last, as this execution holds its own.
    if (withdrawn) release_events(t, 1);
    return NOSV_SUCCESS;
}

} // namespace coexec::core
