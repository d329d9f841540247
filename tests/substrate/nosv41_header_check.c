/* Source compatibility with nOS-V 4.1's api/nosv.h (and nosv/error.h,
 * which it includes): this file declares nothing of its own. It names
 * every function of that header through a pointer of the exact type nOS-V
 * declares, so a prototype that differs fails to compile (the build uses
 * -Werror=incompatible-pointer-types), and checks every constant's value
 * with a static assertion. Linking it proves libcoexec exports each
 * function; running it (ctest api.nosv41-header) checks that none is
 * NULL. */
#include <nosv.h>

#include <stdio.h>
#include <string.h>

#define SAME(a, b) _Static_assert((a) == (b), #a " differs from nOS-V 4.1")

/* ---- Constants ---------------------------------------------------------- */
#ifndef __NOSV__
#error "nosv.h must define __NOSV__"
#endif
SAME(NOSV_MAX_METADATA_SIZE, 4096);
SAME(__ZEROBITS, (uint64_t)0);
SAME(__BIT(5), (uint64_t)32);
SAME(sizeof(nosv_flags_t), 8);
SAME(NOSV_TYPE_INIT_NONE, 0);
SAME(NOSV_TYPE_INIT_EXTERNAL, (uint64_t)1 << 0);
SAME(NOSV_TYPE_DESTROY_NONE, 0);
SAME(NOSV_CREATE_NONE, 0);
SAME(NOSV_CREATE_JOINABLE, (uint64_t)1 << 1);
SAME(NOSV_SUBMIT_NONE, 0);
SAME(NOSV_SUBMIT_UNLOCKED, (uint64_t)1 << 0);
SAME(NOSV_SUBMIT_BLOCKING, (uint64_t)1 << 1);
SAME(NOSV_SUBMIT_IMMEDIATE, (uint64_t)1 << 2);
SAME(NOSV_SUBMIT_INLINE, (uint64_t)1 << 3);
SAME(NOSV_SUBMIT_DEADLINE_WAKE, (uint64_t)1 << 4);
SAME(NOSV_PAUSE_NONE, 0);
SAME(NOSV_YIELD_NONE, 0);
SAME(NOSV_YIELD_NOFLUSH, (uint64_t)1 << 0);
SAME(NOSV_SCHEDPOINT_NONE, 0);
SAME(NOSV_DESTROY_NONE, 0);
SAME(NOSV_ATTACH_NONE, 0);
SAME(NOSV_ATTACH_INSTRUMENT, (uint64_t)1 << 0);
SAME(NOSV_DETACH_NONE, 0);
SAME(NOSV_DETACH_NO_RESTORE_AFFINITY, (uint64_t)1 << 0);
SAME(NOSV_DETACH_INSTRUMENT, (uint64_t)1 << 1);

/* nosv/error.h */
SAME(NOSV_SUCCESS, 0);
SAME(NOSV_ERR_INVALID_CALLBACK, -1);
SAME(NOSV_ERR_INVALID_METADATA_SIZE, -2);
SAME(NOSV_ERR_INVALID_OPERATION, -3);
SAME(NOSV_ERR_INVALID_PARAMETER, -4);
SAME(NOSV_ERR_NOT_INITIALIZED, -5);
SAME(NOSV_ERR_OUT_OF_MEMORY, -6);
SAME(NOSV_ERR_OUTSIDE_TASK, -7);
SAME(NOSV_ERR_UNKNOWN, -8);
SAME(NOSV_ERR_BUSY, -9);
SAME(NOSV_ERR_TIMEOUT, -10);
SAME(NOSV_ERR_MAX, -11);

SAME(NOSV_CREATE_PARALLEL, (uint64_t)1 << 0);
SAME(NOSV_CANCEL_NONE, 0);
SAME(NOSV_SUSPEND_MODE_NONE, 0);
SAME(NOSV_SUSPEND_MODE_SUBMIT, 1);
SAME(NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT, 2);
SAME(NOSV_SUSPEND_MODE_EVENT_SUBMIT, 3);

