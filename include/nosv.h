/* coexec: the nOS-V-compatible C API.
 *
 * A program written against nOS-V 4.x's documented API (this subset) compiles
 * against this header unchanged and links with -lnosv or -lcoexec. All
 * processes of one user (by default) that call nosv_init() share one scheduler
 * in shared memory, so at most one coexec thread runs on each CPU at a time. */
#ifndef NOSV_H
#define NOSV_H

#define __NOSV__
#define __COEXEC__

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nosv/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest metadata block that nosv_create() can embed in a task. */
#define NOSV_MAX_METADATA_SIZE 4096

#define __ZEROBITS ((uint64_t)0)
#define __BIT(n) (((uint64_t)1) << (n))

typedef uint64_t nosv_flags_t;

struct nosv_task_type;
typedef struct nosv_task_type *nosv_task_type_t;
struct nosv_task;
typedef struct nosv_task *nosv_task_t;
typedef struct nosv_affinity nosv_affinity_t;

typedef void (*nosv_task_run_callback_t)(nosv_task_t);
typedef void (*nosv_task_end_callback_t)(nosv_task_t);
typedef void (*nosv_task_completed_callback_t)(nosv_task_t);
typedef uint64_t (*nosv_cost_function_t)(nosv_task_t);

/* ---- Initialisation ---------------------------------------------------- */

/* Joins the shared instance, creating the segment if needed. Calls nest: each
 * successful nosv_init() needs one nosv_shutdown(), from the same thread
 * (several threads may each init and shut down). Returns NOSV_ERR_UNKNOWN
 * when the segment exists but is foreign or corrupt, and
 * NOSV_ERR_OUT_OF_MEMORY when the segment has no free process slot, or no
 * free thread slot for the process's first worker. */
int nosv_init(void);

/* Ends one nosv_init() of the calling thread, and leaves the instance once
 * the nesting count drops to zero: every worker thread is joined and every
 * CPU is handed back. Tasks still ready are dropped; the caller must have
 * waited for its work. A thread with no nosv_init() of its own to end gets
 * NOSV_ERR_INVALID_OPERATION and changes nothing (the threads that did init
 * can still shut down), unless an adapter's coexec_init_quiet() is pending:
 * that one belongs to the process and any thread may end it. The last
 * shutdown from a task running on a coexec worker returns
 * NOSV_ERR_INVALID_OPERATION too (a worker cannot join itself) and leaves
 * the count as it was. NOSV_ERR_NOT_INITIALIZED when nothing is joined. */
int nosv_shutdown(void);

/* The task bound to the calling thread, or NULL outside a task. */
nosv_task_t nosv_self(void);

/* ---- Task types -------------------------------------------------------- */

#define NOSV_TYPE_INIT_NONE __ZEROBITS
/* A type for attached threads: it must have no callbacks. */
#define NOSV_TYPE_INIT_EXTERNAL __BIT(0)

/* Creates a task type. `run` is required unless NOSV_TYPE_INIT_EXTERNAL is
 * given; `end` runs after `run` returns; `completed` runs once `run` has
 * ended and the task's event counter is zero. `label` is copied (NULL is
 * allowed). `metadata` is an opaque pointer returned by
 * nosv_get_task_type_metadata(). `cost` is accepted and ignored. */
int nosv_type_init(nosv_task_type_t *type, nosv_task_run_callback_t run_callback,
                   nosv_task_end_callback_t end_callback,
                   nosv_task_completed_callback_t completed_callback, const char *label,
                   void *metadata, nosv_cost_function_t cost_function, nosv_flags_t flags);

#define NOSV_TYPE_DESTROY_NONE __ZEROBITS

/* Destroys a type. Tasks of that type must have been destroyed first. */
int nosv_type_destroy(nosv_task_type_t type, nosv_flags_t flags);

/* ---- Tasks ------------------------------------------------------------- */

#define NOSV_CREATE_NONE __ZEROBITS

