/* EPCC-style OpenMP overhead micro-benchmark (in the spirit of the EPCC
 * syncbench/schedbench/taskbench: each construct wraps a short delay, and its
 * overhead is the time per construct minus the delay alone).
 *
 * Usage: omp_overhead [CONSTRUCT...]   (default: all)
 * Prints one line per construct: "<name> <overhead_us> <time_us>": the time of
 * one construct instance minus its share of delay, and the time of one
 * instance with it. "app" is an application-size loop (a 2-D Jacobi sweep):
 * both columns are the time per sweep. Exits 2 on a bad name.
 *
 * Each time is the median of SAMPLES timed batches, as EPCC takes outer
 * repetitions: on a shared machine one preemption inside a batch would
 * otherwise count as construct overhead. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DELAY_LENGTH 200
#define OUTER_REPS 2000
#define SAMPLES 21

static volatile double sink;

/* A fixed amount of work that the compiler cannot remove. */
static void delay(int length) {
    double a = 0.0;
    for (int i = 0; i < length; ++i)
        a += i;
    if (a < 0) sink = a;
}

static int compare_doubles(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* Time per repetition of `body`, in microseconds, after a warm-up: the median
 * over SAMPLES batches of `reps` repetitions. */
static double time_per_rep(void (*body)(void), int reps) {
    double per_rep[SAMPLES];
    body();
    for (int s = 0; s < SAMPLES; ++s) {
        const double start = omp_get_wtime();
        for (int r = 0; r < reps; ++r)
            body();
        per_rep[s] = (omp_get_wtime() - start) * 1e6 / reps;
    }
    qsort(per_rep, SAMPLES, sizeof per_rep[0], compare_doubles);
    return per_rep[SAMPLES / 2];
}

static void reference_body(void) {
    delay(DELAY_LENGTH);
}

static void parallel_body(void) {
#pragma omp parallel
    delay(DELAY_LENGTH);
}

static void barrier_body(void) {
#pragma omp parallel
    for (int j = 0; j < 32; ++j) {
        delay(DELAY_LENGTH);
#pragma omp barrier
    }
}

static void reduction_body(void) {
    int total = 0;
#pragma omp parallel reduction(+ : total)
    {
        delay(DELAY_LENGTH);
        total += 1;
    }
    if (total != omp_get_max_threads()) {
        fprintf(stderr, "omp_overhead: reduction gave %d\n", total);
        exit(1);
    }
}

static void for_static_body(void) {
#pragma omp parallel
    for (int j = 0; j < 32; ++j) {
#pragma omp for schedule(static)
        for (int i = 0; i < omp_get_num_threads(); ++i)
            delay(DELAY_LENGTH);
    }
}

static void for_dynamic_body(void) {
#pragma omp parallel
    for (int j = 0; j < 8; ++j) {
#pragma omp for schedule(dynamic, 1)
        for (int i = 0; i < 16 * omp_get_num_threads(); ++i)
            delay(DELAY_LENGTH);
    }
}

static void task_body(void) {
#pragma omp parallel
#pragma omp single
    for (int i = 0; i < 64 * omp_get_num_threads(); ++i) {
#pragma omp task
        delay(DELAY_LENGTH);
    }
}

#define APP_N 1024
static double grid_a[APP_N][APP_N], grid_b[APP_N][APP_N];

static void app_body(void) {
#pragma omp parallel for schedule(static)
    for (int i = 1; i < APP_N - 1; ++i)
        for (int j = 1; j < APP_N - 1; ++j)
            grid_b[i][j] =
                0.25 * (grid_a[i - 1][j] + grid_a[i + 1][j] + grid_a[i][j - 1] + grid_a[i][j + 1]);
#pragma omp parallel for schedule(static)
    for (int i = 1; i < APP_N - 1; ++i)
        for (int j = 1; j < APP_N - 1; ++j)
            grid_a[i][j] = grid_b[i][j];
}

struct construct {
    const char* name;
    void (*body)(void);
    int delays_per_thread; /* delays one thread runs per repetition */
    int instances;         /* construct instances per repetition */
    int reps;
};

int main(int argc, char** argv) {
    const int threads = omp_get_max_threads();
    const struct construct all[] = {
        {"parallel", parallel_body, 1, 1, OUTER_REPS},
        {"barrier", barrier_body, 32, 32, OUTER_REPS / 8},
        {"reduction", reduction_body, 1, 1, OUTER_REPS},
        {"for_static", for_static_body, 32, 32, OUTER_REPS / 8},
        {"for_dynamic", for_dynamic_body, 8 * 16, 8, OUTER_REPS / 16},
        {"task", task_body, 64, 64 * threads, OUTER_REPS / 16},
        {"app", app_body, 0, 1, 10},
    };
    const size_t n = sizeof all / sizeof all[0];
    for (int a = 1; a < argc; ++a) {
        int known = 0;
        for (size_t i = 0; i < n; ++i)
            known |= strcmp(argv[a], all[i].name) == 0;
        if (!known) {
            fprintf(stderr, "omp_overhead: unknown construct '%s'\n", argv[a]);
            return 2;
        }
    }
    for (int i = 0; i < APP_N; ++i)
        for (int j = 0; j < APP_N; ++j)
            grid_a[i][j] = (i * 7 + j) % 13;
    /* Regions for a while first: the kernel may start the team's threads on
     * one CPU and spread them only after a few milliseconds. */
    for (const double until = omp_get_wtime() + 0.2; omp_get_wtime() < until;)
        parallel_body();
    const double ref = time_per_rep(reference_body, 20000);
    for (size_t i = 0; i < n; ++i) {
        int selected = argc == 1;
        for (int a = 1; a < argc; ++a)
            selected |= strcmp(argv[a], all[i].name) == 0;
        if (!selected) continue;
        const double t = time_per_rep(all[i].body, all[i].reps);
        /* Work is shared evenly, so each thread runs delays_per_thread delays. */
        const double overhead = t - ref * all[i].delays_per_thread;
        printf("%s %.4f %.4f\n", all[i].name, overhead / all[i].instances, t / all[i].instances);
    }
    return 0;
}
