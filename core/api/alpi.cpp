// ALPI 1.2 (nosv/alpi.h) on coexec's task operations: block/unblock are
// pause/submit, waitfor_ns is waitfor (or a schedpoint for 0), the events
// are the task's event counter, spawn is a one-off task type and task, and
// suspend is nosv_suspend. Each call checks its arguments, calls the nosv_*
// entry (which checks the state), and turns a nosv error into ALPI's.
#include <nosv.h>
#include <nosv/alpi-defs.h>
#include <nosv/alpi.h>

#include "core/api/c_api_support.hpp"
#include "core/runtime/runtime.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>

using coexec::core::Runtime;
using coexec::core::this_thread_context;
using coexec::core::ThreadContext;

namespace {

static_assert(int(ALPI_SUSPEND_NONE) == int(NOSV_SUSPEND_MODE_NONE) &&
                  int(ALPI_SUSPEND_SUBMIT) == int(NOSV_SUSPEND_MODE_SUBMIT) &&
                  int(ALPI_SUSPEND_TIMEOUT_SUBMIT) == int(NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT) &&
                  int(ALPI_SUSPEND_EVENT_SUBMIT) == int(NOSV_SUSPEND_MODE_EVENT_SUBMIT),
              "ALPI's suspend modes are nOS-V's");

nosv_task_t as_nosv(alpi_task* task) {
    return reinterpret_cast<nosv_task_t>(task);
}

// A nosv_* result as an ALPI code.
int from_nosv(int rc) {
    switch (rc) {
    case NOSV_SUCCESS:
        return ALPI_SUCCESS;
    case NOSV_ERR_INVALID_PARAMETER:
    case NOSV_ERR_INVALID_CALLBACK:
    case NOSV_ERR_INVALID_METADATA_SIZE:
        return ALPI_ERR_PARAMETER;
    case NOSV_ERR_NOT_INITIALIZED:
        return ALPI_ERR_NOT_INITIALIZED;
    case NOSV_ERR_OUT_OF_MEMORY:
        return ALPI_ERR_OUT_OF_MEMORY;
    case NOSV_ERR_OUTSIDE_TASK:
        return ALPI_ERR_OUTSIDE_TASK;
    default:
        return ALPI_ERR_UNKNOWN;
    }
}

// The calls of "the calling task" take its handle: ALPI_SUCCESS when
// `task` is the caller's task, else why not.
int is_caller(alpi_task* task) {
    if (!Runtime::get()) return ALPI_ERR_NOT_INITIALIZED;
    ThreadContext* self = this_thread_context();
    // Without a CPU the task is outside coexec (coexec_block_enter).
    if (!self || !self->work.current || self->held.cpu == coexec::shm::kNone)
        return ALPI_ERR_OUTSIDE_TASK;
    return self->work.current == as_nosv(task) ? ALPI_SUCCESS : ALPI_ERR_PARAMETER;
}

// A nosv result that is a count or an id when not negative.
int store_id(int rc, uint64_t* out) {
    if (rc < 0) return from_nosv(rc);
    *out = uint64_t(rc);
    return ALPI_SUCCESS;
}

// What a spawned task carries in its metadata.
struct Spawned {
    void (*body)(void*);
    void* body_args;
    void (*completed)(void*);
    void* completed_args;
};

void spawned_run(nosv_task_t task) {
    auto* s = static_cast<Spawned*>(nosv_get_task_metadata(task));
    s->body(s->body_args);
}

// The task and its type are freed here, once the user's callback returned:
// nosv_destroy is safe from a completed callback, and nothing of the task
// is used after it.
void spawned_completed(nosv_task_t task) {
    const Spawned s = *static_cast<Spawned*>(nosv_get_task_metadata(task));
    nosv_task_type_t type = nosv_get_task_type(task);
    s.completed(s.completed_args);
    if (nosv_destroy(task, NOSV_DESTROY_NONE) != NOSV_SUCCESS ||
        nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE) != NOSV_SUCCESS)
        std::fprintf(stderr, "coexec: could not free a task made by alpi_task_spawn\n");
}

} // namespace