/* Creates a task of `type` with `metadata_size` bytes (at most
 * NOSV_MAX_METADATA_SIZE) of zeroed metadata. The task is not ready until
 * nosv_submit(). */
int nosv_create(nosv_task_t *task, nosv_task_type_t type, size_t metadata_size,
                nosv_flags_t flags);

#define NOSV_DESTROY_NONE __ZEROBITS

/* Frees a task that is not ready, running or paused. Safe to call from the
 * task's own completed callback. Returns NOSV_ERR_BUSY while the task has not
 * completed (ready, running, paused, or events pending), except that a task
 * suspended under NOSV_SUSPEND_MODE_NONE or _TIMEOUT_SUBMIT may be destroyed
 * without being resumed (its timer is cancelled), as in nOS-V. */
int nosv_destroy(nosv_task_t task, nosv_flags_t flags);

#define NOSV_SUBMIT_NONE __ZEROBITS
/* Hint: the task was just unblocked; it goes ahead of others of its priority. */
#define NOSV_SUBMIT_UNLOCKED __BIT(0)
/* The calling task waits (without a CPU) until the submitted task completes. */
#define NOSV_SUBMIT_BLOCKING __BIT(1)
/* Run the task next on the CPU the calling thread holds, before the tasks
 * already ready there, when the thread next leaves that CPU: when the calling
 * task ends, pauses or yields, or, from a completed callback on a worker, as
 * soon as the callback returns. A later IMMEDIATE submit from the same thread
 * takes the place (the earlier task becomes an ordinary ready one). From a
 * thread holding no CPU, or for a task whose affinity excludes that CPU or
 * that has a thread of its own (a paused one), it is an ordinary submit. */
#define NOSV_SUBMIT_IMMEDIATE __BIT(2)
/* Run the task now, on the calling thread, before returning. */
#define NOSV_SUBMIT_INLINE __BIT(3)
/* End a nosv_waitfor() of the task early; only that (it never resumes a
 * pause or makes the task ready). A task not in nosv_waitfor yet (not run
 * yet, or running) keeps the wake: its next nosv_waitfor returns at once. */
#define NOSV_SUBMIT_DEADLINE_WAKE __BIT(4)

/* Makes `task` ready, or resumes it when it is paused. Submits count against
 * pauses (nOS-V's blocking count): a submit that reaches a task that is not
 * paused (ready, running, sleeping in nosv_waitfor, blocked) is kept, and
 * each one kept makes one later nosv_pause() of the task return at once; a
 * task may so be submitted several times before it pauses again. Submits
 * still kept when the task's body ends are dropped, and a completed task may
 * be submitted again (it runs anew). A task whose body ended but whose
 * events are pending is not complete: NOSV_ERR_INVALID_OPERATION. A new task
 * when every worker of the process is blocked and the segment has no free
 * thread slot for another returns NOSV_ERR_OUT_OF_MEMORY. */
int nosv_submit(nosv_task_t task, nosv_flags_t flags);

#define NOSV_PAUSE_NONE __ZEROBITS

/* Blocks the calling task until it is submitted again; its CPU goes to other
 * work meanwhile. Returns at once, keeping the CPU, when a submit of the task
 * is already kept (see nosv_submit). Only from a task. */
int nosv_pause(nosv_flags_t flags);

/* Sleeps for `target_ns` without holding a CPU, then waits for a CPU again.
 * `actual_ns` (may be NULL) receives the time the task was away. A submit with
 * NOSV_SUBMIT_DEADLINE_WAKE ends the sleep early; one that came earlier and
 * that no waitfor used yet (even one sent before the task ran) makes it
 * return at once, keeping the CPU. A wake no waitfor used is dropped when
 * the task's body ends. A plain submit meanwhile does not end the sleep: it is kept for the
 * next nosv_pause. Only from a task. */
int nosv_waitfor(uint64_t target_ns, uint64_t *actual_ns);

