// The exported nosv_* calls for parallel tasks (NOSV_CREATE_PARALLEL, degree,
// execution id, cancel) and the submit window, as nOS-V 4.1 declares them.
// Argument and state checks here; the work in parallel_ops.cpp.
#include <nosv.h>

#include "core/api/c_api_support.hpp"
#include "core/runtime/runtime.hpp"

#include <cstdio>

using coexec::core::in_task;
using coexec::core::Runtime;
using coexec::core::RuntimeSection;
using coexec::core::TaskCall;
using coexec::core::this_thread_context;
using coexec::core::ThreadContext;
using coexec::core::valid;

COEXEC_API int32_t nosv_get_task_degree(nosv_task_t task) {
    return valid(task) ? task->par.degree() : 0;
}

COEXEC_API void nosv_set_task_degree(nosv_task_t task, int32_t degree) {
    if (!valid(task)) return;
    // nOS-V only asserts these; a clear word beats a silent misuse.
    if (!task->par.set_degree(degree))
        std::fprintf(stderr, "coexec: ignoring nosv_set_task_degree(%d) on a task %s\n",
                     int(degree),
                     task->par.flagged() ? "(the degree must be > 0)"
                                         : "created without NOSV_CREATE_PARALLEL");
}

COEXEC_API uint32_t nosv_get_execution_id(void) {
    TaskCall c = in_task();
    // nOS-V returns the error code, converted, outside a task.
    if (c.error) return uint32_t(c.error);
    // An ordinary task (or one run inline by an execution) is execution 0.
    return c.self->work.current->par.active() ? c.self->work.execution_id : 0;
}

COEXEC_API int nosv_cancel(nosv_flags_t flags) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    if (flags != NOSV_CANCEL_NONE) return NOSV_ERR_INVALID_PARAMETER;
    return c.rt->tasks().cancel(*c.self);
}

COEXEC_API int nosv_set_submit_window_size(size_t submit_window_size) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    if (submit_window_size == 0) return NOSV_ERR_INVALID_PARAMETER;
    c.rt->ready().set_submit_window(*c.self, submit_window_size);
    return NOSV_SUCCESS;
}

COEXEC_API int nosv_flush_submit_window(void) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    c.rt->ready().flush_window(*c.self);
    return NOSV_SUCCESS;
}
