/* Loads spin_yield_lib with dlopen() (RTLD_LOCAL, as Python loads extension
 * modules) and runs its sched_yield() hand-shakes. The program itself does not
 * link OpenMP. Usage: dlopen_spin LIBRARY ROUNDS. Prints "handovers N" and
 * exits 0, or exits 1 on a wrong count and 2 on bad arguments or a load
 * failure. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
    char* end = NULL;
    const long rounds = argc == 3 ? strtol(argv[2], &end, 10) : -1;
    if (argc != 3 || end == argv[2] || *end != '\0' || rounds < 1 || rounds > 1000000) {
        fprintf(stderr, "usage: dlopen_spin LIBRARY ROUNDS (1 <= ROUNDS <= 1e6)\n");
        return 2;
    }
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen_spin: %s\n", dlerror());
        return 2;
    }
    long (*run)(long) = (long (*)(long))dlsym(lib, "spin_yield_rounds");
    if (!run) {
        fprintf(stderr, "dlopen_spin: %s\n", dlerror());
        return 2;
    }
    const long handovers = run(rounds);
    printf("handovers %ld\n", handovers);
    return handovers == 4 * rounds ? 0 : 1;
}
