/* Keeps an OpenMP team busy with regions and barriers for a while and checks
 * every result. Usage: omp_spin SECONDS [ITERATIONS] (loop iterations between
 * two barriers, default 20000). Prints "first region done" once its team
 * has run a region, then "regions N" and exits 0, or exits 1 on
 * a wrong result and 2 on bad arguments. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
    char* end = NULL;
    const double seconds = argc >= 2 ? strtod(argv[1], &end) : -1.0;
    const int bad_seconds =
        argc < 2 || end == argv[1] || *end != '\0' || !(seconds > 0.0) || seconds > 3600.0;
    long iterations = 20000;
    if (argc == 3) {
        iterations = strtol(argv[2], &end, 10);
        if (end == argv[2] || *end != '\0') iterations = -1;
    }
    if (bad_seconds || argc > 3 || iterations < 8 || iterations > 100000000 || iterations % 8) {
        fprintf(stderr, "usage: omp_spin SECONDS [ITERATIONS] (0 < SECONDS <= 3600, "
                        "ITERATIONS a multiple of 8 from 8 to 1e8)\n");
        return 2;
    }
    const double stop = omp_get_wtime() + seconds;
    long regions = 0;
    while (omp_get_wtime() < stop) {
        long sum = 0;
#pragma omp parallel reduction(+ : sum)
        {
            for (int step = 0; step < 20; ++step) {
#pragma omp for schedule(static)
                for (long i = 0; i < iterations; ++i)
                    sum += i & 7;
            }
        }
        if (sum != 20L * iterations / 8 * 28) {
            fprintf(stderr, "omp_spin: wrong sum %ld\n", sum);
            return 1;
        }
        if (++regions == 1) {
            /* Its team has run a whole region: tests wait for this line. */
            printf("first region done\n");
            fflush(stdout);
        }
    }
    printf("regions %ld\n", regions);
    return 0;
}
