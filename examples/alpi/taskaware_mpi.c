/* taskaware_mpi: see taskaware_mpi.h. Uses MPI, ALPI and pthreads only.
 *
 * Pending requests live in one table guarded by a mutex: the MPI requests
 * in an array of their own (MPI_Testsome takes them as they are) and, at
 * the same index, what to do when each completes. A polling task, spawned
 * through ALPI, tests them every poll period and sleeps in between with
 * alpi_task_waitfor_ns, so it holds no CPU while it waits. */
#include "taskaware_mpi.h"

#include <nosv/alpi.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A task blocked in ta_mpi_wait(all): on its stack until it is unblocked. */
struct waiter {
	int remaining; /* requests not complete yet; under table.lock */
	struct alpi_task *task;
};

/* What to do when the request at the same index completes. */
struct action {
	MPI_Status *status;   /* where its status goes, or MPI_STATUS_IGNORE */
	struct waiter *waiter; /* ta_mpi_wait: the blocked task's count */
	struct alpi_task *task; /* ta_mpi_iwait: the task that owns one event */
};

static struct {
	pthread_mutex_t lock;
	MPI_Request *requests;
	struct action *actions;
	int count, capacity;
	/* MPI_Testsome's output, kept to avoid an allocation per poll. */
	int *indices;
	MPI_Status *statuses;
	/* The tasks to resume after a poll, filled under the lock and used
	 * after it (resuming may run a completion callback, which must not
	 * find the lock held). Only the polling task touches them. */
	struct alpi_task **to_unblock, **to_decrease;
	int resume_capacity;

	uint64_t poll_ns;
	/* Set by ta_mpi_finalize, read by the polling task each period. */
	atomic_bool stop;
	int running; /* the polling task exists; under lock */
	pthread_cond_t stopped;
} table = {.lock = PTHREAD_MUTEX_INITIALIZER, .stopped = PTHREAD_COND_INITIALIZER};

static int fail(const char *what, int code) {
	fprintf(stderr, "taskaware_mpi: %s (%s)\n", what,
	        code > 0 ? alpi_error_string((alpi_error_t)code) : "MPI");
	return MPI_ERR_OTHER;
}

/* Makes room for `more` entries; false when memory runs out. Under lock. */
static int reserve(int more) {
	if (table.count + more <= table.capacity) return 1;
	int cap = table.capacity ? table.capacity : 64;
	while (cap < table.count + more) cap *= 2;
	MPI_Request *r = realloc(table.requests, sizeof *r * (size_t)cap);
	if (r) table.requests = r;
	struct action *a = realloc(table.actions, sizeof *a * (size_t)cap);
	if (a) table.actions = a;
	int *i = realloc(table.indices, sizeof *i * (size_t)cap);
	if (i) table.indices = i;
	MPI_Status *s = realloc(table.statuses, sizeof *s * (size_t)cap);
	if (s) table.statuses = s;
	if (!r || !a || !i || !s) return 0;
	table.capacity = cap;
	return 1;
}

/* Tests every pending request once and resumes the tasks whose requests
 * completed. */
static void poll_once(void) {
	int unblock = 0, decrease = 0;
	pthread_mutex_lock(&table.lock);
	if (table.resume_capacity < table.capacity) {
		struct alpi_task **u = realloc(table.to_unblock, sizeof *u * (size_t)table.capacity);
		if (u) table.to_unblock = u;
		struct alpi_task **d = realloc(table.to_decrease, sizeof *d * (size_t)table.capacity);
		if (d) table.to_decrease = d;
		if (!u || !d) { /* try again next period */
			pthread_mutex_unlock(&table.lock);
			return;
		}
		table.resume_capacity = table.capacity;
	}
	int done = 0;
	if (table.count > 0 &&
	    MPI_Testsome(table.count, table.requests, &done, table.indices, table.statuses) !=
	        MPI_SUCCESS)
		done = 0;
	if (done == MPI_UNDEFINED) done = 0;
	for (int k = 0; k < done; ++k) {
		struct action *a = &table.actions[table.indices[k]];
		if (a->status != MPI_STATUS_IGNORE) *a->status = table.statuses[k];
		if (a->waiter) {
			if (--a->waiter->remaining == 0) table.to_unblock[unblock++] = a->waiter->task;
		} else {
			table.to_decrease[decrease++] = a->task;
		}
	}
	/* Completed requests are MPI_REQUEST_NULL now: close the gaps. */
	if (done > 0) {
		int kept = 0;
		for (int i = 0; i < table.count; ++i) {
			if (table.requests[i] == MPI_REQUEST_NULL) continue;
			table.requests[kept] = table.requests[i];
			table.actions[kept] = table.actions[i];
			++kept;
		}
		table.count = kept;
	}
	pthread_mutex_unlock(&table.lock);
	/* The arrays are only refilled by the next poll, on this same task. */
	for (int k = 0; k < unblock; ++k) alpi_task_unblock(table.to_unblock[k]);
	for (int k = 0; k < decrease; ++k) alpi_task_events_decrease(table.to_decrease[k], 1);
}

static void poller_body(void *arg) {
	(void)arg;
	/* relaxed: the flag only ends the loop; finalize waits for the
	 * completion callback, not for this load. */
	while (!atomic_load_explicit(&table.stop, memory_order_relaxed)) {
		poll_once();
		alpi_task_waitfor_ns(table.poll_ns, NULL);
	}
	poll_once();
}

static void poller_completed(void *arg) {
	(void)arg;
	pthread_mutex_lock(&table.lock);
	table.running = 0;
	pthread_cond_broadcast(&table.stopped);
	pthread_mutex_unlock(&table.lock);
}