COEXEC_API const char* alpi_error_string(alpi_error_t error) {
    int code = 0;
    static_assert(sizeof code == sizeof error);
    std::memcpy(&code, &error, sizeof code);
    switch (code) {
    case ALPI_SUCCESS:
        return "Operation succeeded";
    case ALPI_ERR_VERSION:
        return "Incompatible ALPI version";
    case ALPI_ERR_NOT_INITIALIZED:
        return "Runtime not initialized (nosv_init was not called)";
    case ALPI_ERR_PARAMETER:
        return "Invalid parameter";
    case ALPI_ERR_OUT_OF_MEMORY:
        return "Out of memory or shared segment space";
    case ALPI_ERR_OUTSIDE_TASK:
        return "Must be called from a running task";
    case ALPI_ERR_UNKNOWN:
        return "Unknown or internal error";
    case ALPI_ERR_FEATURE_UNKNOWN:
        return "Optional ALPI feature not supported";
    default:
        return "Error code not recognized";
    }
}

COEXEC_API int alpi_info_get(alpi_info_t query, char* buffer, size_t max_length, int* length) {
    // A C caller may pass any int (see nosv_set_suspend_mode).
    int which = 0;
    static_assert(sizeof which == sizeof query);
    std::memcpy(&which, &query, sizeof which);
    const char* text = nullptr;
    switch (which) {
    case ALPI_INFO_RUNTIME_NAME:
    case ALPI_INFO_RUNTIME_VENDOR:
        text = "coexec";
        break;
    case ALPI_INFO_VERSION:
        text = "ALPI 1.2 (coexec)";
        break;
    }
    if (!text || !buffer || max_length == 0) return ALPI_ERR_PARAMETER;
    const size_t n = std::min(std::strlen(text), max_length - 1);
    std::memcpy(buffer, text, n);
    buffer[n] = '\0';
    if (length) *length = int(n);
    return ALPI_SUCCESS;
}

COEXEC_API int alpi_feature_check(int feature_bitmask) {
    return (feature_bitmask & ~ALPI_SUPPORTED_FEATURES) ? ALPI_ERR_FEATURE_UNKNOWN : ALPI_SUCCESS;
}

COEXEC_API int alpi_version_check(int major, int minor) {
    return major == ALPI_VERSION_MAJOR && minor <= ALPI_VERSION_MINOR ? ALPI_SUCCESS
                                                                      : ALPI_ERR_VERSION;
}

COEXEC_API int alpi_version_get(int* major, int* minor) {
    if (!major || !minor) return ALPI_ERR_PARAMETER;
    *major = ALPI_VERSION_MAJOR;
    *minor = ALPI_VERSION_MINOR;
    return ALPI_SUCCESS;
}

COEXEC_API int alpi_task_self(alpi_task** task) {
    if (!task) return ALPI_ERR_PARAMETER;
    *task = reinterpret_cast<alpi_task*>(nosv_self());
    return ALPI_SUCCESS;
}

COEXEC_API int alpi_task_block(alpi_task* task) {
    if (int rc = is_caller(task)) return rc;
    return from_nosv(nosv_pause(NOSV_PAUSE_NONE));
}

COEXEC_API int alpi_task_unblock(alpi_task* task) {
    if (!task) return ALPI_ERR_PARAMETER;
    // UNLOCKED: a task that was waiting goes ahead of others of its priority.
    return from_nosv(nosv_submit(as_nosv(task), NOSV_SUBMIT_UNLOCKED));
}

COEXEC_API int alpi_task_waitfor_ns(uint64_t target_ns, uint64_t* actual_ns) {
    if (target_ns > 0) return from_nosv(nosv_waitfor(target_ns, actual_ns));
    // Zero: only let waiting work go first.
    struct timespec start {};
    clock_gettime(CLOCK_MONOTONIC, &start);
    const int rc = nosv_schedpoint(NOSV_SCHEDPOINT_NONE);
    if (rc == NOSV_SUCCESS && actual_ns) {
        struct timespec end {};
        clock_gettime(CLOCK_MONOTONIC, &end);
        *actual_ns = uint64_t(end.tv_sec - start.tv_sec) * 1'000'000'000ULL +
                     uint64_t(end.tv_nsec) - uint64_t(start.tv_nsec);
    }
    return from_nosv(rc);
}

COEXEC_API int alpi_task_events_increase(alpi_task* task, uint64_t increment) {
    if (int rc = is_caller(task)) return rc;
    if (increment == 0) return ALPI_SUCCESS; // nothing to add (nosv refuses 0)
    return from_nosv(nosv_increase_event_counter(increment));
}