#define NOSV_YIELD_NONE __ZEROBITS
#define NOSV_YIELD_NOFLUSH __BIT(0)

/* Lets every other task that is ready for this CPU run first, then continues.
 * Returns at once when no other task is waiting. Only from a task. */
int nosv_yield(nosv_flags_t flags);

#define NOSV_SCHEDPOINT_NONE __ZEROBITS

/* A point where the scheduler may switch: when this process's quantum on the
 * CPU is spent and another process waits for it; when another task of this
 * process waits for the CPU and the caller's thread has held it for a
 * quantum (the quantum applies to tasks too, as in nOS-V: tasks that
 * schedpoint rotate); or when a higher-priority task waits. The caller then
 * stays ready behind the others, as in nosv_yield(). Cheap when nothing is
 * waiting. Only from a task. */
int nosv_schedpoint(nosv_flags_t flags);

/* ---- Parallel tasks and the submit window (nOS-V 4.1) ------------------ */

/* nosv_create() flag: a parallel task. Submitted with a degree N > 1, its run
 * callback runs N times (N executions), concurrently on as many CPUs as are
 * free, each with an id in [0, N) (nosv_get_execution_id). The end callback
 * runs after each execution's run callback; the completed callback runs once,
 * when every execution has ended and the event counter is zero. Its
 * executions may not pause, yield, schedpoint, waitfor or submit BLOCKING,
 * nor call coexec_block_enter, coexec_lend_cpu or coexec_keep_cpu
 * (NOSV_ERR_INVALID_OPERATION); a running execution is not preempted (other
 * processes get its CPU between executions). The task cannot be submitted INLINE or
 * with DEADLINE_WAKE (idem); IMMEDIATE is an ordinary submit for it. A
 * degree of 1 makes it an ordinary task. */
#define NOSV_CREATE_PARALLEL __BIT(0)

/* The task's degree: 1 unless set; negative (minus the degree) once
 * cancelled, until the task is submitted again. 0 for an invalid handle. */
int32_t nosv_get_task_degree(nosv_task_t task);
/* Sets the number of executions of a parallel task; set it before
 * submitting. Ignored, with a message on stderr, for a task created without
 * NOSV_CREATE_PARALLEL or for degree <= 0. */
void nosv_set_task_degree(nosv_task_t task, int32_t degree);
/* The calling execution's id, in [0, degree); 0 in an ordinary task. Outside a
 * task, NOSV_ERR_OUTSIDE_TASK converted to uint32_t (as nOS-V does). */
uint32_t nosv_get_execution_id(void);

#define NOSV_CANCEL_NONE __ZEROBITS

/* Cancels the calling task's executions that have not started: none starts
 * once this returns (the running ones finish); the task completes when the
 * started ones end. Also allowed in an ordinary task (its degree reads -1
 * afterwards; nothing else changes). NOSV_ERR_INVALID_OPERATION when the
 * task was cancelled already in this run. Only from a task. */
int nosv_cancel(nosv_flags_t flags);

/* Sets the calling task's submit window (size > 0, 1 by default): its
 * nosv_submit() calls (but BLOCKING, INLINE, IMMEDIATE and DEADLINE_WAKE
 * ones) are held back, not ready yet, until `size` are held; then all become
 * ready at once. Held submits also become ready at nosv_flush_submit_window(),
 * when the size is set to 1, when the task pauses, yields (without
 * NOSV_YIELD_NOFLUSH), schedpoints, waits, blocks (coexec_block_enter,
 * coexec_lend_cpu, coexec_keep_cpu), detaches, submits INLINE, and when its
 * body (or execution) ends. A smaller size takes effect at the next submit.
 * The size lasts until the body ends (an attached thread's task: until it
 * detaches); each execution of a parallel task has a window of its own.
 * Only from a task. */
int nosv_set_submit_window_size(size_t submit_window_size);
/* Makes the calling task's held submits ready now. Only from a task. */
int nosv_flush_submit_window(void);

/* ---- Events ------------------------------------------------------------ */