int ta_mpi_init(unsigned poll_us) {
	int rc = alpi_version_check(ALPI_VERSION_MAJOR, ALPI_VERSION_MINOR);
	if (rc) return fail("the runtime's ALPI is older than 1.2", rc);
	rc = alpi_feature_check(ALPI_FEATURE_BLOCKING | ALPI_FEATURE_EVENTS);
	if (rc) return fail("the runtime lacks ALPI's blocking or events API", rc);
	int provided = 0;
	if (MPI_Query_thread(&provided) != MPI_SUCCESS || provided != MPI_THREAD_MULTIPLE)
		return fail("MPI must be initialised with MPI_THREAD_MULTIPLE", 0);
	if (poll_us == 0) {
		const char *env = getenv("TA_MPI_POLL_US");
		poll_us = env && atoi(env) > 0 ? (unsigned)atoi(env) : 50;
	}
	table.poll_ns = (uint64_t)poll_us * 1000;
	pthread_mutex_lock(&table.lock);
	const int already = table.running;
	table.running = 1;
	pthread_mutex_unlock(&table.lock);
	if (already) return fail("ta_mpi_init called twice", 0);
	atomic_store_explicit(&table.stop, 0, memory_order_relaxed);
	rc = alpi_task_spawn(poller_body, NULL, poller_completed, NULL, "ta_mpi poller", NULL);
	if (rc) {
		pthread_mutex_lock(&table.lock);
		table.running = 0;
		pthread_mutex_unlock(&table.lock);
		return fail("could not spawn the polling task", rc);
	}
	return MPI_SUCCESS;
}

int ta_mpi_finalize(void) {
	atomic_store_explicit(&table.stop, 1, memory_order_relaxed);
	pthread_mutex_lock(&table.lock);
	while (table.running) pthread_cond_wait(&table.stopped, &table.lock);
	const int left = table.count;
	free(table.requests);
	free(table.actions);
	free(table.indices);
	free(table.statuses);
	free(table.to_unblock);
	free(table.to_decrease);
	table.requests = NULL;
	table.actions = NULL;
	table.indices = NULL;
	table.statuses = NULL;
	table.to_unblock = table.to_decrease = NULL;
	table.count = table.capacity = table.resume_capacity = 0;
	pthread_mutex_unlock(&table.lock);
	return left ? fail("requests were still pending at ta_mpi_finalize", 0) : MPI_SUCCESS;
}

/* The calling task, or NULL outside one. */
static struct alpi_task *current_task(void) {
	struct alpi_task *task = NULL;
	alpi_task_self(&task);
	return task;
}

int ta_mpi_waitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
	struct alpi_task *task = current_task();
	if (!task) return MPI_Waitall(count, requests, statuses);
	/* Often done already (a late receiver): no table, no block. */
	int flag = 0;
	int rc = MPI_Testall(count, requests, &flag, statuses);
	if (rc != MPI_SUCCESS || flag) return rc;
	struct waiter w = {.remaining = 0, .task = task};
	pthread_mutex_lock(&table.lock);
	if (!reserve(count)) {
		pthread_mutex_unlock(&table.lock);
		return MPI_Waitall(count, requests, statuses);
	}
	for (int i = 0; i < count; ++i) {
		if (requests[i] == MPI_REQUEST_NULL) continue;
		table.requests[table.count] = requests[i];
		table.actions[table.count] = (struct action){
		    .status = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i],
		    .waiter = &w,
		    .task = NULL};
		++table.count;
		++w.remaining;
		requests[i] = MPI_REQUEST_NULL; /* the table completes it */
	}
	const int wait = w.remaining > 0;
	pthread_mutex_unlock(&table.lock);
	/* An unblock that comes before the block makes it return at once. */
	if (wait) {
		rc = alpi_task_block(task);
		if (rc) return fail("alpi_task_block failed", rc);
	}
	return MPI_SUCCESS;
}

int ta_mpi_wait(MPI_Request *request, MPI_Status *status) {
	return ta_mpi_waitall(1, request, status == MPI_STATUS_IGNORE ? MPI_STATUSES_IGNORE : status);
}

int ta_mpi_iwaitall(int count, MPI_Request requests[], MPI_Status statuses[]) {
	struct alpi_task *task = current_task();
	if (!task) return MPI_Waitall(count, requests, statuses);
	int flag = 0;
	int rc = MPI_Testall(count, requests, &flag, statuses);
	if (rc != MPI_SUCCESS || flag) return rc;
	int active = 0;
	for (int i = 0; i < count; ++i) active += requests[i] != MPI_REQUEST_NULL;
	/* The events go first: a request could complete (and its event be
	 * decreased) as soon as it is in the table. */
	rc = alpi_task_events_increase(task, (uint64_t)active);
	if (rc) return fail("alpi_task_events_increase failed", rc);
	pthread_mutex_lock(&table.lock);
	if (!reserve(count)) {
		pthread_mutex_unlock(&table.lock);
		alpi_task_events_decrease(task, (uint64_t)active);
		return MPI_Waitall(count, requests, statuses);
	}
	for (int i = 0; i < count; ++i) {
		if (requests[i] == MPI_REQUEST_NULL) continue;
		table.requests[table.count] = requests[i];
		table.actions[table.count] = (struct action){
		    .status = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i],
		    .waiter = NULL,
		    .task = task};
		++table.count;
		requests[i] = MPI_REQUEST_NULL;
	}
	pthread_mutex_unlock(&table.lock);
	return MPI_SUCCESS;
}

int ta_mpi_iwait(MPI_Request *request, MPI_Status *status) {
	return ta_mpi_iwaitall(1, request, status == MPI_STATUS_IGNORE ? MPI_STATUSES_IGNORE : status);
}
