/* Tasks that synchronise with nosv/compat.h: each task adds its share of
 * 1..N to a total under a nosv mutex, all meet at a nosv barrier, and the
 * last one to leave it tells the main task, which waits on a nosv condition
 * variable. (nosv_barrier_wait() returns 0 to everyone: unlike pthreads, it
 * picks no serial participant.) Every wait blocks a task, not a thread, so
 * this runs even on a single CPU. */
#include <nosv.h>
#include <nosv/compat.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define TASKS 8
#define N 100000L

static nosv_mutex_t lock = NOSV_MUTEX_INITIALIZER;
static nosv_cond_t finished = NOSV_COND_INITIALIZER;
static nosv_barrier_t meet;
static long total;  /* guarded by lock */
static int done;    /* guarded by lock */
static int left;    /* guarded by lock: tasks past the barrier */
static int signals; /* guarded by lock */
static atomic_int completed_tasks;

static void check(int rc, const char *what)
{
	if (rc != 0) {
		fprintf(stderr, "%s failed: %d\n", what, rc);
		exit(1);
	}
}

static void run(nosv_task_t task)
{
	long part = *(long *)nosv_get_task_metadata(task);
	long sum = 0;
	for (long i = part * (N / TASKS) + 1; i <= (part + 1) * (N / TASKS); ++i)
		sum += i;

	nosv_mutex_lock(&lock);
	total += sum;
	nosv_mutex_unlock(&lock);

	check(nosv_barrier_wait(&meet), "nosv_barrier_wait");

	/* Everyone added a share before anyone got past the barrier: whoever
	 * leaves it last reports the total. */
	nosv_mutex_lock(&lock);
	if (++left == TASKS) {
		++signals;
		done = 1;
		nosv_cond_signal(&finished);
	}
	nosv_mutex_unlock(&lock);
}

static void completed(nosv_task_t task)
{
	nosv_destroy(task, NOSV_DESTROY_NONE);
	atomic_fetch_add(&completed_tasks, 1);
}

int main(void)
{
	nosv_task_type_t type;
	nosv_task_t main_task;

	check(nosv_init(), "nosv_init");
	check(nosv_type_init(&type, run, NULL, completed, "compat", NULL, NULL, NOSV_TYPE_INIT_NONE),
	      "nosv_type_init");
	check(nosv_attach(&main_task, NULL, "main", NOSV_ATTACH_NONE), "nosv_attach");
	check(nosv_barrier_init(&meet, NULL, TASKS), "nosv_barrier_init");

	for (long i = 0; i < TASKS; ++i) {
		nosv_task_t task;
		check(nosv_create(&task, type, sizeof(long), NOSV_CREATE_NONE), "nosv_create");
		*(long *)nosv_get_task_metadata(task) = i;
		check(nosv_submit(task, NOSV_SUBMIT_NONE), "nosv_submit");
	}

	check(nosv_mutex_lock(&lock), "nosv_mutex_lock");
	while (!done)
		check(nosv_cond_wait(&finished, &lock), "nosv_cond_wait");
	long result = total;
	int signal_count = signals;
	check(nosv_mutex_unlock(&lock), "nosv_mutex_unlock");

	/* The other tasks may still be leaving the barrier: wait until all are
	 * complete before tearing down. */
	while (atomic_load(&completed_tasks) < TASKS)
		nosv_yield(NOSV_YIELD_NONE);
	check(nosv_barrier_destroy(&meet), "nosv_barrier_destroy");
	check(nosv_cond_destroy(&finished), "nosv_cond_destroy");
	check(nosv_mutex_destroy(&lock), "nosv_mutex_destroy");
	check(nosv_detach(NOSV_DETACH_NONE), "nosv_detach");
	check(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), "nosv_type_destroy");
	check(nosv_shutdown(), "nosv_shutdown");

	const long expected = N * (N + 1) / 2;
	printf("sum of 1..%ld = %ld (expected %ld), reports: %d\n", N, result, expected,
	       signal_count);
	return result == expected && signal_count == 1 ? 0 : 1;
}
