/* coexec: ALPI 1.2, the low-level interface that task-aware libraries
 * (TAMPI, TAGASPI, TACUDA, ...) call to block and resume tasks, delay their
 * completion with events, spawn helper tasks and read the CPU they run on.
 *
 * Names, types, values and meaning follow ALPI 1.2 as nOS-V 4.x provides
 * it, so that such a library builds and runs against coexec unchanged.
 * Every function returns ALPI_SUCCESS (0) or a positive alpi_error_t code
 * (alpi_error_string() explains it); tasks here are nosv_task_t handles.
 * Callable from any thread unless a contract says "only from a task". */
#ifndef ALPI_INTERFACE_H
#define ALPI_INTERFACE_H

#include <stddef.h>
#include <stdint.h>

#ifndef ALPI_FEATURE_BLOCKING
#define ALPI_FEATURE_BLOCKING (1 << 0)
#define ALPI_FEATURE_EVENTS (1 << 1)
#define ALPI_FEATURE_RESOURCES (1 << 2)
#define ALPI_FEATURE_SUSPEND (1 << 3)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles: never dereferenced by the caller. */
struct alpi_task;
struct alpi_attr;

/* The interface version this header describes and the library provides. */
#define ALPI_VERSION_MAJOR 1
#define ALPI_VERSION_MINOR 2

typedef enum {
	ALPI_SUCCESS = 0,
	ALPI_ERR_VERSION,         /* the requested version is not provided */
	ALPI_ERR_NOT_INITIALIZED, /* nosv_init() has not been called */
	ALPI_ERR_PARAMETER,       /* an argument is invalid */
	ALPI_ERR_OUT_OF_MEMORY,   /* memory (or a shared-segment slot) ran out */
	ALPI_ERR_OUTSIDE_TASK,    /* the call needs a running task */
	ALPI_ERR_UNKNOWN,         /* anything else */
	ALPI_ERR_FEATURE_UNKNOWN, /* a requested optional feature is not provided */
	ALPI_ERR_MAX,             /* one past the last code */
} alpi_error_t;

/* What alpi_info_get() reports. */
typedef enum {
	ALPI_INFO_RUNTIME_NAME,   /* "coexec" */
	ALPI_INFO_RUNTIME_VENDOR, /* "coexec" */
	ALPI_INFO_VERSION,        /* "ALPI 1.2 (coexec)" */
} alpi_info_t;

/* A static description of `error`; "Error code not recognized" for a value
 * that is not an alpi_error_t. Never freed by the caller. */
const char *alpi_error_string(alpi_error_t error);

/* Copies the text for `query` into `buffer` (at most max_length bytes,
 * NUL included, truncated if longer) and stores its length without the NUL
 * in *length when length is not NULL. ALPI_ERR_PARAMETER for an unknown
 * query, a NULL buffer or max_length 0. For reports only: compare versions
 * with alpi_version_check(). */
int alpi_info_get(alpi_info_t query, char *buffer, size_t max_length, int *length);

/* ALPI_SUCCESS when every feature bit in `feature_bitmask` is provided
 * (see nosv/alpi-defs.h), ALPI_ERR_FEATURE_UNKNOWN otherwise. */
int alpi_feature_check(int feature_bitmask);

/* ALPI_SUCCESS when a caller built for major.minor can use this library:
 * the same major and a minor no newer than ALPI_VERSION_MINOR. Otherwise
 * ALPI_ERR_VERSION. */
int alpi_version_check(int major, int minor);

/* Stores the provided version. ALPI_ERR_PARAMETER for a NULL pointer. */
int alpi_version_get(int *major, int *minor);

/* Stores the calling thread's task (NULL outside a task: a plain thread, or
 * before nosv_init). ALPI_ERR_PARAMETER for a NULL pointer. */
int alpi_task_self(struct alpi_task **task);

/* Blocks the calling task, whose handle `task` must be, until a matching
 * alpi_task_unblock(); its CPU runs other work meanwhile. Returns at once
 * when that unblock came first. Only from a task: ALPI_ERR_OUTSIDE_TASK;
 * ALPI_ERR_PARAMETER when `task` is not the caller. */
int alpi_task_block(struct alpi_task *task);

/* Resumes `task` from its matching alpi_task_block(), or, when it has not
 * blocked yet, makes that block return at once (one unblock may come ahead
 * of its block). From any thread, also one that is not a task. The task
 * may resume on another CPU, and after this returns.
 * ALPI_ERR_PARAMETER for a NULL handle. */
