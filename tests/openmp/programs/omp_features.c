/* Exercises the OpenMP features the re-hosted libomp must keep working, and
 * checks every result. Usage: omp_features [feature...] (default: all).
 * Prints "ok <feature>" per feature; exits 1 on the first wrong result and 2
 * on an unknown feature name. Not in the default list: "sleep" blocks in
 * serial code (poll) for 30 s; "taskwait_storm" waits on hidden helper tasks
 * from every thread of a team, and "handshake" busy-waits in user code for a
 * teammate (run these two in two processes at once). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <omp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static long sum_to(long n) {
    return n * (n - 1) / 2;
}

static void reduction(void) {
    const long n = 2000000;
    long sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (long i = 0; i < n; ++i)
        sum += i;
    CHECK(sum == sum_to(n));
    sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(dynamic, 64)
    for (long i = 0; i < n; ++i)
        sum += i;
    CHECK(sum == sum_to(n));
}

/* More threads than CPUs: barriers must not deadlock when coexec grants fewer
 * CPUs than the team has threads. */
static void oversubscribed(void) {
    const int threads = 4 * omp_get_num_procs();
    int arrived = 0;
#pragma omp parallel num_threads(threads)
    {
        for (int round = 0; round < 50; ++round) {
#pragma omp barrier
        }
#pragma omp atomic
        arrived++;
    }
    CHECK(arrived == threads);
}

static void set_num_threads(void) {
    for (int n = 1; n <= 5; ++n) {
        omp_set_num_threads(n);
        int seen = 0;
#pragma omp parallel
        {
#pragma omp single
            seen = omp_get_num_threads();
        }
        CHECK(seen == n);
    }
    omp_set_num_threads(omp_get_num_procs());
}

static void nested(void) {
    omp_set_max_active_levels(2);
    int total = 0;
#pragma omp parallel num_threads(2) reduction(+ : total)
    {
#pragma omp parallel num_threads(3) reduction(+ : total)
        {
            CHECK(omp_get_level() == 2);
            total += 1;
        }
    }
    CHECK(total == 6);
    omp_set_max_active_levels(1);
}

static void task_dependences(void) {
    int a = 0, b = 0, c = 0;
#pragma omp parallel
#pragma omp single
    {
#pragma omp task depend(out : a)
        a = 1;
#pragma omp task depend(in : a) depend(out : b)
        b = a + 1;
#pragma omp task depend(in : b) depend(out : c)
        c = b + 1;
#pragma omp taskwait
    }
    CHECK(a == 1 && b == 2 && c == 3);

    long fib_n = 0;
#pragma omp parallel
#pragma omp single
    {
        long x = 0;
        for (int i = 0; i < 200; ++i) {
#pragma omp task shared(x)
            {
#pragma omp atomic
                x += i;
            }
        }
#pragma omp taskwait
        fib_n = x;
    }
    CHECK(fib_n == sum_to(200));
}

static void pause_resource(void) {
    long sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (long i = 0; i < 1000; ++i)
        sum += i;
    CHECK(sum == sum_to(1000));
    CHECK(omp_pause_resource_all(omp_pause_soft) == 0);
    sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (long i = 0; i < 1000; ++i)
        sum += i;
    CHECK(sum == sum_to(1000));
    CHECK(omp_pause_resource_all(omp_pause_hard) == 0);
    sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (long i = 0; i < 1000; ++i)
        sum += i;
    CHECK(sum == sum_to(1000));
}

/* libomp registers each process in /dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid>
 * and removes the file at exit; a child that leaves by _exit() keeps it, so
 * its parent removes it once the child is reaped. */
static void remove_libomp_registration(pid_t pid) {
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "__KMP_REGISTERED_LIB_%d_", (int)pid);
    DIR* dir = opendir("/dev/shm");
    if (!dir) return;
    for (struct dirent* e; (e = readdir(dir)) != NULL;)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) unlinkat(dirfd(dir), e->d_name, 0);
    closedir(dir);
}

