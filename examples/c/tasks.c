/* Submits N tasks from an attached thread and waits for them with
 * nosv_pause: the last completed callback resumes the main task. */
#include <nosv.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_int remaining;
static atomic_long sum;
static nosv_task_t main_task;

static void run(nosv_task_t task)
{
	int *value = nosv_get_task_metadata(task);
	atomic_fetch_add(&sum, *value);
}

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
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	nosv_task_type_t type;

	check(nosv_init(), "nosv_init");
	check(nosv_type_init(&type, run, NULL, completed, "example", NULL, NULL, NOSV_TYPE_INIT_NONE), "nosv_type_init");
	check(nosv_attach(&main_task, NULL, "main", NOSV_ATTACH_NONE), "nosv_attach");

	atomic_store(&remaining, n);
	for (int i = 0; i < n; ++i) {
		nosv_task_t task;
		check(nosv_create(&task, type, sizeof(int), NOSV_CREATE_NONE), "nosv_create");
		*(int *)nosv_get_task_metadata(task) = i;
		check(nosv_submit(task, NOSV_SUBMIT_NONE), "nosv_submit");
	}
	check(nosv_pause(NOSV_PAUSE_NONE), "nosv_pause");

	printf("%d tasks, sum %ld (expected %ld)\n", n, atomic_load(&sum), (long)n * (n - 1) / 2);
	check(nosv_detach(NOSV_DETACH_NONE), "nosv_detach");
	check(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), "nosv_type_destroy");
	check(nosv_shutdown(), "nosv_shutdown");
	return atomic_load(&sum) == (long)n * (n - 1) / 2 ? 0 : 1;
}
