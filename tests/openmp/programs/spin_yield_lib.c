/* An OpenMP library whose threads wait for each other with sched_yield(), as
 * OpenBLAS's threaded kernels do. Loaded with dlopen() (see dlopen_spin.c),
 * so its libgomp/libomp is searched after libc, as NumPy loads OpenBLAS. */
#include <omp.h>
#include <sched.h>
#include <stdatomic.h>

/* Runs `rounds` regions of two threads in which each thread, in turn, waits
 * with sched_yield() until the other has passed a flag. Returns the number of
 * hand-overs made (2 per round), or -1 when a region got one thread. */
long spin_yield_rounds(long rounds) {
    long handovers = 0;
    for (long r = 0; r < rounds; ++r) {
        atomic_int turn = 0;
        int threads = 0;
#pragma omp parallel num_threads(2) reduction(+ : handovers)
        {
            const int me = omp_get_thread_num();
#pragma omp single
            threads = omp_get_num_threads();
            if (threads == 2) {
                for (int step = me; step < 4; step += 2) {
                    while (atomic_load(&turn) != step)
                        sched_yield(); /* the teammate needs this CPU */
                    atomic_store(&turn, step + 1);
                    ++handovers;
                }
            }
        }
        if (threads != 2) return -1;
    }
    return handovers;
}
