/* A hybrid MPI + OpenMP program that communicates: each rank owns a slice of
 * a ring of integers, and each step every rank swaps its edge cells with
 * its two neighbours (MPI_Sendrecv) and updates its slice in an OpenMP loop;
 * a global checksum (MPI_Allreduce) ends the run. Integer arithmetic only,
 * so the result does not depend on the number of ranks' threads or on the
 * order the threads add up. Usage: mpi_omp_halo CELLS_PER_RANK STEPS. Rank 0
 * prints "checksum C ranks R": the same for any run with the same arguments
 * and rank count. Exits 2 on bad arguments. */
#include <mpi.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long parse(const char* text, long max) {
    char* end = NULL;
    const long v = strtol(text, &end, 10);
    return end != text && *end == '\0' && v > 0 && v <= max ? v : -1;
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const long cells = argc == 3 ? parse(argv[1], 100000000) : -1;
    const long steps = argc == 3 ? parse(argv[2], 1000000) : -1;
    if (cells < 0 || steps < 0) {
        if (rank == 0) fprintf(stderr, "usage: mpi_omp_halo CELLS_PER_RANK STEPS\n");
        MPI_Finalize();
        return 2;
    }
    /* cells + 2 halo cells; two buffers, swapped each step. */
    uint64_t* a = calloc((size_t)cells + 2, sizeof *a);
    uint64_t* b = calloc((size_t)cells + 2, sizeof *b);
    if (!a || !b) MPI_Abort(MPI_COMM_WORLD, 1);
    for (long i = 1; i <= cells; ++i)
        a[i] = (uint64_t)(rank * cells + i) * 2654435761u % 1000003u;
    const int left = (rank + ranks - 1) % ranks, right = (rank + 1) % ranks;
    for (long s = 0; s < steps; ++s) {
        MPI_Sendrecv(&a[1], 1, MPI_UINT64_T, left, 0, &a[cells + 1], 1, MPI_UINT64_T, right, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&a[cells], 1, MPI_UINT64_T, right, 1, &a[0], 1, MPI_UINT64_T, left, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#pragma omp parallel for schedule(static)
        for (long i = 1; i <= cells; ++i)
            b[i] = (a[i - 1] + 2 * a[i] + a[i + 1] + (uint64_t)s) % 1000003u;
        uint64_t* t = a;
        a = b;
        b = t;
    }
    uint64_t local = 0, total = 0;
#pragma omp parallel for reduction(+ : local)
    for (long i = 1; i <= cells; ++i)
        local += a[i];
    MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("checksum %llu ranks %d\n", (unsigned long long)total, ranks);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
