/* ALPI 1.2 from C, the way a task-aware library uses it: check the version
 * and features, spawn a "request" task that delays its own completion with
 * an event, a "waiter" task that blocks until a "poller" task unblocks it,
 * and a task that suspends once and is resumed when its event is gone. The
 * attached main thread blocks until the last completion callback unblocks
 * it. Exit status 0 when everything happened in the documented order. */
#include <nosv.h>
#include <nosv/alpi-defs.h>
#include <nosv/alpi.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static struct alpi_task *main_task;
static _Atomic(struct alpi_task *) request_task, waiter_task;
static atomic_int completions, request_completed, suspended_runs;

static void check(int rc, const char *what)
{
	if (rc != ALPI_SUCCESS) {
		fprintf(stderr, "%s: %s\n", what, alpi_error_string((alpi_error_t)rc));
		exit(1);
	}
}

static struct alpi_task *self(void)
{
	struct alpi_task *t = NULL;
	check(alpi_task_self(&t), "alpi_task_self");
	return t;
}

/* Its body ends at once; the event keeps it from completing. */
static void request_body(void *arg)
{
	(void)arg;
	check(alpi_task_events_increase(self(), 1), "alpi_task_events_increase");
	atomic_store(&request_task, self());
}

/* Blocks until the poller unblocks it; its CPU runs the poller meanwhile. */
static void waiter_body(void *arg)
{
	(void)arg;
	struct alpi_task *me = self();
	atomic_store(&waiter_task, me);
	check(alpi_task_block(me), "alpi_task_block");
}

/* Suspends once (mode NONE); the poller unblocks it, and the body runs again. */
static void suspending_body(void *arg)
{
	(void)arg;
	if (atomic_fetch_add(&suspended_runs, 1) == 0) {
		check(alpi_task_suspend_mode_set(self(), ALPI_SUSPEND_NONE, 0), "alpi_task_suspend_mode_set");
		check(alpi_task_suspend(self()), "alpi_task_suspend");
	}
}

static void poller_body(void *arg)
{
	(void)arg;
	uint64_t cpu = 0, cpus = 0;
	check(alpi_cpu_logical_id(&cpu), "alpi_cpu_logical_id");
	check(alpi_cpu_count(&cpus), "alpi_cpu_count");
	if (cpu >= cpus) exit(2);
	while (!atomic_load(&request_task) || !atomic_load(&waiter_task))
		check(alpi_task_waitfor_ns(100000, NULL), "alpi_task_waitfor_ns");
	if (atomic_load(&request_completed)) {
		fprintf(stderr, "the request task completed with an event pending\n");
		exit(3);
	}
	check(alpi_task_events_decrease(atomic_load(&request_task), 1), "alpi_task_events_decrease");
	check(alpi_task_unblock(atomic_load(&waiter_task)), "alpi_task_unblock");
}

static void request_done(void *arg)
{
	(void)arg;
	atomic_store(&request_completed, 1);
	if (atomic_fetch_add(&completions, 1) == 2) check(alpi_task_unblock(main_task), "unblock main");
}

static void done(void *arg)
{
	(void)arg;
	if (atomic_fetch_add(&completions, 1) == 2) check(alpi_task_unblock(main_task), "unblock main");
}

static atomic_int suspended_done;
static struct alpi_task *suspended_handle;

static void suspended_completed(void *arg)
{
	(void)arg;
	atomic_store(&suspended_done, 1);
}

static void capture_body(void *arg)
{
	(void)arg;
	suspended_handle = self();
	suspending_body(NULL);
}

int main(void)
{
	check(alpi_version_check(ALPI_VERSION_MAJOR, ALPI_VERSION_MINOR), "alpi_version_check");
	check(alpi_feature_check(ALPI_SUPPORTED_FEATURES), "alpi_feature_check");
	char name[32];
	check(alpi_info_get(ALPI_INFO_VERSION, name, sizeof name, NULL), "alpi_info_get");

	if (nosv_init() != NOSV_SUCCESS) return 1;
	nosv_task_t attached;
	if (nosv_attach(&attached, NULL, "main", NOSV_ATTACH_NONE) != NOSV_SUCCESS) return 1;
	main_task = self();

	check(alpi_task_spawn(request_body, NULL, request_done, NULL, "request", NULL), "spawn");
	check(alpi_task_spawn(waiter_body, NULL, done, NULL, "waiter", NULL), "spawn");
	check(alpi_task_spawn(poller_body, NULL, done, NULL, "poller", NULL), "spawn");
	/* Blocks without its CPU until the third completion unblocks it. */
	check(alpi_task_block(main_task), "alpi_task_block");

	/* A suspended task (mode NONE) resumed by an unblock from this task. */
	check(alpi_task_spawn(capture_body, NULL, suspended_completed, NULL, "suspends", NULL), "spawn");
	while (atomic_load(&suspended_runs) == 0)
		check(alpi_task_waitfor_ns(100000, NULL), "alpi_task_waitfor_ns");
	check(alpi_task_waitfor_ns(1000000, NULL), "alpi_task_waitfor_ns");
	if (atomic_load(&suspended_done)) {
		fprintf(stderr, "a suspended task completed without an unblock\n");
		return 4;
	}
	check(alpi_task_unblock(suspended_handle), "alpi_task_unblock");
	while (!atomic_load(&suspended_done))
		check(alpi_task_waitfor_ns(100000, NULL), "alpi_task_waitfor_ns");

	printf("%s: 3 tasks completed in order, a suspended task ran %d times\n", name,
	       atomic_load(&suspended_runs));
	nosv_detach(NOSV_DETACH_NONE);
	nosv_shutdown();
	return atomic_load(&suspended_runs) == 2 ? 0 : 5;
}