/* ---- Types -------------------------------------------------------------- */
static nosv_task_run_callback_t run_cb_type;
static nosv_task_end_callback_t end_cb_type;
static nosv_task_completed_callback_t completed_cb_type;
static nosv_cost_function_t cost_type;
static void (*run_cb_exact)(nosv_task_t);
static uint64_t (*cost_exact)(nosv_task_t);
static nosv_err_t err_type = NOSV_SUCCESS;
static nosv_affinity_t *affinity_type;

/* ---- Functions, with nOS-V 4.1's exact types ---------------------------- */
struct entry {
	const char *name;
	void (*fn)(void);
};
#define ENTRY(f) {#f, (void (*)(void))(f)}

/* Each assignment below must compile without a warning. */
static void *(*p_get_task_metadata)(nosv_task_t) = nosv_get_task_metadata;
static nosv_task_type_t (*p_get_task_type)(nosv_task_t) = nosv_get_task_type;
static int (*p_get_task_priority)(nosv_task_t) = nosv_get_task_priority;
static void (*p_set_task_priority)(nosv_task_t, int) = nosv_set_task_priority;
static nosv_task_run_callback_t (*p_get_task_type_run_callback)(nosv_task_type_t) =
	nosv_get_task_type_run_callback;
static nosv_task_end_callback_t (*p_get_task_type_end_callback)(nosv_task_type_t) =
	nosv_get_task_type_end_callback;
static nosv_task_completed_callback_t (*p_get_task_type_completed_callback)(nosv_task_type_t) =
	nosv_get_task_type_completed_callback;
static const char *(*p_get_task_type_label)(nosv_task_type_t) = nosv_get_task_type_label;
static void *(*p_get_task_type_metadata)(nosv_task_type_t) = nosv_get_task_type_metadata;
static int (*p_init)(void) = nosv_init;
static int (*p_shutdown)(void) = nosv_shutdown;
static nosv_task_t (*p_self)(void) = nosv_self;
static int (*p_type_init)(nosv_task_type_t *, nosv_task_run_callback_t, nosv_task_end_callback_t,
			  nosv_task_completed_callback_t, const char *, void *,
			  nosv_cost_function_t, nosv_flags_t) = nosv_type_init;
static int (*p_type_destroy)(nosv_task_type_t, nosv_flags_t) = nosv_type_destroy;
static int (*p_create)(nosv_task_t *, nosv_task_type_t, size_t, nosv_flags_t) = nosv_create;
static int (*p_submit)(nosv_task_t, nosv_flags_t) = nosv_submit;
static int (*p_pause)(nosv_flags_t) = nosv_pause;
static int (*p_waitfor)(uint64_t, uint64_t *) = nosv_waitfor;
static int (*p_yield)(nosv_flags_t) = nosv_yield;
static int (*p_schedpoint)(nosv_flags_t) = nosv_schedpoint;
static int (*p_destroy)(nosv_task_t, nosv_flags_t) = nosv_destroy;
static int (*p_increase_event_counter)(uint64_t) = nosv_increase_event_counter;
static int (*p_has_events)(void) = nosv_has_events;
static int (*p_decrease_event_counter)(nosv_task_t, uint64_t) = nosv_decrease_event_counter;
static int (*p_task_had_events)(nosv_task_t) = nosv_task_had_events;
static int (*p_attach)(nosv_task_t *, nosv_affinity_t *, const char *, nosv_flags_t) = nosv_attach;
static int (*p_detach)(nosv_flags_t) = nosv_detach;
static int (*p_join)(nosv_task_t, void **, uint64_t) = nosv_join;
static int (*p_join_all)(nosv_task_t *, void **, size_t, uint64_t) = nosv_join_all;
static int (*p_wait)(nosv_task_t, uint64_t) = nosv_wait;
static int (*p_wait_all)(nosv_task_t *, size_t, uint64_t) = nosv_wait_all;
static int (*p_set_result)(void *) = nosv_set_result;
static const char *(*p_get_error_string)(int) = nosv_get_error_string;
/* Parallel tasks and nosv_cancel. */
static int32_t (*p_get_task_degree)(nosv_task_t) = nosv_get_task_degree;
static void (*p_set_task_degree)(nosv_task_t, int32_t) = nosv_set_task_degree;
static uint32_t (*p_get_execution_id)(void) = nosv_get_execution_id;
static int (*p_cancel)(nosv_flags_t) = nosv_cancel;
/* The submit window. */
static int (*p_set_submit_window_size)(size_t) = nosv_set_submit_window_size;
static int (*p_flush_submit_window)(void) = nosv_flush_submit_window;
/* nosv_suspend and its modes. */
static nosv_suspend_mode_t suspend_mode_type = NOSV_SUSPEND_MODE_NONE;
static int (*p_set_suspend_mode)(nosv_suspend_mode_t, uint64_t) = nosv_set_suspend_mode;
static int (*p_suspend)(void) = nosv_suspend;