/* Adds `increment` pending events to the calling task: its completed callback
 * is delayed until they are all decreased. Only from a task. */
int nosv_increase_event_counter(uint64_t increment);

/* Removes `decrement` events from `task`; the one that reaches zero after the
 * task's run ended completes the task. Callable from any thread. */
int nosv_decrease_event_counter(nosv_task_t task, uint64_t decrement);

/* Nonzero when the calling task has pending events (a hint: other threads may
 * decrease them at any time). Only from a task. */
int nosv_has_events(void);

/* Nonzero when the event API was ever used on `task`. */
int nosv_task_had_events(nosv_task_t task);

/* ---- Attaching foreign threads ---------------------------------------- */

#define NOSV_ATTACH_NONE __ZEROBITS
#define NOSV_ATTACH_INSTRUMENT __BIT(0)

/* Turns the calling thread into a task (stored in *task). Blocks until the
 * scheduler grants a CPU, then binds the thread to it. `affinity` may be NULL.
 * The binding is hidden: while attached, sched_getaffinity and
 * pthread_getaffinity_np (from this thread or another one of the process)
 * show the mask the thread had before attach, and sched_setaffinity /
 * pthread_setaffinity_np remember a new mask without moving the thread. A
 * worker running a task shows the mask of the thread that called nosv_init.
 * A thread that either one creates with default attributes (pthread_create
 * with NULL attributes, std::thread) starts from that visible mask.
 * This needs libcoexec before libc in the lookup order (-lnosv, -lcoexec or
 * LD_PRELOAD); see docs/affinity.md.
 * `label` names the thread in `coexec top` (copied; NULL means "attached").
 * Returns NOSV_ERR_OUT_OF_MEMORY when the segment has no free thread slot. */
int nosv_attach(nosv_task_t *task, nosv_affinity_t *affinity, const char *label,
                nosv_flags_t flags);

#define NOSV_DETACH_NONE __ZEROBITS
/* Keep the CPU binding instead of restoring the thread's affinity: the one
 * it had at attach, or the last one set since (see nosv_attach). */
#define NOSV_DETACH_NO_RESTORE_AFFINITY __BIT(0)
#define NOSV_DETACH_INSTRUMENT __BIT(1)

/* Gives the CPU back and ends the attached task of the calling thread, whose
 * kernel affinity becomes the mask it showed while attached. */
int nosv_detach(nosv_flags_t flags);

/* ---- Joinable tasks ---------------------------------------------------- */

/* A nosv_create() flag: the task can be waited for with nosv_join,
 * nosv_join_all, nosv_wait and nosv_wait_all, and hand a result to its
 * joiner with nosv_set_result. It must not destroy itself (from its
 * completed callback nosv_destroy returns NOSV_ERR_BUSY): its joiner
 * does, or, after a nosv_wait, whoever calls nosv_destroy. */
#define NOSV_CREATE_JOINABLE __BIT(1)

/* Waits until the joinable `task` completes the run last submitted (its
 * completed callback has returned), stores the value its body gave
 * nosv_set_result (NULL if none) in `*resval` (`resval` may be NULL), and
 * destroys the task. `timeout` is in nanoseconds: (uint64_t)-1 waits
 * without limit, 0 only checks, anything else waits at most that long.
 * Callable from a task, which waits without its CPU (the CPU runs other
 * work meanwhile), from an attached thread (likewise), and from a thread
 * outside coexec, which sleeps. Returns NOSV_ERR_TIMEOUT when the run has
 * not completed in time (the task stays, and may be joined again);
 * NOSV_ERR_INVALID_PARAMETER for a task that is not joinable or that
 * another thread is joining or waiting for (one joiner at a time);
 * NOSV_ERR_INVALID_OPERATION for the calling task itself, a task never
 * submitted, or a wait with a timeout from a coexec worker outside a task
 * (a completed callback), which cannot give its CPU away. */
int nosv_join(nosv_task_t task, void **resval, uint64_t timeout);