static void fork_after_openmp(void) {
    long sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (long i = 0; i < 1000; ++i)
        sum += i;
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        long child = 0;
#pragma omp parallel for reduction(+ : child)
        for (long i = 0; i < 1000; ++i)
            child += i;
        _exit(child == sum_to(1000) ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    remove_libomp_registration(pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A target region with no device falls back to the host; `nowait` runs it
 * as a hidden helper task (libomp only: GCC's offloading entry points are not
 * part of libomp's GOMP interface, so GCC builds check a detached task). */
static void hidden_helper(void) {
    int x = 0;
#if defined(__clang__)
#pragma omp target nowait map(tofrom : x)
    x = 42;
#pragma omp taskwait
#else
#pragma omp parallel
#pragma omp single
    {
#pragma omp task shared(x)
        x = 42;
    }
#endif
    CHECK(x == 42);
}

/* Every thread of the team waits (taskwait) on a chain of a task, a hidden
 * helper task and a task, 400 times. Two processes sharing the CPUs leave
 * each team fewer CPUs than threads: a waiter must let its teammates run. */
static void taskwait_storm(void) {
    int done = 0;
#pragma omp parallel for reduction(+ : done)
    for (int i = 0; i < 400; ++i) {
        int a = -1, b = -1, c = -1, dep = 0;
#pragma omp task shared(a) depend(inout : dep)
        a = i;
#if defined(__clang__)
#pragma omp target nowait map(tofrom : b) depend(inout : dep)
        b = i + 1;
#else
#pragma omp task shared(b) depend(inout : dep)
        b = i + 1;
#endif
#pragma omp task shared(a, b, c) depend(inout : dep)
        c = a + b;
#pragma omp taskwait
        (void)dep;
        done += c == 2 * i + 1;
    }
    CHECK(done == 400);
}

/* Two threads of a team take turns through a shared counter, busy-waiting in
 * user code with no OpenMP call (as LLVM's kmp_atomic_cas tests do). Each
 * needs the other to run at the same time: two such processes sharing the
 * CPUs deadlock unless a CPU holder that never reaches a scheduling point
 * can be preempted. */
static void handshake(void) {
    const int rounds = 8;
    for (int r = 0; r < rounds; ++r) {
        int turn = 0;
#pragma omp parallel num_threads(2) shared(turn)
        {
            const int me = omp_get_thread_num();
            for (int step = me; step < 8; step += 2) {
                int seen;
                do {
#pragma omp atomic read
                    seen = turn;
                } while (seen != step);
#pragma omp atomic update
                turn++;
            }
        }
        CHECK(turn == 8);
    }
}

static void* read_affinity(void* out) {
    CHECK(sched_getaffinity(0, sizeof(cpu_set_t), (cpu_set_t*)out) == 0);
    return NULL;
}

/* Runs parallel regions and checks that serial code afterwards has `want`
 * as its affinity, and so has a thread it creates. */
static void expect_serial_affinity(const cpu_set_t* want) {
    for (int r = 0; r < 50; ++r) {
        long sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(dynamic, 16)
        for (long i = 0; i < 20000; ++i)
            sum += i;
        CHECK(sum == sum_to(20000));
        cpu_set_t now;
        CHECK(sched_getaffinity(0, sizeof now, &now) == 0);
        CHECK(CPU_EQUAL(&now, want));
    }
    cpu_set_t child;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, read_affinity, &child) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(CPU_EQUAL(&child, want));
}

/* Serial code runs with the affinity the program gave it, whatever the
 * runtime did with CPUs during the regions: the one it started with, and
 * one it sets itself between regions. */
static void root_affinity(void) {
    cpu_set_t own;
    CHECK(sched_getaffinity(0, sizeof own, &own) == 0);
    expect_serial_affinity(&own);
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &own)) last = c;
    cpu_set_t narrowed;
    CPU_ZERO(&narrowed);
    CPU_SET(last, &narrowed);
    CHECK(sched_setaffinity(0, sizeof narrowed, &narrowed) == 0);
    expect_serial_affinity(&narrowed);
    CHECK(sched_setaffinity(0, sizeof own, &own) == 0);
}

/* Serial code that blocks in the kernel for a long time after OpenMP ran
 * (not in the default list): a re-hosted root thread must not hold a CPU
 * meanwhile. poll() is used because the adapter does not wrap it (it wraps
 * the sleep functions), so only the root policy keeps the CPU free. */
static void sleep_serial(void) {
    poll(NULL, 0, 30000);
}

struct feature {
    const char* name;
    void (*run)(void);
};

static const struct feature features[] = {
    {"reduction", reduction},
    {"oversubscribed", oversubscribed},
    {"set_num_threads", set_num_threads},
    {"nested", nested},
    {"tasks", task_dependences},
    {"pause", pause_resource},
    {"fork", fork_after_openmp},
    {"hidden_helper", hidden_helper},
    {"root_affinity", root_affinity},
};
static const struct feature extra_features[] = {
    {"sleep", sleep_serial}, {"taskwait_storm", taskwait_storm}, {"handshake", handshake}};

static const struct feature* find(const char* name) {
    for (size_t i = 0; i < sizeof features / sizeof features[0]; ++i)
        if (strcmp(features[i].name, name) == 0) return &features[i];
    for (size_t i = 0; i < sizeof extra_features / sizeof extra_features[0]; ++i)
        if (strcmp(extra_features[i].name, name) == 0) return &extra_features[i];
    return NULL;
}

int main(int argc, char** argv) {
    /* Each "ok" line as it happens: tests wait for them while it runs. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 1) {
        for (size_t i = 0; i < sizeof features / sizeof features[0]; ++i) {
            features[i].run();
            printf("ok %s\n", features[i].name);
        }
        return 0;
    }
    for (int i = 1; i < argc; ++i) {
        const struct feature* f = find(argv[i]);
        if (f == NULL) {
            fprintf(stderr, "omp_features: unknown feature '%s'\n", argv[i]);
            return 2;
        }
        f->run();
        printf("ok %s\n", f->name);
        fflush(stdout);
    }
    return 0;
}
