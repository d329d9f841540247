/* Parallel tasks and the submit window: sums 1..N with a few parallel tasks.
 * Each task covers one block of the range; each of its executions (degree =
 * number of CPUs) sums a slice, by execution id. The main task holds its
 * submits back in a window and releases them together, then waits with
 * nosv_pause until the last task's completed callback resumes it. */
#include <nosv.h>
#include <nosv/hwinfo.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCKS 8

struct block {
	int64_t first, count; /* the numbers this task sums */
	int32_t degree;
};

static atomic_llong sum;
static atomic_int remaining;
static atomic_int executions;
static nosv_task_t main_task;

static void run(nosv_task_t task)
{
	const struct block *b = nosv_get_task_metadata(task);
	const int64_t id = nosv_get_execution_id();
	const int64_t slice = (b->count + b->degree - 1) / b->degree;
	int64_t from = b->first + id * slice, to = from + slice;
	if (to > b->first + b->count)
		to = b->first + b->count;
	long long local = 0;
	for (int64_t i = from; i < to; ++i)
		local += i;
	atomic_fetch_add(&sum, local);
	atomic_fetch_add(&executions, 1);
}

/* Runs once per task, after all its executions. */
static void completed(nosv_task_t task)
{
	nosv_destroy(task, NOSV_DESTROY_NONE);
	if (atomic_fetch_sub(&remaining, 1) == 1)
		nosv_submit(main_task, NOSV_SUBMIT_NONE);
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
	const int64_t n = argc > 1 ? atoll(argv[1]) : 10000000;
	nosv_task_type_t type;

	check(nosv_init(), "nosv_init");
	check(nosv_type_init(&type, run, NULL, completed, "parallel-sum", NULL, NULL, NOSV_TYPE_INIT_NONE),
	      "nosv_type_init");
	check(nosv_attach(&main_task, NULL, "main", NOSV_ATTACH_NONE), "nosv_attach");

	const int32_t degree = nosv_get_num_cpus() * 2;
	atomic_store(&remaining, BLOCKS);
	/* Hold the submits until all BLOCKS are made: they go ready together. */
	check(nosv_set_submit_window_size(BLOCKS), "nosv_set_submit_window_size");
	const int64_t per_block = n / BLOCKS + 1;
	for (int i = 0; i < BLOCKS; ++i) {
		nosv_task_t task;
		check(nosv_create(&task, type, sizeof(struct block), NOSV_CREATE_PARALLEL), "nosv_create");
		struct block *b = nosv_get_task_metadata(task);
		b->first = 1 + i * per_block;
		b->count = b->first + per_block - 1 <= n ? per_block : n - b->first + 1;
		if (b->count < 0)
			b->count = 0;
		b->degree = degree;
		nosv_set_task_degree(task, degree);
		check(nosv_submit(task, NOSV_SUBMIT_NONE), "nosv_submit");
	}
	/* The window is full now; pausing would flush it anyway. */
	check(nosv_pause(NOSV_PAUSE_NONE), "nosv_pause");

	const long long expected = (long long)n * (n + 1) / 2;
	printf("%d parallel tasks of degree %d: %d executions, sum %lld (expected %lld)\n", BLOCKS,
	       (int)degree, atomic_load(&executions), atomic_load(&sum), expected);
	check(nosv_detach(NOSV_DETACH_NONE), "nosv_detach");
	check(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), "nosv_type_destroy");
	check(nosv_shutdown(), "nosv_shutdown");
	return atomic_load(&sum) == expected && atomic_load(&executions) == BLOCKS * degree ? 0 : 1;
}
