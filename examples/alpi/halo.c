/* A two-rank Jacobi halo exchange whose steps are ALPI tasks, run three
 * ways that differ only in how the communication task waits:
 *   blocking   MPI_Waitall inside the task (its CPU spins in MPI meanwhile)
 *   ta-block   ta_mpi_waitall: the task blocks through ALPI, and a polling
 *              task unblocks it (the CPU runs other tasks meanwhile)
 *   ta-events  ta_mpi_iwaitall: the task returns at once and completes
 *              when its requests do (ALPI events)
 * Each rank owns `rows` rows of a (2*rows) x cols grid plus two ghost rows.
 * Per iteration: one communication task swaps the rows next to the other
 * rank, `blocks` tasks update the interior rows meanwhile, and once the
 * communication task completes (its completion callback) one task updates
 * the two edge rows. Every variant must give the serial result bit for bit.
 *
 *   mpirun -np 2 halo [--rows R] [--cols C] [--iters I] [--blocks B]
 *                     [--repeats N] [--variants blocking,ta-block,ta-events]
 * prints, per variant, the median wall time (slowest rank) and process CPU
 * time (both ranks), and the ratios to the blocking variant. Exit status 0
 * only when every variant matched the serial result. */
#include "taskaware_mpi.h"

#include <nosv.h>
#include <nosv/alpi.h>

#include <mpi.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum variant { BLOCKING, TA_BLOCK, TA_EVENTS, VARIANTS };
static const char *const variant_names[VARIANTS] = {"blocking", "ta-block", "ta-events"};

static struct {
	int rank, peer;
	int rows, cols, iters, blocks, repeats;
	int enabled[VARIANTS];
	enum variant variant;
	double *u, *unew;  /* (rows + 2) x cols each */
	atomic_int left;   /* tasks of this iteration not complete yet */
	sem_t iteration_done;
} g;

static double *row(double *grid, int i) {
	return grid + (size_t)i * (size_t)g.cols;
}

/* One Jacobi update of rows [first, last) of unew from u; the first and
 * last columns are fixed. The operand order is the serial reference's. */
static void update_rows(double *u, double *unew, int first, int last, int cols) {
	for (int i = first; i < last; ++i) {
		const double *up = u + (size_t)(i - 1) * (size_t)cols;
		const double *mid = u + (size_t)i * (size_t)cols;
		const double *down = u + (size_t)(i + 1) * (size_t)cols;
		double *out = unew + (size_t)i * (size_t)cols;
		out[0] = mid[0];
		for (int j = 1; j < cols - 1; ++j)
			out[j] = 0.25 * (up[j] + down[j] + mid[j - 1] + mid[j + 1]);
		out[cols - 1] = mid[cols - 1];
	}
}

/* The initial grid of `nrows` rows plus ghosts, rows numbered from
 * `first_global` (ghost row 0 of the whole grid is hot). */
static void init_grid(double *grid, int nrows, int first_global, int total_rows, int cols) {
	for (int i = 0; i < nrows + 2; ++i) {
		const int gi = first_global + i; /* global row, ghosts included */
		for (int j = 0; j < cols; ++j) {
			double v = (double)((gi * 31 + j * 17) % 101) / 101.0;
			if (gi == 0) v = 1.0;
			if (gi == total_rows + 1) v = 0.0;
			grid[(size_t)i * (size_t)cols + (size_t)j] = v;
		}
	}
}

static void task_done(void *arg) {
	(void)arg;
	/* acq_rel: the last task to finish sees the others' writes before it
	 * wakes the main thread. */
	if (atomic_fetch_sub_explicit(&g.left, 1, memory_order_acq_rel) == 1)
		sem_post(&g.iteration_done);
}

struct block {
	int first, last;
};
static struct block *blocks;

static void interior_body(void *arg) {
	const struct block *b = arg;
	update_rows(g.u, g.unew, b->first, b->last, g.cols);
}

static void edge_body(void *arg) {
	(void)arg;
	update_rows(g.u, g.unew, 1, 2, g.cols);
	update_rows(g.u, g.unew, g.rows, g.rows + 1, g.cols);
}

