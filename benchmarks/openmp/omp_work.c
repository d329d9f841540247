/* A fixed amount of fine-grained OpenMP work: REGIONS parallel regions, each
 * a few worksharing loops separated by barriers. Co-located copies of it show
 * how spinning runtimes interfere. Usage: omp_work REGIONS ITERATIONS.
 * Prints "<seconds> <checksum>"; exits 2 on bad arguments, 1 on a wrong sum. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static long parse(const char* text, long max) {
    char* end = NULL;
    const long v = strtol(text, &end, 10);
    return end != text && *end == '\0' && v > 0 && v <= max ? v : -1;
}

int main(int argc, char** argv) {
    const long regions = argc == 3 ? parse(argv[1], 100000000) : -1;
    const long iterations = argc == 3 ? parse(argv[2], 100000000) : -1;
    if (regions < 0 || iterations < 0) {
        fprintf(stderr, "usage: omp_work REGIONS ITERATIONS (positive integers)\n");
        return 2;
    }
    double checksum = 0.0;
    const double start = omp_get_wtime();
    for (long r = 0; r < regions; ++r) {
        double sum = 0.0;
#pragma omp parallel reduction(+ : sum)
        for (int step = 0; step < 4; ++step) {
#pragma omp for schedule(static)
            for (long i = 0; i < iterations; ++i)
                sum += (double)((i ^ r) & 15);
        }
        checksum += sum;
    }
    const double seconds = omp_get_wtime() - start;
    double expected = 0.0;
    for (long r = 0; r < regions; ++r)
        for (long i = 0; i < iterations; ++i)
            expected += 4.0 * (double)((i ^ r) & 15);
    if (checksum != expected) {
        fprintf(stderr, "omp_work: wrong checksum %.0f, expected %.0f\n", checksum, expected);
        return 1;
    }
    printf("%.6f %.0f\n", seconds, checksum);
    return 0;
}
