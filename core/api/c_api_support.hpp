// What every file of the C API needs: the export macro, and the calling
// task's runtime and thread (or the error a task-only call returns).
#pragma once

#include "core/runtime/runtime.hpp"
#include "core/runtime/thread_context.hpp"

#include <nosv.h>

// Exported from libcoexec with C linkage (the library hides everything else).
#define COEXEC_API extern "C" __attribute__((visibility("default")))

namespace coexec::core {

// The runtime and the calling task, or the error to return.
struct TaskCall {
    Runtime* rt = nullptr;
    ThreadContext* self = nullptr;
    int error = NOSV_SUCCESS;
};

// A task without a CPU is between coexec_block_enter/lend_cpu/keep_cpu and
// coexec_block_exit: its thread is outside coexec until then.
inline bool blocked(const ThreadContext* self) {
    return self && self->work.current && self->held.cpu == shm::kNone;
}

// For the calls a task makes while its thread is outside coexec too
// (coexec_block_exit, coexec_lend_kept_cpu): NOSV_ERR_NOT_INITIALIZED before
// nosv_init, NOSV_ERR_OUTSIDE_TASK outside a task.
inline TaskCall of_task() {
    TaskCall c;
    c.rt = Runtime::get();
    if (!c.rt) {
        c.error = NOSV_ERR_NOT_INITIALIZED;
        return c;
    }
    c.self = this_thread_context();
    if (!c.self || !c.self->work.current) c.error = NOSV_ERR_OUTSIDE_TASK;
    return c;
}

// For the calls only a running task may make: as of_task(), and
// NOSV_ERR_OUTSIDE_TASK while blocked.
inline TaskCall in_task() {
    TaskCall c = of_task();
    if (!c.error && blocked(c.self)) c.error = NOSV_ERR_OUTSIDE_TASK;
    return c;
}

// The calling thread runs one execution of a parallel task: as in nOS-V it
// may not block, pause, yield, wait or suspend (its task is on other CPUs
// too).
inline bool in_parallel_execution(const ThreadContext* self) {
    return self && self->work.current && self->work.current->par.active();
}

} // namespace coexec::core
