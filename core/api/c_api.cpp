// The exported nosv_* and coexec_* C functions: argument and state checks,
// then the runtime. Every failure is a documented negative nosv code. Each
// entry that reaches the runtime is a RuntimeSection: no preemption inside.
#include <coexec/ext.h>
#include <nosv.h>

#include "core/api/c_api_support.hpp"
#include "core/runtime/runtime.hpp"

#include <cstring>
#include <new>

using coexec::core::blocked;
using coexec::core::in_parallel_execution;
using coexec::core::in_task;
using coexec::core::of_task;
using coexec::core::Runtime;
using coexec::core::RuntimeSection;
using coexec::core::TaskCall;
using coexec::core::TaskState;
using coexec::core::this_thread_context;
using coexec::core::ThreadContext;
using coexec::core::valid;

namespace {

constexpr nosv_flags_t kSubmitFlags = NOSV_SUBMIT_UNLOCKED | NOSV_SUBMIT_BLOCKING |
                                      NOSV_SUBMIT_IMMEDIATE | NOSV_SUBMIT_INLINE |
                                      NOSV_SUBMIT_DEADLINE_WAKE;

bool valid_affinity(const Runtime& rt, const nosv_affinity_t& a) {
    switch (a.level) {
    case NOSV_AFFINITY_LEVEL_NONE:
    case NOSV_AFFINITY_LEVEL_USER_COMPLEX:
        return true;
    case NOSV_AFFINITY_LEVEL_CPU:
        return rt.membership().logical_cpu(int(a.index)) >= 0;
    case NOSV_AFFINITY_LEVEL_NUMA:
        return rt.membership().logical_numa(int(a.index)) >= 0;
    }
    return false;
}

} // namespace

COEXEC_API int nosv_init(void) {
    RuntimeSection section;
    return Runtime::init(Runtime::InitOwner::Thread);
}

COEXEC_API int nosv_shutdown(void) {
    RuntimeSection section;
    return Runtime::shutdown();
}

COEXEC_API nosv_task_t nosv_self(void) {
    ThreadContext* self = Runtime::get() ? this_thread_context() : nullptr;
    return self ? self->work.current : nullptr;
}

COEXEC_API int nosv_type_init(nosv_task_type_t* type, nosv_task_run_callback_t run,
                              nosv_task_end_callback_t end,
                              nosv_task_completed_callback_t completed, const char* label,
                              void* metadata, nosv_cost_function_t, nosv_flags_t flags) {
    if (!type) return NOSV_ERR_INVALID_PARAMETER;
    if (flags & ~NOSV_TYPE_INIT_EXTERNAL) return NOSV_ERR_INVALID_PARAMETER;
    const bool external = flags & NOSV_TYPE_INIT_EXTERNAL;
    if (external ? (run || end || completed) : !run) return NOSV_ERR_INVALID_CALLBACK;
    auto* t = new (std::nothrow) nosv_task_type;
    if (!t) return NOSV_ERR_OUT_OF_MEMORY;
    t->run = run;
    t->end = end;
    t->completed = completed;
    t->label = label ? label : "";
    t->metadata = metadata;
    t->external = external;
    t->magic = coexec::core::kTypeMagic;
    *type = t;
    return NOSV_SUCCESS;
}

COEXEC_API int nosv_type_destroy(nosv_task_type_t type, nosv_flags_t flags) {
    if (!valid(type) || flags != NOSV_TYPE_DESTROY_NONE) return NOSV_ERR_INVALID_PARAMETER;
    type->magic = 0;
    delete type;
    return NOSV_SUCCESS;
}

COEXEC_API int nosv_create(nosv_task_t* task, nosv_task_type_t type, size_t metadata_size,
                           nosv_flags_t flags) {
    RuntimeSection section;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    if (!task || !valid(type) || (flags & ~(NOSV_CREATE_PARALLEL | NOSV_CREATE_JOINABLE)))
        return NOSV_ERR_INVALID_PARAMETER;
    if (type->external) return NOSV_ERR_INVALID_CALLBACK;
    if (metadata_size > NOSV_MAX_METADATA_SIZE) return NOSV_ERR_INVALID_METADATA_SIZE;
    nosv_task* t = rt->ready().new_task(type, metadata_size);
    if (!t) return NOSV_ERR_OUT_OF_MEMORY;
    if (flags & NOSV_CREATE_JOINABLE) {
        t->join.reset(new (std::nothrow) coexec::core::JoinState);
        if (!t->join) {
            rt->ready().delete_task(t);
            return NOSV_ERR_OUT_OF_MEMORY;
        }
    }
    if (flags & NOSV_CREATE_PARALLEL) t->par.make_parallel();
    *task = t;
    return NOSV_SUCCESS;
}

