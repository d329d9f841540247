#include "cond_wait.hpp"

#include "cond_waiters.hpp"
#include "cpu_release.hpp"
#include "poll_score.hpp"
#include "real_pthread.hpp"

#include <coexec/ext.h>

#include <cstdlib>
#include <ctime>

namespace coexec::pocl {
namespace {

constexpr long kNsPerSec = 1'000'000'000;
constexpr long kSliceNs = 2'000;    // one poll: the caller re-checks after this
constexpr long kRecheckNs = 20'000; // a wait this soon after a poll continues it

long now_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * kNsPerSec + t.tv_nsec;
}

// COEXEC_POCL_SPIN_US, default 100; 0 turns polling off.
long poll_budget_ns() {
    static const long ns = [] {
        const char* v = std::getenv("COEXEC_POCL_SPIN_US");
        long us = v != nullptr && *v != '\0' ? std::strtol(v, nullptr, 10) : 100;
        return us > 0 && us < 1'000'000 ? us * 1000 : 0L;
    }();
    return ns;
}

// The waits of one thread on one condition variable that follow each other
// with only the caller's predicate check in between form one episode, which
// may poll for poll_budget_ns() in all. Thread-local: no synchronisation.
struct Episode {
    const pthread_cond_t* cond = nullptr;
    long deadline = 0;
    long last_poll_end = 0;
    bool polled = false; // polled at least once, and the outcome is not known yet
};
thread_local Episode episode;

thread_local PollScore poll_score;

// Polls on the CPU instead of sleeping, while nobody else wants the CPU:
// drops the mutex for a slice, takes it again and returns true, which the
// caller sees as a spurious wake-up and answers by re-checking its
// predicate. A command that arrives meanwhile is thus picked up without a
// kernel sleep or a CPU hand-over. Returns false when the episode's budget is
// spent, the CPU is wanted, or polling has not paid lately (PollScore); the
// caller must then really wait.
bool poll_on_cpu(pthread_cond_t* cond, pthread_mutex_t* mutex) {
    const long budget = poll_budget_ns();
    if (budget == 0) return false;
    long now = now_ns();
    Episode& e = episode;
    if (e.cond != cond || now - e.last_poll_end > kRecheckNs) {
        // The last episode polled, and its caller went on without waiting.
        if (e.polled) poll_score.won();
        e = Episode{cond, now + budget, 0, false};
        if (!poll_score.worth_polling()) {
            e.cond = nullptr;
            return false;
        }
    }
    if (now >= e.deadline || coexec_cpu_wanted()) {
        if (e.polled) poll_score.lost();
        e = Episode{};
        return false;
    }
    pthread_mutex_unlock(mutex);
    // Yielding lets a plain thread queued on this CPU (a host thread about
    // to enqueue) run first.
    for (const long end = now + kSliceNs; now_ns() < end && !coexec_cpu_wanted();)
        kernel_yield();
    pthread_mutex_lock(mutex);
    e.last_poll_end = now_ns();
    e.polled = true;
    return true;
}

} // namespace

int cond_wait_off_cpu(pthread_cond_t* cond, pthread_mutex_t* mutex) {
    // A thread outside coexec (an OpenMP root in serial code, in clFinish)
    // holds no CPU to poll on; the one it keeps is lent for the wait at once
    // (CpuRelease), since the PoCL workers it waits for need it.
    const bool outside = coexec_lend_kept_cpu() == NOSV_SUCCESS;
    if (!outside) {
        if (poll_on_cpu(cond, mutex)) return 0;
        // A thread on a CPU sleeps as a paused task, and the signal that
        // ends its wait hands it a CPU too (CondWaiters).
        if (CondWaiters::pause_works()) return CondWaiters::instance().wait(cond, mutex);
    }
    CpuRelease release;
    int rc = real_pthread().cond_wait(cond, mutex);
    release.retake_with_unlocked(mutex);
    return rc;
}

int cond_timedwait_off_cpu(pthread_cond_t* cond, pthread_mutex_t* mutex,
                           const struct timespec* deadline) {
    CpuRelease release;
    int rc = real_pthread().cond_timedwait(cond, mutex, deadline);
    release.retake_with_unlocked(mutex);
    return rc;
}

} // namespace coexec::pocl
