/* Opens parallel regions that ask for one thread per CPU, for a while, and
 * counts the team sizes the runtime gave (with OMP_DYNAMIC=true it may give
 * fewer threads). Usage: omp_teams SECONDS. Prints "regions N full F one O"
 * and exits 0, or exits 1 on a wrong result and 2 on bad arguments. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
    char* end = NULL;
    const double seconds = argc == 2 ? strtod(argv[1], &end) : -1.0;
    if (argc != 2 || end == argv[1] || *end != '\0' || !(seconds > 0.0) || seconds > 3600.0) {
        fprintf(stderr, "usage: omp_teams SECONDS (0 < SECONDS <= 3600)\n");
        return 2;
    }
    const int procs = omp_get_num_procs();
    const double stop = omp_get_wtime() + seconds;
    long regions = 0, full = 0, one = 0;
    while (omp_get_wtime() < stop) {
        long sum = 0;
        int team = 0;
#pragma omp parallel num_threads(procs) reduction(+ : sum)
        {
#pragma omp single
            team = omp_get_num_threads();
#pragma omp for schedule(static)
            for (long i = 0; i < 20000; ++i)
                sum += i & 7;
        }
        if (sum != 20000 / 8 * 28 || team < 1 || team > procs) {
            fprintf(stderr, "omp_teams: wrong sum %ld or team %d\n", sum, team);
            return 1;
        }
        ++regions;
        full += team == procs;
        one += team == 1;
    }
    printf("regions %ld full %ld one %ld\n", regions, full, one);
    return 0;
}