COEXEC_API int nosv_destroy(nosv_task_t task, nosv_flags_t flags) {
    RuntimeSection section;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    if (!valid(task) || flags != NOSV_DESTROY_NONE) return NOSV_ERR_INVALID_PARAMETER;
    if (task->type->external) return NOSV_ERR_INVALID_OPERATION; // ended by nosv_detach
    // A joinable task whose completion is not counted yet (its completed
    // callback runs) or that a joiner waits for.
    if (task->join && !task->join->settled()) return NOSV_ERR_BUSY;
    // Ready, running, paused, or ended with events pending: not complete
    // yet, and the runtime still refers to it. A suspended task may go, as
    // in nOS-V: nothing refers to it once its timer is cancelled.
    const TaskState state = task->status.state();
    if (state == TaskState::Suspended ? !rt->tasks().discard_suspended(task)
                                      : state != TaskState::Created)
        return NOSV_ERR_BUSY;
    rt->ready().delete_task(task);
    return NOSV_SUCCESS;
}

COEXEC_API int nosv_submit(nosv_task_t task, nosv_flags_t flags) {
    RuntimeSection section;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    if (!valid(task) || (flags & ~kSubmitFlags)) return NOSV_ERR_INVALID_PARAMETER;
    if ((flags & NOSV_SUBMIT_INLINE) &&
        (flags & (NOSV_SUBMIT_IMMEDIATE | NOSV_SUBMIT_DEADLINE_WAKE)))
        return NOSV_ERR_INVALID_PARAMETER;
    if (task->type->external && task->status.state() == TaskState::Created)
        return NOSV_ERR_INVALID_OPERATION; // an attached thread's task is not runnable
    if ((flags & NOSV_SUBMIT_BLOCKING) && nosv_self() == task) return NOSV_ERR_INVALID_OPERATION;
    // As in nOS-V: a parallel task neither runs inline nor sleeps in
    // waitfor, and an execution of one cannot wait for another task.
    if ((flags & (NOSV_SUBMIT_INLINE | NOSV_SUBMIT_DEADLINE_WAKE)) && task->par.multi())
        return NOSV_ERR_INVALID_OPERATION;
    if ((flags & NOSV_SUBMIT_BLOCKING) && in_parallel_execution(this_thread_context()))
        return NOSV_ERR_INVALID_OPERATION;
    // Both need the caller's CPU (to wait without it, or to run the task on
    // it): a blocked caller, outside coexec, has none.
    if ((flags & (NOSV_SUBMIT_BLOCKING | NOSV_SUBMIT_INLINE)) && blocked(this_thread_context()))
        return NOSV_ERR_OUTSIDE_TASK;
    return rt->tasks().submit(task, flags);
}

COEXEC_API int nosv_pause(nosv_flags_t flags) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    if (flags != NOSV_PAUSE_NONE) return NOSV_ERR_INVALID_PARAMETER;
    if (in_parallel_execution(c.self)) return NOSV_ERR_INVALID_OPERATION;
    return c.rt->tasks().pause(*c.self);
}

COEXEC_API int nosv_yield(nosv_flags_t flags) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    if (flags & ~NOSV_YIELD_NOFLUSH) return NOSV_ERR_INVALID_PARAMETER;
    if (in_parallel_execution(c.self)) return NOSV_ERR_INVALID_OPERATION;
    if (!(flags & NOSV_YIELD_NOFLUSH)) c.rt->ready().flush_window(*c.self);
    return c.rt->tasks().yield(*c.self);
}

COEXEC_API int nosv_schedpoint(nosv_flags_t flags) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    if (flags != NOSV_SCHEDPOINT_NONE) return NOSV_ERR_INVALID_PARAMETER;
    if (in_parallel_execution(c.self)) return NOSV_ERR_INVALID_OPERATION;
    c.rt->ready().flush_window(*c.self);
    return c.rt->tasks().schedpoint(*c.self);
}

