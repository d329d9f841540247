/* Joinable tasks: a parallel sum of squares split into chunks. Each chunk
 * is a NOSV_CREATE_JOINABLE task that hands its partial sum back with
 * nosv_set_result; the attached main thread gathers them with
 * nosv_join_all (waiting without its CPU), then shows a timed nosv_join
 * and nosv_wait on a task that waits for a flag. */
#include <nosv.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct chunk {
	uint64_t first, last; /* [first, last) */
};

static atomic_bool go;

static void sum_squares(nosv_task_t task)
{
	struct chunk *c = nosv_get_task_metadata(task);
	uint64_t s = 0;
	for (uint64_t i = c->first; i < c->last; ++i)
		s += i * i;
	nosv_set_result((void *)(uintptr_t)s);
}

static void wait_for_go(nosv_task_t task)
{
	(void)task;
	while (!atomic_load(&go))
		nosv_waitfor(100000, NULL); /* 0.1 ms, without a CPU */
	nosv_set_result((void *)(uintptr_t)42);
}

static void check(int rc, const char *what)
{
	if (rc != NOSV_SUCCESS) {
		fprintf(stderr, "%s: %s\n", what, nosv_get_error_string(rc));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	const uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	enum { CHUNKS = 16 };
	nosv_task_type_t sum_type, flag_type;
	nosv_task_t main_task, tasks[CHUNKS], flagged;
	void *partial[CHUNKS];

	check(nosv_init(), "nosv_init");
	check(nosv_type_init(&sum_type, sum_squares, NULL, NULL, "sum", NULL, NULL, NOSV_TYPE_INIT_NONE), "nosv_type_init");
	check(nosv_type_init(&flag_type, wait_for_go, NULL, NULL, "flag", NULL, NULL, NOSV_TYPE_INIT_NONE), "nosv_type_init");
	check(nosv_attach(&main_task, NULL, "main", NOSV_ATTACH_NONE), "nosv_attach");

	for (int i = 0; i < CHUNKS; ++i) {
		check(nosv_create(&tasks[i], sum_type, sizeof(struct chunk), NOSV_CREATE_JOINABLE), "nosv_create");
		struct chunk *c = nosv_get_task_metadata(tasks[i]);
		c->first = n * i / CHUNKS;
		c->last = n * (i + 1) / CHUNKS;
		check(nosv_submit(tasks[i], NOSV_SUBMIT_NONE), "nosv_submit");
	}
	/* Joined tasks are destroyed by the join. */
	check(nosv_join_all(tasks, partial, CHUNKS, (uint64_t)-1), "nosv_join_all");
	uint64_t total = 0;
	for (int i = 0; i < CHUNKS; ++i)
		total += (uint64_t)(uintptr_t)partial[i];
	/* Sum of i^2 for i < n, modulo 2^64 like the tasks' sums. */
	unsigned __int128 m = n;
	uint64_t expected = (uint64_t)((m - 1) * m * (2 * m - 1) / 6);
	printf("sum of squares below %llu: %llu (expected %llu)\n", (unsigned long long)n,
	       (unsigned long long)total, (unsigned long long)expected);

	/* A timeout leaves the task to be joined later. */
	check(nosv_create(&flagged, flag_type, 0, NOSV_CREATE_JOINABLE), "nosv_create");
	check(nosv_submit(flagged, NOSV_SUBMIT_NONE), "nosv_submit");
	int rc = nosv_wait(flagged, 1000000); /* 1 ms */
	printf("nosv_wait with 1 ms: %s\n", nosv_get_error_string(rc));
	if (rc != NOSV_ERR_TIMEOUT)
		return 1;
	atomic_store(&go, 1);
	void *result = NULL;
	check(nosv_join(flagged, &result, (uint64_t)-1), "nosv_join");
	printf("joined with result %lu\n", (unsigned long)(uintptr_t)result);

	check(nosv_detach(NOSV_DETACH_NONE), "nosv_detach");
	check(nosv_type_destroy(sum_type, NOSV_TYPE_DESTROY_NONE), "nosv_type_destroy");
	check(nosv_type_destroy(flag_type, NOSV_TYPE_DESTROY_NONE), "nosv_type_destroy");
	check(nosv_shutdown(), "nosv_shutdown");
	return total == expected && (uintptr_t)result == 42 ? 0 : 1;
}