/* nosv_join for `ntasks` distinct joinable tasks, with one time limit for
 * all. `resvals` (may be NULL) receives each task's result at the same
 * index. All or nothing: on any error, NOSV_ERR_TIMEOUT included, no task
 * is destroyed and no result is stored. */
int nosv_join_all(nosv_task_t *tasks, void **resvals, size_t ntasks, uint64_t timeout);

/* As nosv_join, but neither gathers the result nor destroys the task: it
 * may be submitted again, and must be destroyed with nosv_destroy. */
int nosv_wait(nosv_task_t task, uint64_t timeout);

/* As nosv_join_all, without results and without destroying the tasks. */
int nosv_wait_all(nosv_task_t *tasks, size_t ntasks, uint64_t timeout);

/* Sets the result of the calling task's current run, which nosv_join
 * gathers. Only from a task (NOSV_ERR_OUTSIDE_TASK otherwise); a task that
 * is not joinable gets NOSV_ERR_INVALID_OPERATION. Each submit of a new
 * run resets the result to NULL. */
int nosv_set_result(void *resval);

/* ---- Suspend --------------------------------------------------------- */

/* What happens to a task whose body returned after nosv_suspend(). */
typedef enum nosv_suspend_mode {
	/* Nothing: the task waits for a nosv_submit, which runs its body again. */
	NOSV_SUSPEND_MODE_NONE = 0,
	/* It is ready again at once. args 0: it runs next on the same CPU;
	 * args 1: as nosv_yield, after every task already ready there. */
	NOSV_SUSPEND_MODE_SUBMIT,
	/* It is ready again after args nanoseconds (a nosv_submit before then
	 * resumes it earlier). */
	NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT,
	/* It is ready again once its event counter is zero (at once if it is
	 * already); args is ignored. */
	NOSV_SUSPEND_MODE_EVENT_SUBMIT,
} nosv_suspend_mode_t;

/* Sets what the calling task's next suspension does; the mode stays until
 * set again or the task completes. Only from a task. NOSV_ERR_INVALID_PARAMETER
 * for an unknown mode, or SUBMIT with args other than 0 or 1. */
int nosv_set_suspend_mode(nosv_suspend_mode_t suspend_mode, uint64_t args);

/* Marks the calling task: when its body returns, the task is suspended
 * rather than completed (its end and completed callbacks do not run, its
 * events stay pending) and resumed as its suspend mode says, when its body
 * runs again from the start, maybe on another thread. A nosv_submit of a
 * suspended task resumes it (but for EVENT_SUBMIT, which refuses it with
 * NOSV_ERR_INVALID_OPERATION while events are pending); a submit that came
 * while the body still ran resumes it at once under NONE and TIMEOUT_SUBMIT.
 * Only from a task with a body: NOSV_ERR_INVALID_OPERATION from an attached
 * thread or from an execution of a parallel task. */
int nosv_suspend(void);

/* ---- Getters and setters ---------------------------------------------- */

/* Pointer to the task's metadata, or NULL if none was requested. */
void *nosv_get_task_metadata(nosv_task_t task);
nosv_task_type_t nosv_get_task_type(nosv_task_t task);
/* Higher priorities run first. Set it before submitting. */
int nosv_get_task_priority(nosv_task_t task);
void nosv_set_task_priority(nosv_task_t task, int priority);

nosv_task_run_callback_t nosv_get_task_type_run_callback(nosv_task_type_t type);
nosv_task_end_callback_t nosv_get_task_type_end_callback(nosv_task_type_t type);
nosv_task_completed_callback_t nosv_get_task_type_completed_callback(nosv_task_type_t type);
const char *nosv_get_task_type_label(nosv_task_type_t type);
void *nosv_get_task_type_metadata(nosv_task_type_t type);

#ifdef __cplusplus
}
#endif

#include "nosv/affinity.h"
#include "nosv/hwinfo.h"

#endif /* NOSV_H */