COEXEC_API int nosv_waitfor(uint64_t target_ns, uint64_t* actual_ns) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    if (in_parallel_execution(c.self)) return NOSV_ERR_INVALID_OPERATION;
    return c.rt->tasks().waitfor(*c.self, target_ns, actual_ns);
}

COEXEC_API int nosv_increase_event_counter(uint64_t increment) {
    TaskCall c = in_task();
    if (c.error) return c.error;
    if (increment == 0) return NOSV_ERR_INVALID_PARAMETER;
    c.self->work.current->had_events = true;
    c.self->work.current->events.fetch_add(increment, std::memory_order_relaxed);
    return NOSV_SUCCESS;
}

COEXEC_API int nosv_decrease_event_counter(nosv_task_t task, uint64_t decrement) {
    RuntimeSection section;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    if (!valid(task) || decrement == 0) return NOSV_ERR_INVALID_PARAMETER;
    if (decrement > task->events.load(std::memory_order_relaxed)) return NOSV_ERR_INVALID_OPERATION;
    task->had_events = true;
    rt->tasks().release_events(task, decrement);
    return NOSV_SUCCESS;
}

COEXEC_API int nosv_has_events(void) {
    TaskCall c = in_task();
    if (c.error) return c.error;
    // The running body holds one count of its own.
    return c.self->work.current->events.load(std::memory_order_relaxed) > 1;
}

COEXEC_API int nosv_task_had_events(nosv_task_t task) {
    return valid(task) && task->had_events;
}

COEXEC_API int nosv_attach(nosv_task_t* task, nosv_affinity_t* affinity, const char* label,
                           nosv_flags_t flags) {
    RuntimeSection section;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    if (!task || (flags & ~(NOSV_ATTACH_INSTRUMENT | COEXEC_ATTACH_KEEP_AFFINITY)))
        return NOSV_ERR_INVALID_PARAMETER;
    if (affinity && !valid_affinity(*rt, *affinity)) return NOSV_ERR_INVALID_PARAMETER;
    if (ThreadContext* self = this_thread_context()) {
        // An attached thread attaches again by nesting (nOS-V's semantics):
        // the same task, and only the outermost nosv_detach detaches. A
        // worker is coexec's own thread, not the caller's to attach.
        if (!self->attach.attached) return NOSV_ERR_INVALID_OPERATION;
        *task = self->attach.nest();
        return NOSV_SUCCESS;
    }
    return rt->attach(task, affinity, label, flags & COEXEC_ATTACH_KEEP_AFFINITY);
}

COEXEC_API int nosv_detach(nosv_flags_t flags) {
    RuntimeSection section;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    if (flags & ~(NOSV_DETACH_NO_RESTORE_AFFINITY | NOSV_DETACH_INSTRUMENT))
        return NOSV_ERR_INVALID_PARAMETER;
    ThreadContext* self = this_thread_context();
    if (!self) return NOSV_ERR_OUTSIDE_TASK;
    if (!self->attach.attached) return NOSV_ERR_INVALID_OPERATION;
    if (self->attach.unnest()) return NOSV_SUCCESS; // an inner attach: the thread stays attached
    // Runtime::detach decides for a thread that kept its affinity.
    return rt->detach(*self, !(flags & NOSV_DETACH_NO_RESTORE_AFFINITY));
}

// ---- getters and setters (invalid handles give neutral values) -------