int alpi_task_unblock(struct alpi_task *task);

/* Sleeps the calling task for about target_ns without holding a CPU (0: a
 * scheduling point only) and stores the time it was away in *actual_ns
 * when that is not NULL. Not ended early by alpi_task_unblock. Only from a
 * task: ALPI_ERR_OUTSIDE_TASK. */
int alpi_task_waitfor_ns(uint64_t target_ns, uint64_t *actual_ns);

/* Adds `increment` pending events to the calling task (`task` must be it):
 * its body may end, but it completes only once alpi_task_events_decrease
 * has removed them all. Thread-safe with decreases. Only from a task:
 * ALPI_ERR_OUTSIDE_TASK; ALPI_ERR_PARAMETER when `task` is not the caller. */
int alpi_task_events_increase(struct alpi_task *task, uint64_t increment);

/* Stores 1 in *has_events when the calling task (`task` must be it) has
 * pending events, 0 otherwise. A 1 is a hint (another thread may decrease
 * them meanwhile); a 0 is exact. Only from a task. */
int alpi_task_events_test(struct alpi_task *task, uint64_t *has_events);

/* Removes `decrement` events from `task`, from any thread. The decrease
 * that leaves none after the task's body ended completes the task.
 * ALPI_ERR_PARAMETER for a NULL handle or more than are pending. */
int alpi_task_events_decrease(struct alpi_task *task, uint64_t decrement);

/* Task attributes. coexec defines none yet: the default attributes are the
 * NULL handle, alpi_attr_create stores NULL, alpi_attr_size stores 0, and
 * init and destroy accept any handle. */
int alpi_attr_create(struct alpi_attr **attr);
int alpi_attr_destroy(struct alpi_attr *attr);
int alpi_attr_init(struct alpi_attr *attr);
int alpi_attr_size(uint64_t *attr_size);

/* Starts an independent task that runs body(body_args) on one of the
 * process's workers. Once it completes (body returned and its events are
 * gone), completion_callback(completion_args) runs and the task is freed.
 * `label` (copied; may be NULL) names it in `coexec top`; `attr` may be
 * NULL. From any thread. ALPI_ERR_PARAMETER when body or
 * completion_callback is NULL; ALPI_ERR_OUT_OF_MEMORY when no task or
 * worker can be had. */
int alpi_task_spawn(void (*body)(void *), void *body_args, void (*completion_callback)(void *),
                    void *completion_args, const char *label, const struct alpi_attr *attr);

/* Stores the number of CPUs this instance manages (nosv_get_num_cpus). */
int alpi_cpu_count(uint64_t *count);

/* Stores the logical index, in [0, count), of the CPU the calling task runs
 * on (nosv_get_current_logical_cpu). Only from a task. */
int alpi_cpu_logical_id(uint64_t *logical_id);

/* Stores the operating system's id of that CPU. Only from a task. */
int alpi_cpu_system_id(uint64_t *system_id);

/* What a suspended task does once its body returned; the same values and
 * meaning as nosv_suspend_mode_t (see nosv_set_suspend_mode in nosv.h). */
typedef enum {
	ALPI_SUSPEND_NONE = 0,       /* waits for alpi_task_unblock */
	ALPI_SUSPEND_SUBMIT,         /* ready at once: args 0 next, 1 behind the rest */
	ALPI_SUSPEND_TIMEOUT_SUBMIT, /* ready after args nanoseconds */
	ALPI_SUSPEND_EVENT_SUBMIT,   /* ready once its events are all decreased */
} alpi_suspend_mode_t;

/* Sets the suspend mode of the calling task (`task` must be it). Only from
 * a task. ALPI_ERR_PARAMETER for an unknown mode. */
int alpi_task_suspend_mode_set(struct alpi_task *task, alpi_suspend_mode_t suspend_mode,
                               uint64_t args);

/* Marks the calling task (`task` must be it): when its body returns it is
 * suspended, not completed, and its body runs again when its mode says.
 * A suspended task with mode NONE is resumed by alpi_task_unblock. Only
 * from a task with a body (not an attached thread: ALPI_ERR_UNKNOWN). */
int alpi_task_suspend(struct alpi_task *task);

#ifdef __cplusplus
}
#endif

#endif /* ALPI_INTERFACE_H */
