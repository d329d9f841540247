/* Two threads of one process that each open parallel regions of two threads
 * in a loop, as two TBB threads whose items use OpenMP do. Each region
 * records whether its two threads ran on different CPUs.
 * Usage: omp_two_teams REGIONS ITERATIONS (regions per thread, iterations of
 * work per region). Prints "regions N apart A" (A: regions whose threads ran
 * on two CPUs) and exits 0, or exits 1 on a wrong result and 2 on bad
 * arguments. */
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

struct loop {
    long regions, iterations;
    long apart;
    int wrong;
};

static long parse(const char* s) {
    char* end = NULL;
    const long v = strtol(s, &end, 10);
    return end != s && *end == '\0' && v > 0 && v <= 100000000 ? v : -1;
}

static void* run(void* arg) {
    struct loop* l = arg;
    long expect = 0;
    for (long i = 0; i < l->iterations; ++i)
        expect += (i * 7) & 15;
    for (long r = 0; r < l->regions; ++r) {
        int cpu[2] = {-1, -1};
        long sum = 0;
#pragma omp parallel num_threads(2) reduction(+ : sum)
        {
            const int me = omp_get_thread_num();
#pragma omp for schedule(static)
            for (long i = 0; i < l->iterations; ++i)
                sum += (i * 7) & 15;
            /* After the work: the CPU the share ended on. */
            if (me < 2) cpu[me] = sched_getcpu();
        }
        if (sum != expect) l->wrong = 1;
        l->apart += cpu[0] >= 0 && cpu[1] >= 0 && cpu[0] != cpu[1];
    }
    return NULL;
}

int main(int argc, char** argv) {
    const long regions = argc == 3 ? parse(argv[1]) : -1;
    const long iterations = argc == 3 ? parse(argv[2]) : -1;
    if (regions < 0 || iterations < 0) {
        fprintf(stderr, "usage: omp_two_teams REGIONS ITERATIONS (positive integers)\n");
        return 2;
    }
    struct loop loops[2] = {{regions, iterations, 0, 0}, {regions, iterations, 0, 0}};
    pthread_t threads[2];
    for (int t = 0; t < 2; ++t) {
        if (pthread_create(&threads[t], NULL, run, &loops[t]) != 0) {
            fprintf(stderr, "omp_two_teams: pthread_create failed\n");
            return 1;
        }
    }
    for (int t = 0; t < 2; ++t)
        pthread_join(threads[t], NULL);
    if (loops[0].wrong || loops[1].wrong) {
        fprintf(stderr, "omp_two_teams: wrong sum\n");
        return 1;
    }
    printf("regions %ld apart %ld\n", 2 * regions, loops[0].apart + loops[1].apart);
    return 0;
}