COEXEC_API void* nosv_get_task_metadata(nosv_task_t task) {
    return valid(task) ? task->metadata() : nullptr;
}
COEXEC_API nosv_task_type_t nosv_get_task_type(nosv_task_t task) {
    return valid(task) ? task->type : nullptr;
}
COEXEC_API int nosv_get_task_priority(nosv_task_t task) {
    return valid(task) ? task->priority : 0;
}
COEXEC_API void nosv_set_task_priority(nosv_task_t task, int priority) {
    if (valid(task)) task->priority = priority;
}
COEXEC_API nosv_task_run_callback_t nosv_get_task_type_run_callback(nosv_task_type_t type) {
    return valid(type) ? type->run : nullptr;
}
COEXEC_API nosv_task_end_callback_t nosv_get_task_type_end_callback(nosv_task_type_t type) {
    return valid(type) ? type->end : nullptr;
}
COEXEC_API nosv_task_completed_callback_t
nosv_get_task_type_completed_callback(nosv_task_type_t type) {
    return valid(type) ? type->completed : nullptr;
}
COEXEC_API const char* nosv_get_task_type_label(nosv_task_type_t type) {
    return valid(type) && !type->label.empty() ? type->label.c_str() : nullptr;
}
COEXEC_API void* nosv_get_task_type_metadata(nosv_task_type_t type) {
    return valid(type) ? type->metadata : nullptr;
}

COEXEC_API nosv_affinity_t nosv_get_task_affinity(nosv_task_t task) {
    return valid(task)
               ? task->affinity
               : nosv_affinity_get(0, NOSV_AFFINITY_LEVEL_NONE, NOSV_AFFINITY_TYPE_PREFERRED);
}

COEXEC_API void nosv_set_task_affinity(nosv_task_t task, nosv_affinity_t* affinity) {
    Runtime* rt = Runtime::get();
    if (!valid(task) || !affinity) return;
    if (rt && !valid_affinity(*rt, *affinity)) {
        std::fprintf(
            stderr,
            "coexec: ignoring an affinity to a CPU or NUMA node this instance does not manage\n");
        return;
    }
    task->affinity = *affinity;
}

COEXEC_API nosv_affinity_t nosv_get_default_affinity(void) {
    return nosv_affinity_get(0, NOSV_AFFINITY_LEVEL_NONE, NOSV_AFFINITY_TYPE_PREFERRED);
}

// ---- coexec extensions ----------------------------------------------

COEXEC_API int coexec_block_enter(void) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    if (in_parallel_execution(c.self)) return NOSV_ERR_INVALID_OPERATION;
    c.rt->ready().flush_window(*c.self);
    return c.rt->handover().block_enter(*c.self);
}

COEXEC_API int coexec_lend_cpu(void) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    if (in_parallel_execution(c.self)) return NOSV_ERR_INVALID_OPERATION;
    c.rt->ready().flush_window(*c.self);
    return c.rt->handover().lend_cpu(*c.self);
}

COEXEC_API int coexec_keep_cpu(void) {
    RuntimeSection section;
    TaskCall c = in_task();
    if (c.error) return c.error;
    if (in_parallel_execution(c.self)) return NOSV_ERR_INVALID_OPERATION;
    c.rt->ready().flush_window(*c.self);
    return c.rt->handover().keep_cpu(*c.self);
}

COEXEC_API int coexec_lend_kept_cpu(void) {
    RuntimeSection section;
    TaskCall c = of_task();
    return c.error ? c.error : c.rt->handover().lend_kept_cpu(*c.self);
}

COEXEC_API int coexec_block_exit(void) {
    RuntimeSection section;
    TaskCall c = of_task();
    return c.error ? c.error : c.rt->handover().block_exit(*c.self);
}

COEXEC_API int coexec_cpu_wanted(void) {
    Runtime* rt = Runtime::get();
    ThreadContext* self = rt ? this_thread_context() : nullptr;
    return self ? rt->handover().cpu_wanted(*self) : 0;
}

COEXEC_API int coexec_spare_cpus(int* spare) {
    if (!spare) return NOSV_ERR_INVALID_PARAMETER;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    *spare = rt->handover().spare_cpus();
    return NOSV_SUCCESS;
}

COEXEC_API int coexec_quantum(uint64_t* ns) {
    if (!ns) return NOSV_ERR_INVALID_PARAMETER;
    Runtime* rt = Runtime::get();
    if (!rt) return NOSV_ERR_NOT_INITIALIZED;
    *ns = rt->handover().quantum_ns();
    return NOSV_SUCCESS;
}

COEXEC_API int coexec_is_active(void) {
    return Runtime::get() != nullptr;
}

COEXEC_API int coexec_init_quiet(void) {
    RuntimeSection section;
    return Runtime::init(Runtime::InitOwner::Process, /*quiet=*/true);
}

COEXEC_API const char* coexec_last_error(void) {
    return Runtime::last_error();
}