#define ENTRIES { \
	ENTRY(p_get_task_metadata), \
	ENTRY(p_get_task_type), \
	ENTRY(p_get_task_priority), \
	ENTRY(p_set_task_priority), \
	ENTRY(p_get_task_type_run_callback), \
	ENTRY(p_get_task_type_end_callback), \
	ENTRY(p_get_task_type_completed_callback), \
	ENTRY(p_get_task_type_label), \
	ENTRY(p_get_task_type_metadata), \
	ENTRY(p_init), \
	ENTRY(p_shutdown), \
	ENTRY(p_self), \
	ENTRY(p_type_init), \
	ENTRY(p_type_destroy), \
	ENTRY(p_create), \
	ENTRY(p_submit), \
	ENTRY(p_pause), \
	ENTRY(p_waitfor), \
	ENTRY(p_yield), \
	ENTRY(p_schedpoint), \
	ENTRY(p_destroy), \
	ENTRY(p_increase_event_counter), \
	ENTRY(p_has_events), \
	ENTRY(p_decrease_event_counter), \
	ENTRY(p_task_had_events), \
	ENTRY(p_attach), \
	ENTRY(p_detach), \
	ENTRY(p_join), \
	ENTRY(p_join_all), \
	ENTRY(p_wait), \
	ENTRY(p_wait_all), \
	ENTRY(p_set_result), \
	ENTRY(p_get_error_string), \
	ENTRY(p_get_task_degree), \
	ENTRY(p_set_task_degree), \
	ENTRY(p_get_execution_id), \
	ENTRY(p_cancel), \
	ENTRY(p_set_submit_window_size), \
	ENTRY(p_flush_submit_window), \
	ENTRY(p_set_suspend_mode), \
	ENTRY(p_suspend) \
}

int main(void)
{
	int missing = 0;
	/* The pointers are static and could be folded: read them through a
	 * volatile copy of the table's address. */
	const struct entry entries[] = ENTRIES;
	const struct entry *volatile table = entries;
	const size_t n = sizeof(entries) / sizeof(entries[0]);
	for (size_t i = 0; i < n; ++i) {
		if (!table[i].fn) {
			fprintf(stderr, "%s is NULL\n", table[i].name);
			++missing;
		}
	}
	/* Every code nOS-V defines has a string of its own. */
	for (int code = NOSV_SUCCESS; code > NOSV_ERR_MAX; --code) {
		if (strcmp(p_get_error_string(code), "Error code not recognized") == 0) {
			fprintf(stderr, "no error string for %d\n", code);
			++missing;
		}
	}
	(void)run_cb_type; (void)end_cb_type; (void)completed_cb_type; (void)cost_type;
	(void)run_cb_exact; (void)cost_exact; (void)err_type; (void)affinity_type;
	(void)suspend_mode_type;
	run_cb_exact = run_cb_type;
	cost_exact = cost_type;
	printf("%zu functions of nOS-V 4.1's nosv.h checked, %d missing\n", n, missing);
	return missing ? 1 : 0;
}
