// The cost of libcoexec's wrappers of the C library's blocking calls
// (core/host/blocking_interpose.cpp), for blocking_calls.py:
//
//     coexec-bench-blocking-calls lock|condvar ITERATIONS
//
// lock: the main thread locks and unlocks one mutex that nobody else uses.
// condvar: the main thread and a second thread hand a turn back and forth
// through one mutex and one condition variable; one iteration is a round
// trip. Prints "ns_per_op <value>" for the whole loop. Built without
// libcoexec: blocking_calls.py runs it as is, with libcoexec preloaded,
// and with its main thread hosted.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <thread>

namespace {

pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
int g_turn = 0; // 0: the main thread's, 1: the other's

void lock_loop(long n) {
    for (long i = 0; i < n; ++i) {
        pthread_mutex_lock(&g_mutex);
        pthread_mutex_unlock(&g_mutex);
    }
}

// Waits for turn `mine`, then hands the turn over, `n` times.
void play(int mine, long n) {
    for (long i = 0; i < n; ++i) {
        pthread_mutex_lock(&g_mutex);
        while (g_turn != mine)
            pthread_cond_wait(&g_cond, &g_mutex);
        g_turn = 1 - mine;
        pthread_cond_signal(&g_cond);
        pthread_mutex_unlock(&g_mutex);
    }
}

void condvar_loop(long n) {
    std::thread other(play, 1, n);
    play(0, n);
    other.join();
}

} // namespace

int main(int argc, char** argv) {
    const long n = argc == 3 ? std::atol(argv[2]) : 0;
    const bool lock = argc == 3 && std::strcmp(argv[1], "lock") == 0;
    const bool condvar = argc == 3 && std::strcmp(argv[1], "condvar") == 0;
    if (n <= 0 || !(lock || condvar)) {
        std::fprintf(stderr, "usage: coexec-bench-blocking-calls lock|condvar ITERATIONS\n");
        return 2;
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (lock)
        lock_loop(n);
    else
        condvar_loop(n);
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - t0;
    std::printf("ns_per_op %.2f\n", took.count() / double(n));
    return 0;
}