static void spawn_or_die(void (*body)(void *), void *arg, void (*done)(void *), const char *label) {
	int rc = alpi_task_spawn(body, arg, done, NULL, label, NULL);
	if (rc) {
		fprintf(stderr, "halo: alpi_task_spawn: %s\n", alpi_error_string((alpi_error_t)rc));
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
}

/* The communication task completed: its ghost row is in place. */
static void comm_done(void *arg) {
	(void)arg;
	spawn_or_die(edge_body, NULL, task_done, "halo edge");
}

static void comm_body(void *arg) {
	(void)arg;
	/* Rank 0's neighbour is below its last row, rank 1's above its first. */
	const int mine = g.rank == 0 ? g.rows : 1;
	const int ghost = g.rank == 0 ? g.rows + 1 : 0;
	MPI_Request req[2];
	MPI_Irecv(row(g.u, ghost), g.cols, MPI_DOUBLE, g.peer, 0, MPI_COMM_WORLD, &req[0]);
	MPI_Isend(row(g.u, mine), g.cols, MPI_DOUBLE, g.peer, 0, MPI_COMM_WORLD, &req[1]);
	int rc = MPI_SUCCESS;
	switch (g.variant) {
	case BLOCKING:
		rc = MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
		break;
	case TA_BLOCK:
		rc = ta_mpi_waitall(2, req, MPI_STATUSES_IGNORE);
		break;
	case TA_EVENTS:
		rc = ta_mpi_iwaitall(2, req, MPI_STATUSES_IGNORE);
		break;
	default:
		break;
	}
	if (rc != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 3);
}

static double now_s(clockid_t clock) {
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Every thread of the process: workers, the polling task, MPI's own. */
static double cpu_s(void) {
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* Runs the iterations from the initial grid; the result is in g.u. */
static void run(enum variant v) {
	g.variant = v;
	init_grid(g.u, g.rows, g.rank * g.rows, 2 * g.rows, g.cols);
	memcpy(g.unew, g.u, sizeof(double) * (size_t)(g.rows + 2) * (size_t)g.cols);
	for (int it = 0; it < g.iters; ++it) {
		atomic_store_explicit(&g.left, g.blocks + 1, memory_order_relaxed);
		spawn_or_die(comm_body, NULL, comm_done, "halo comm");
		for (int b = 0; b < g.blocks; ++b)
			spawn_or_die(interior_body, &blocks[b], task_done, "halo interior");
		while (sem_wait(&g.iteration_done) != 0) {
		}
		/* The fixed ghost row is the same in both grids (never written). */
		double *t = g.u;
		g.u = g.unew;
		g.unew = t;
	}
}

/* Rank 0: the serial result of the whole grid. */
static double *serial_reference(void) {
	const int total = 2 * g.rows;
	const size_t n = (size_t)(total + 2) * (size_t)g.cols;
	double *u = malloc(sizeof(double) * n), *unew = malloc(sizeof(double) * n);
	if (!u || !unew) MPI_Abort(MPI_COMM_WORLD, 4);
	init_grid(u, total, 0, total, g.cols);
	memcpy(unew, u, sizeof(double) * n);
	for (int it = 0; it < g.iters; ++it) {
		update_rows(u, unew, 1, total + 1, g.cols);
		double *t = u;
		u = unew;
		unew = t;
	}
	free(unew);
	return u;
}

/* Whether this variant's grid equals the serial one (on every rank). */
static int matches(const double *reference) {
	const size_t count = (size_t)g.rows * (size_t)g.cols;
	double *all = g.rank == 0 ? malloc(sizeof(double) * count * 2) : NULL;
	MPI_Gather(row(g.u, 1), (int)count, MPI_DOUBLE, all, (int)count, MPI_DOUBLE, 0,
	           MPI_COMM_WORLD);
	int ok = 1;
	if (g.rank == 0) {
		ok = memcmp(all, reference + g.cols, sizeof(double) * count * 2) == 0;
		free(all);
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	return ok;
}

static int cmp_double(const void *a, const void *b) {
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n) {
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int parse_int(const char *s, int min) {
	char *end = NULL;
	long v = strtol(s, &end, 10);
	if (!end || *end || v < min || v > 1 << 24) return -1;
	return (int)v;
}

static int parse_args(int argc, char **argv) {
	g.rows = 256;
	g.cols = 1024;
	g.iters = 100;
	g.blocks = 8;
	g.repeats = 3;
	for (int v = 0; v < VARIANTS; ++v) g.enabled[v] = 1;
	for (int i = 1; i < argc; ++i) {
		const char *opt = argv[i];
		if (i + 1 >= argc) return 0;
		const char *val = argv[++i];
		int *target = !strcmp(opt, "--rows")      ? &g.rows
		              : !strcmp(opt, "--cols")    ? &g.cols
		              : !strcmp(opt, "--iters")   ? &g.iters
		              : !strcmp(opt, "--blocks")  ? &g.blocks
		              : !strcmp(opt, "--repeats") ? &g.repeats
		                                          : NULL;
		if (target) {
			if ((*target = parse_int(val, 1)) < 0) return 0;
		} else if (!strcmp(opt, "--variants")) {
			for (int v = 0; v < VARIANTS; ++v) g.enabled[v] = strstr(val, variant_names[v]) != NULL;
		} else {
			return 0;
		}
	}
	int any = 0;
	for (int v = 0; v < VARIANTS; ++v) any |= g.enabled[v];
	/* Interior rows 2..rows-1, at least one per block. */
	return any && g.rows >= 2 + g.blocks && g.cols >= 3;
}

int main(int argc, char **argv) {
	int provided = 0;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	int size = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (!parse_args(argc, argv) || size != 2) {
		if (g.rank == 0)
			fprintf(stderr, "usage: mpirun -np 2 halo [--rows R] [--cols C] [--iters I] "
			                "[--blocks B] [--repeats N] [--variants blocking,ta-block,ta-events]\n"
			                "(rows >= blocks + 2, cols >= 3)\n");
		MPI_Finalize();
		return 2;
	}
	if (provided != MPI_THREAD_MULTIPLE) {
		if (g.rank == 0) fprintf(stderr, "halo: MPI does not provide MPI_THREAD_MULTIPLE\n");
		MPI_Finalize();
		return 2;
	}
	g.peer = 1 - g.rank;
	if (nosv_init() != NOSV_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 5);
	if (ta_mpi_init(0) != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 6);
	sem_init(&g.iteration_done, 0, 0);
	const size_t cells = (size_t)(g.rows + 2) * (size_t)g.cols;
	g.u = malloc(sizeof(double) * cells);
	g.unew = malloc(sizeof(double) * cells);
	blocks = malloc(sizeof *blocks * (size_t)g.blocks);
	if (!g.u || !g.unew || !blocks) MPI_Abort(MPI_COMM_WORLD, 4);
	const int interior = g.rows - 2;
	for (int b = 0; b < g.blocks; ++b) {
		blocks[b].first = 2 + interior * b / g.blocks;
		blocks[b].last = 2 + interior * (b + 1) / g.blocks;
	}
	double *reference = g.rank == 0 ? serial_reference() : NULL;

	int all_ok = 1;
	double wall_med[VARIANTS] = {0}, cpu_med[VARIANTS] = {0};
	double *wall = malloc(sizeof(double) * (size_t)g.repeats);
	double *cpu = malloc(sizeof(double) * (size_t)g.repeats);
	for (int v = 0; v < VARIANTS; ++v) {
		if (!g.enabled[v]) continue;
		int ok = 1;
		for (int r = 0; r < g.repeats; ++r) {
			MPI_Barrier(MPI_COMM_WORLD);
			const double w0 = now_s(CLOCK_MONOTONIC), c0 = cpu_s();
			run((enum variant)v);
			const double w = now_s(CLOCK_MONOTONIC) - w0, c = cpu_s() - c0;
			MPI_Reduce(&w, &wall[r], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
			MPI_Reduce(&c, &cpu[r], 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
			ok &= matches(reference);
		}
		all_ok &= ok;
		if (g.rank == 0) {
			wall_med[v] = median(wall, g.repeats);
			cpu_med[v] = median(cpu, g.repeats);
			printf("%-10s wall %8.4f s  cpu %8.4f s  result %s\n", variant_names[v], wall_med[v],
			       cpu_med[v], ok ? "matches serial" : "DIFFERS from serial");
		}
	}
	if (g.rank == 0 && g.enabled[BLOCKING])
		for (int v = TA_BLOCK; v < VARIANTS; ++v)
			if (g.enabled[v] && wall_med[v] > 0 && cpu_med[v] > 0)
				printf("%-10s vs blocking: wall %.2fx  cpu %.2fx  (blocking / %s)\n",
				       variant_names[v], wall_med[BLOCKING] / wall_med[v],
				       cpu_med[BLOCKING] / cpu_med[v], variant_names[v]);
	if (g.rank == 0)
		printf("rows %d x 2 ranks, cols %d, iters %d, blocks %d, repeats %d (medians)\n", g.rows,
		       g.cols, g.iters, g.blocks, g.repeats);

	free(wall);
	free(cpu);
	free(reference);
	if (ta_mpi_finalize() != MPI_SUCCESS) all_ok = 0;
	nosv_shutdown();
	free(g.u);
	free(g.unew);
	free(blocks);
	sem_destroy(&g.iteration_done);
	MPI_Finalize();
	return all_ok ? 0 : 1;
}