COEXEC_API int alpi_task_events_test(alpi_task* task, uint64_t* has_events) {
    if (int rc = is_caller(task)) return rc;
    if (!has_events) return ALPI_ERR_PARAMETER;
    const int rc = nosv_has_events();
    if (rc < 0) return from_nosv(rc);
    *has_events = rc ? 1 : 0;
    return ALPI_SUCCESS;
}

COEXEC_API int alpi_task_events_decrease(alpi_task* task, uint64_t decrement) {
    if (!task) return ALPI_ERR_PARAMETER;
    if (decrement == 0) return ALPI_SUCCESS;
    const int rc = nosv_decrease_event_counter(as_nosv(task), decrement);
    // More than are pending: a bad argument in ALPI's terms.
    return rc == NOSV_ERR_INVALID_OPERATION ? ALPI_ERR_PARAMETER : from_nosv(rc);
}

COEXEC_API int alpi_attr_create(alpi_attr** attr) {
    if (!attr) return ALPI_ERR_PARAMETER;
    *attr = nullptr; // the default attributes
    return ALPI_SUCCESS;
}

COEXEC_API int alpi_attr_destroy(alpi_attr*) {
    return ALPI_SUCCESS;
}

COEXEC_API int alpi_attr_init(alpi_attr*) {
    return ALPI_SUCCESS;
}

COEXEC_API int alpi_attr_size(uint64_t* attr_size) {
    if (!attr_size) return ALPI_ERR_PARAMETER;
    *attr_size = 0;
    return ALPI_SUCCESS;
}

COEXEC_API int alpi_task_spawn(void (*body)(void*), void* body_args,
                               void (*completion_callback)(void*), void* completion_args,
                               const char* label, const alpi_attr*) {
    if (!body || !completion_callback) return ALPI_ERR_PARAMETER;
    // A type per task: the label is the type's, and both go together.
    nosv_task_type_t type = nullptr;
    int rc = nosv_type_init(&type, spawned_run, nullptr, spawned_completed, label, nullptr, nullptr,
                            NOSV_TYPE_INIT_NONE);
    if (rc != NOSV_SUCCESS) return from_nosv(rc);
    nosv_task_t task = nullptr;
    rc = nosv_create(&task, type, sizeof(Spawned), NOSV_CREATE_NONE);
    if (rc == NOSV_SUCCESS) {
        *static_cast<Spawned*>(nosv_get_task_metadata(task)) =
            Spawned{body, body_args, completion_callback, completion_args};
        rc = nosv_submit(task, NOSV_SUBMIT_NONE);
        if (rc == NOSV_SUCCESS) return ALPI_SUCCESS;
        nosv_destroy(task, NOSV_DESTROY_NONE);
    }
    nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE);
    return from_nosv(rc);
}

COEXEC_API int alpi_cpu_count(uint64_t* count) {
    if (!count) return ALPI_ERR_PARAMETER;
    return store_id(nosv_get_num_cpus(), count);
}

COEXEC_API int alpi_cpu_logical_id(uint64_t* logical_id) {
    if (!logical_id) return ALPI_ERR_PARAMETER;
    return store_id(nosv_get_current_logical_cpu(), logical_id);
}

COEXEC_API int alpi_cpu_system_id(uint64_t* system_id) {
    if (!system_id) return ALPI_ERR_PARAMETER;
    return store_id(nosv_get_current_system_cpu(), system_id);
}

COEXEC_API int alpi_task_suspend_mode_set(alpi_task* task, alpi_suspend_mode_t suspend_mode,
                                          uint64_t args) {
    if (int rc = is_caller(task)) return rc;
    // Read as an int: a C caller may pass any (see nosv_set_suspend_mode).
    int mode = 0;
    static_assert(sizeof mode == sizeof suspend_mode);
    std::memcpy(&mode, &suspend_mode, sizeof mode);
    if (mode < ALPI_SUSPEND_NONE || mode > ALPI_SUSPEND_EVENT_SUBMIT) return ALPI_ERR_PARAMETER;
    // The same values (asserted above); nosv_set_suspend_mode checks args.
    return from_nosv(nosv_set_suspend_mode(nosv_suspend_mode_t(mode), args));
}

COEXEC_API int alpi_task_suspend(alpi_task* task) {
    if (int rc = is_caller(task)) return rc;
    return from_nosv(nosv_suspend());
}
