/* Threads of the program that each become the root of an OpenMP team, all at
 * once: THREADS pthreads meet at a barrier, then each opens REGIONS parallel
 * regions of two threads. Their first regions register them with libomp
 * under its global locks, while the new teams' workers wait for CPUs: under
 * `coexec run`, where the program's threads are hosted, a root that waits
 * for such a lock must give its CPU to the thread whose turn it is.
 * Usage: omp_thread_roots THREADS REGIONS. Prints "roots T regions N" and
 * exits 0, or exits 1 on a wrong result and 2 on bad arguments. */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { kMaxThreads = 64, kIterations = 20000 };

struct root {
    long regions;
    long ran;
    int wrong;
};

static pthread_barrier_t start;

static long parse(const char* s, long max) {
    char* end = NULL;
    const long v = strtol(s, &end, 10);
    return end != s && *end == '\0' && v > 0 && v <= max ? v : -1;
}

static void* run(void* arg) {
    struct root* r = arg;
    long expect = 0;
    for (long i = 0; i < kIterations; ++i)
        expect += (i * 7) & 15;
    pthread_barrier_wait(&start);
    for (long k = 0; k < r->regions; ++k) {
        long sum = 0;
#pragma omp parallel for num_threads(2) reduction(+ : sum) schedule(static)
        for (long i = 0; i < kIterations; ++i)
            sum += (i * 7) & 15;
        if (sum != expect) r->wrong = 1;
        ++r->ran;
    }
    return NULL;
}

int main(int argc, char** argv) {
    const long threads = argc == 3 ? parse(argv[1], kMaxThreads) : -1;
    const long regions = argc == 3 ? parse(argv[2], 100000000) : -1;
    if (threads < 0 || regions < 0) {
        fprintf(stderr, "usage: omp_thread_roots THREADS REGIONS (1-%d, positive)\n", kMaxThreads);
        return 2;
    }
    struct root roots[kMaxThreads];
    pthread_t ids[kMaxThreads];
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (long t = 0; t < threads; ++t) {
        roots[t] = (struct root){regions, 0, 0};
        if (pthread_create(&ids[t], NULL, run, &roots[t]) != 0) {
            fprintf(stderr, "omp_thread_roots: pthread_create failed\n");
            return 1;
        }
    }
    long ran = 0;
    int wrong = 0;
    for (long t = 0; t < threads; ++t) {
        pthread_join(ids[t], NULL);
        ran += roots[t].ran;
        wrong |= roots[t].wrong;
    }
    pthread_barrier_destroy(&start);
    if (wrong) {
        fprintf(stderr, "omp_thread_roots: wrong sum\n");
        return 1;
    }
    printf("roots %ld regions %ld\n", threads, ran);
    return 0;
}
