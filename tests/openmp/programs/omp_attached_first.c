/* Opens the process's first OpenMP region from a thread that is already a
 * coexec task, as a TBB master or a PoCL worker may: coexec pins such a
 * thread to the CPU it holds, yet the default team must be as wide as the
 * mask the thread shows, as it is natively. The nOS-V calls come from the
 * libcoexec that the re-hosted libomp loads; natively (or when they are not
 * there) the thread stays plain. Prints "shown S kernel K team T" (CPUs in
 * the visible and the kernel's mask while in the region, and the team size)
 * and exits 0, or exits 1 when a call fails. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef int (*init_fn)(void);
typedef int (*attach_fn)(void** task, void* affinity, const char* label, unsigned long flags);
typedef int (*detach_fn)(unsigned long flags);

/* CPUs in the calling thread's mask as the kernel has it: the system call,
 * which no library can answer in its place. */
static int kernel_cpus(void) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (syscall(SYS_sched_getaffinity, 0, sizeof mask, &mask) < 0) return -1;
    return CPU_COUNT(&mask);
}

int main(void) {
    cpu_set_t shown;
    CPU_ZERO(&shown);
    if (sched_getaffinity(0, sizeof shown, &shown) != 0) return 1;
    init_fn init = (init_fn)dlsym(RTLD_DEFAULT, "nosv_init");
    attach_fn attach = (attach_fn)dlsym(RTLD_DEFAULT, "nosv_attach");
    detach_fn detach = (detach_fn)dlsym(RTLD_DEFAULT, "nosv_detach");
    init_fn shutdown = (init_fn)dlsym(RTLD_DEFAULT, "nosv_shutdown");
    const int managed = init && attach && detach && shutdown;
    void* task = NULL;
    if (managed && (init() != 0 || attach(&task, NULL, "first", 0) != 0)) {
        fprintf(stderr, "omp_attached_first: cannot attach to coexec\n");
        return 1;
    }
    const int kernel = kernel_cpus();
    int team = 0;
#pragma omp parallel
    {
#pragma omp single
        team = omp_get_num_threads();
    }
    if (managed && (detach(0) != 0 || shutdown() != 0)) {
        fprintf(stderr, "omp_attached_first: cannot leave coexec\n");
        return 1;
    }
    printf("shown %d kernel %d team %d\n", CPU_COUNT(&shown), kernel, team);
    return 0;
}
