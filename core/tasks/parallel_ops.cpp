// Parallel tasks and the submit window: the runtime's side of
// c_api_parallel.cpp. See core/tasks/parallel.hpp for how executions are counted.
#include "core/runtime/runtime.hpp"

#include <algorithm>
#include <cstdint>

namespace coexec::core {

using scheduler::Placement;

void Runtime::ready_submitted(nosv_task* task, bool front) {
    if (task->par.active())
        make_ready_parallel(task);
    else
        make_ready(task, front);
}

void Runtime::make_ready_parallel(nosv_task* task) {
    const Placement where = placement_of(task->affinity);
    const auto executions = uint32_t(task->par.degree()); // > 0: armed at submit
    {
        std::lock_guard guard(queue_lock_);
        queue_->push_parallel(task, where, executions, false);
    }
    // From here the task may run, complete and be freed: only copies below.
    // One CPU per execution at most: each kick claims one unheld CPU (and
    // returns at once when none is), and each needs a receiving thread.
    const uint32_t cpus = std::min(executions, uint32_t(cpu_count()));
    for (uint32_t i = 0; i < cpus; ++i) {
        workers_.ensure_receiver();
        kick(where);
    }
}

void Runtime::run_execution(ThreadContext& self, nosv_task* task) {
    // The task is never bound to this thread (task->thread): its other
    // executions run on other threads meanwhile, and it cannot block.
    if (const int64_t id = task->par.start(); id >= 0) {
        self.current = task;
        self.execution_id = uint32_t(id);
        show_label(self, task->type);
        {
            UserSection body;
            if (task->type->run) task->type->run(task);
            if (task->type->end) task->type->end(task); // once per execution, as in nOS-V
        }
        end_window(self);
        self.current = nullptr;
        self.execution_id = 0;
    }
    // The last execution to end (with no events pending) completes the task.
    release_events(task, 1);
}

int Runtime::cancel(ThreadContext& self) {
    nosv_task* t = self.current;
    if (!t->par.cancel()) return NOSV_ERR_INVALID_OPERATION;
    if (!t->par.active()) return NOSV_SUCCESS; // an ordinary run: nothing else to stop
    uint32_t withdrawn;
    {
        std::lock_guard guard(queue_lock_);
        withdrawn = queue_->withdraw(t, placement_of(t->affinity));
    }
    // The queue's count; never the last, as this execution holds its own.
    if (withdrawn) release_events(t, 1);
    return NOSV_SUCCESS;
}

void Runtime::set_submit_window(ThreadContext& self, size_t size) {
    self.window_size = uint32_t(std::min<size_t>(size, UINT32_MAX));
    // As in nOS-V, a window of one submits at once: what it held goes now.
    if (size == 1) flush_window(self);
}

void Runtime::end_window(ThreadContext& self) {
    flush_window(self);
    self.window_size = 1;
}

void Runtime::flush_held(ThreadContext& self) {
    // make_ready() never submits, so the window does not grow meanwhile.
    for (auto& [task, front] : self.window)
        ready_submitted(task, front);
    self.window.clear(); // keeps its capacity for the next batch
}

} // namespace coexec::core
