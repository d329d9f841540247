// The exported nosv_* calls for parallel tasks (NOSV_CREATE_PARALLEL, degree,
// execution id, cancel) and the submit window, as nOS-V 4.1 declares them.
// Argument and state checks here; the work in parallel_ops.cpp.
#include <nosv.h>

#include "runtime.hpp"

#include <cstdio>

using coexec::core::Runtime;
using coexec::core::RuntimeSection;
using coexec::core::this_thread_context;
using coexec::core::ThreadContext;
using coexec::core::valid;

#define COEXEC_API extern "C" __attribute__((visibility("default")))

namespace {

// The runtime and the calling task's thread, or the error to return (as
// c_api.cpp's in_task(): a blocked task is outside coexec).
struct Caller {
    Runtime* rt = nullptr;
    ThreadContext* self = nullptr;
    int error = NOSV_SUCCESS;
};

Caller calling_task() {
    Caller c;
    c.rt = Runtime::get();
    if (!c.rt) {
        c.error = NOSV_ERR_NOT_INITIALIZED;
        return c;
    }
    c.self = this_thread_context();
    if (!c.self || !c.self->current || c.self->cpu == coexec::shm::kNone)
        c.error = NOSV_ERR_OUTSIDE_TASK;
    return c;
}

} // namespace

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
    Caller c = calling_task();
    // nOS-V returns the error code, converted, outside a task.
    if (c.error) return uint32_t(c.error);
    // An ordinary task (or one run inline by an execution) is execution 0.
    return c.self->current->par.active() ? c.self->execution_id : 0;
}

COEXEC_API int nosv_cancel(nosv_flags_t flags) {
    RuntimeSection section;
    Caller c = calling_task();
    if (c.error) return c.error;
    if (flags != NOSV_CANCEL_NONE) return NOSV_ERR_INVALID_PARAMETER;
    return c.rt->cancel(*c.self);
}

COEXEC_API int nosv_set_submit_window_size(size_t submit_window_size) {
    RuntimeSection section;
    Caller c = calling_task();
    if (c.error) return c.error;
    if (submit_window_size == 0) return NOSV_ERR_INVALID_PARAMETER;
    c.rt->set_submit_window(*c.self, submit_window_size);
    return NOSV_SUCCESS;
}

COEXEC_API int nosv_flush_submit_window(void) {
    RuntimeSection section;
    Caller c = calling_task();
    if (c.error) return c.error;
    c.rt->flush_window(*c.self);
    return NOSV_SUCCESS;
}
