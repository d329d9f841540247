// The C library's blocking calls, as libcoexec-host.so exports them: a
// program thread that coexec hosts (host_main.cpp) gives its CPU away while
// it waits in one, and takes a CPU back when the call returns. Any other
// thread, and a hosted thread's call from inside coexec or an adapter, goes
// to the next definition unchanged (libc's, or a later interposer's: the
// re-hosted libomp's sleep and yield wrappers, say). These take effect
// because `coexec run` preloads this library; nothing links against it
// (core/interpose/host_calls.h says why).
//
// How the CPU goes away depends on what the thread waits for:
//   - waits for other threads (condition variables, contended locks,
//     semaphores, barriers, joins), for time, for a descriptor to be ready
//     or for a child lend it (coexec_lend_cpu): work that waits for a CPU,
//     of any process, takes it at once (the thread may be waiting for that
//     very work, as a main thread waits for the tasks it spawned, or for a
//     lock whose holder, hosted too, waits for a CPU to run and let go),
//     and if none did, it comes back without a hand-off;
//   - the calls that are often short (read, recv, accept: a regular file,
//     a socket with data) keep it (coexec_keep_cpu): it is taken only once
//     the thread has stayed inside for a while (two looks of a monitor)
//     and some process waits, and it comes back with one atomic operation.
//     Giving a CPU away at every short read would cost two hand-offs each.
// Locks were kept too once, as their holder mostly runs and lets go soon;
// with every thread of a process hosted (COEXEC_HOST_THREADS=all) the
// holder is often one that waits for the CPU the waiters keep: eight
// Python threads calling OpenBLAS's pthreads build, which serialises them
// on a mutex, took 5.2 s with locks kept and 1.2-1.3 s with them lent (2
// CPUs; the same program without coexec 1.6-2.6 s).
// A lock or semaphore is tried first, so an uncontended one costs what it
// costs without coexec, plus a thread-local check.
#include "core/host/host_mode.hpp"
#include "core/interpose/forwarded_call.hpp"
#include "core/interpose/host_calls.h"
#include "core/interpose/next_definition.hpp"
#include "shm/clock.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <optional>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define COEXEC_INTERPOSE extern "C" __attribute__((visibility("default")))

namespace coexec::host {
namespace {

bool hosted_program_call(const void* caller) {
    return coexec_host_call(caller) & COEXEC_HOST_PROGRAM;
}

bool coexec_thread_call(const void* caller) {
    return coexec_host_call(caller) & COEXEC_HOST_LOCKER;
}

bool take_lent_asleep() {
    return coexec_host_take_lent_asleep() != 0;
}

bool reclaim_cpu_now() {
    return coexec_host_reclaim_cpu() != 0;
}

// Program threads whose CPU went away in a wait here and that have not
// taken one back (ThreadAway). Relaxed: a yield that reads it late (see
// sched_yield()) decides one spin as if the count were still the old one.
std::atomic<int> g_threads_away{0};

// Counts the calling thread in g_threads_away for its scope.
class ThreadAway {
  public:
    ThreadAway() { g_threads_away.fetch_add(1, std::memory_order_relaxed); }
    ~ThreadAway() { g_threads_away.fetch_sub(1, std::memory_order_relaxed); }
    ThreadAway(const ThreadAway&) = delete;
    ThreadAway& operator=(const ThreadAway&) = delete;
};

bool some_thread_away() {
    return g_threads_away.load(std::memory_order_relaxed) != 0;
}

// Under all, the kernel's yield after a hosted thread's own (sched_yield()),
// for the calling thread. A hosted thread whose wait here ends while its
// CPU is away must run before it can ask coexec for a CPU at all, and the
// kernel runs it where it slept: often on the CPU that a spinning thread of
// its process holds now. Holders run under SCHED_BATCH, which a waking
// thread does not preempt, so it waited for the spinner's time slice to
// end. A Dask blocked matmul (two scheduler threads calling OpenBLAS's
// pthreads build, whose pool thread spins with sched_yield) took 0.80-0.86 s
// so, 0.68-0.69 s with the kernel's yield, 0.70-0.82 s without coexec (2
// CPUs). While no hosted thread is away (g_threads_away), no such thread
// exists and the kernel's yield is skipped.
//
// The kernel's yield also hands a program outside coexec that shares the
// CPU (a CPU hog) a whole time slice: once per spin, two OpenBLAS threads
// pinned beside hogs waited for each other through those slices (40 LU
// solves, n = 400: 3.8-4.4 s, against 0.6-1.1 s without the kernel's yield;
// stock OpenBLAS, unpinned, 0.55 s or 4.5 s from run to run; 2 CPUs). A
// yield that lasts kLongNs or more ran such a program: the thread then
// skips the kernel's yield for a while, twice as long after each long one,
// and starts over after a short one. A woken thread of ours runs for
// microseconds before it sleeps for a CPU, far less than kLongNs. (40 LU
// solves in a thread beside two hogs, while the main thread joins it: 4.5 s
// without the back-off, 0.34-0.54 s with it; stock 4.1-4.5 s.)
class KernelYield {
  public:
    int yield(int (*kernel_yield)()) {
        const uint64_t start = coexec::shm::now_ns();
        if (start < quiet_until_) return 0;
        const int rc = kernel_yield();
        const uint64_t end = coexec::shm::now_ns();
        if (end - start < kLongNs) {
            backoff_ = kFirstBackoffNs;
        } else {
            quiet_until_ = end + backoff_;
            backoff_ = std::min(2 * backoff_, kLastBackoffNs);
        }
        return rc;
    }

    static constexpr uint64_t kLongNs = 1'000'000;
    static constexpr uint64_t kFirstBackoffNs = 10'000'000;
    static constexpr uint64_t kLastBackoffNs = 1'000'000'000;

  private:
    uint64_t quiet_until_ = 0;
    uint64_t backoff_ = kFirstBackoffNs;
};

// Trivially destructible, so a thread-local costs no exit handler.
thread_local KernelYield t_kernel_yield;

// A hosted thread that spins on sched_yield with nothing between its yields
// (an idle pool looking for its next job: OpenBLAS's pthreads pool does so
// for 0.1 s after each call unless OPENBLAS_THREAD_TIMEOUT, which `coexec
// run` sets, says less; a program's own pool may for ever) queues for a CPU
// again after each yield. An OpenMP team of its process then finds it
// waiting at every barrier, and its waits hand it a CPU and wait to get one
// back: a team of 2 opening 20,000 short regions beside such a spinner took
// 0.61-2.9 s, against 0.19 s without the spinner and 0.20-0.52 s without
// coexec (2 CPUs). So once a thread has spun for kSpinNs, a yield while
// work waits for a CPU naps instead: the thread lends its CPU for a 32nd of
// its spin so far, at most kLastNapNs, and looks again: the team then took
// 0.21-0.30 s in 14 runs of 19, 0.38-1.12 s in the others (a run can end
// early, see below). The job such a pool waits for is posted
// in memory, where no wake-up reaches the nap: it starts up to a 32nd of
// the pool's idle time late.
//
// The spin is the thread's run of yields with less than kGapNs between one
// yield's return and the next call; a longer gap ran some work (a worker
// that yields between work items, or a pool thread between the waits of a
// job) and starts a new run. Counting two long gaps in a row instead, so
// that the kernel running another program in a gap would not end a run,
// made threads that alternate work and short waits nap in every wait: two
// PyTorch processes took 2.2 s instead of 0.9 s.
class SpinStreak {
  public:
    // How long the yield called at `now` naps instead, in ns; 0 for none.
    uint64_t nap(uint64_t now) {
        if (now - returned_ > kGapNs) started_ = now;
        const uint64_t spun = now - started_;
        return spun < kSpinNs ? 0 : std::min(spun / 32, kLastNapNs);
    }
    // The yield returned at `now`.
    void returned(uint64_t now) { returned_ = now; }

    static constexpr uint64_t kGapNs = 10'000;
    static constexpr uint64_t kSpinNs = 10'000'000;
    static constexpr uint64_t kLastNapNs = 1'000'000;

  private:
    uint64_t returned_ = 0;
    uint64_t started_ = 0;
};

thread_local SpinStreak t_spin_streak;

// The CPU, away while a blocking call of a hosted program thread waits.
class CpuAway {
  public:
    CpuAway(const void* caller, int (*step)()) {
        // A null caller: the call does not wait (a zero timeout, WNOHANG).
        if (caller && hosted_program_call(caller) && (take_lent_asleep() || step() == NOSV_SUCCESS))
            away_.emplace();
    }
    ~CpuAway() {
        if (!away_) return;
        const int saved = errno;
        coexec_block_exit();
        errno = saved;
    }
    CpuAway(const CpuAway&) = delete;
    CpuAway& operator=(const CpuAway&) = delete;

  private:
    std::optional<ThreadAway> away_; // engaged while the CPU is away
};

// The next definition of each call, looked up once (next_definition.hpp).
#define COEXEC_NEXT(name, type)                                                                    \
    type next_##name() {                                                                           \
        static std::atomic<type> cache{nullptr};                                                   \
        return coexec::core::next_definition(cache, #name);                                        \
    }

using CondWaitFn = int (*)(pthread_cond_t*, pthread_mutex_t*);
using CondTimedFn = int (*)(pthread_cond_t*, pthread_mutex_t*, const timespec*);
using CondClockFn = int (*)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const timespec*);
using MutexFn = int (*)(pthread_mutex_t*);
using MutexTimedFn = int (*)(pthread_mutex_t*, const timespec*);
using RwFn = int (*)(pthread_rwlock_t*);
using RwTimedFn = int (*)(pthread_rwlock_t*, const timespec*);
using SemFn = int (*)(sem_t*);
using SemTimedFn = int (*)(sem_t*, const timespec*);
using SemClockFn = int (*)(sem_t*, clockid_t, const timespec*);
using JoinFn = int (*)(pthread_t, void**);
using BarrierFn = int (*)(pthread_barrier_t*);
using YieldFn = int (*)();
using NanosleepFn = int (*)(const timespec*, timespec*);
using ClockNanosleepFn = int (*)(clockid_t, int, const timespec*, timespec*);
using UsleepFn = int (*)(useconds_t);
using SleepFn = unsigned (*)(unsigned);
using PollFn = int (*)(pollfd*, nfds_t, int);
using PpollFn = int (*)(pollfd*, nfds_t, const timespec*, const sigset_t*);
using SelectFn = int (*)(int, fd_set*, fd_set*, fd_set*, timeval*);
using PselectFn = int (*)(int, fd_set*, fd_set*, fd_set*, const timespec*, const sigset_t*);
using EpollWaitFn = int (*)(int, epoll_event*, int, int);
using EpollPwaitFn = int (*)(int, epoll_event*, int, int, const sigset_t*);
using ReadFn = ssize_t (*)(int, void*, size_t);
using ReadvFn = ssize_t (*)(int, const iovec*, int);
using RecvFn = ssize_t (*)(int, void*, size_t, int);
using RecvfromFn = ssize_t (*)(int, void*, size_t, int, sockaddr*, socklen_t*);
using RecvmsgFn = ssize_t (*)(int, msghdr*, int);
using AcceptFn = int (*)(int, sockaddr*, socklen_t*);
using Accept4Fn = int (*)(int, sockaddr*, socklen_t*, int);
using WaitpidFn = pid_t (*)(pid_t, int*, int);
using WaitFn = pid_t (*)(int*);
using WaitidFn = int (*)(idtype_t, id_t, siginfo_t*, int);

COEXEC_NEXT(pthread_cond_wait, CondWaitFn)
COEXEC_NEXT(pthread_cond_timedwait, CondTimedFn)
COEXEC_NEXT(pthread_cond_clockwait, CondClockFn)
COEXEC_NEXT(pthread_mutex_lock, MutexFn)
COEXEC_NEXT(pthread_mutex_trylock, MutexFn)
COEXEC_NEXT(pthread_mutex_timedlock, MutexTimedFn)
COEXEC_NEXT(pthread_rwlock_rdlock, RwFn)
COEXEC_NEXT(pthread_rwlock_wrlock, RwFn)
COEXEC_NEXT(pthread_rwlock_tryrdlock, RwFn)
COEXEC_NEXT(pthread_rwlock_trywrlock, RwFn)
COEXEC_NEXT(pthread_rwlock_timedrdlock, RwTimedFn)
COEXEC_NEXT(pthread_rwlock_timedwrlock, RwTimedFn)
COEXEC_NEXT(sem_wait, SemFn)
COEXEC_NEXT(sem_trywait, SemFn)
COEXEC_NEXT(sem_timedwait, SemTimedFn)
COEXEC_NEXT(sem_clockwait, SemClockFn)
COEXEC_NEXT(pthread_join, JoinFn)
COEXEC_NEXT(pthread_tryjoin_np, JoinFn)
COEXEC_NEXT(pthread_barrier_wait, BarrierFn)
COEXEC_NEXT(sched_yield, YieldFn)
COEXEC_NEXT(nanosleep, NanosleepFn)
COEXEC_NEXT(clock_nanosleep, ClockNanosleepFn)
COEXEC_NEXT(usleep, UsleepFn)
COEXEC_NEXT(sleep, SleepFn)
COEXEC_NEXT(poll, PollFn)
COEXEC_NEXT(ppoll, PpollFn)
COEXEC_NEXT(select, SelectFn)
COEXEC_NEXT(pselect, PselectFn)
COEXEC_NEXT(epoll_wait, EpollWaitFn)
COEXEC_NEXT(epoll_pwait, EpollPwaitFn)
COEXEC_NEXT(read, ReadFn)
COEXEC_NEXT(readv, ReadvFn)
COEXEC_NEXT(recv, RecvFn)
COEXEC_NEXT(recvfrom, RecvfromFn)
COEXEC_NEXT(recvmsg, RecvmsgFn)
COEXEC_NEXT(accept, AcceptFn)
COEXEC_NEXT(accept4, Accept4Fn)
COEXEC_NEXT(waitpid, WaitpidFn)
COEXEC_NEXT(wait, WaitFn)
COEXEC_NEXT(waitid, WaitidFn)

#undef COEXEC_NEXT

constexpr auto lend = coexec_lend_cpu;
constexpr auto keep = coexec_keep_cpu;

bool zero(const timespec* t) {
    return t && t->tv_sec == 0 && t->tv_nsec == 0;
}
bool zero(const timeval* t) {
    return t && t->tv_sec == 0 && t->tv_usec == 0;
}

// ---- locks --------------------------------------------------------------
//
// A thread never waits for a CPU while it holds a lock it took here: the
// threads waiting for that lock may hold every CPU it could get (a worker
// blocked in the kernel keeps its CPU), and none would ever let go. So when
// the CPU was taken while the thread waited for the lock, it lets go of the
// lock, waits for a CPU, and tries again. To the program this looks like a
// lock that another thread took first, which a lock may always do.

// Locks with `lock()` (which blocks, maybe until a deadline), the CPU lent
// while it waits; `try_lock()` tries again, `unlock()` lets go. Starts once
// a try said EBUSY.
template <typename Lock, typename TryLock, typename Unlock>
int lock_away(Lock lock, TryLock try_lock, Unlock unlock) {
    for (;;) {
        if (!take_lent_asleep() && coexec_lend_cpu() != NOSV_SUCCESS) return lock();
        const ThreadAway away;
        const int rc = lock();
        // Not taken (an error, a deadline passed, or a robust mutex's
        // EOWNERDEAD, whose state the caller must repair before anyone else
        // may lock it): wait for the CPU as it is.
        if (rc != 0 || reclaim_cpu_now()) {
            if (rc != 0) coexec_block_exit();
            return rc;
        }
        unlock();
        coexec_block_exit();
        if (int again = try_lock(); again != EBUSY) return again;
    }
}

int mutex_unlock(pthread_mutex_t* m) {
    static std::atomic<MutexFn> cache{nullptr};
    return coexec::core::next_definition(cache, "pthread_mutex_unlock")(m);
}

int rwlock_unlock(pthread_rwlock_t* l) {
    static std::atomic<RwFn> cache{nullptr};
    return coexec::core::next_definition(cache, "pthread_rwlock_unlock")(l);
}

// A condition variable's wait returns with its mutex locked: if the CPU
// was taken meanwhile, the mutex is let go of while the thread waits for a
// CPU, and locked again as above (a wake-up after which another thread
// locked the mutex first).
template <typename Wait>
int cond_wait_away(pthread_mutex_t* m, Wait wait) {
    if (!take_lent_asleep() && coexec_lend_cpu() != NOSV_SUCCESS) return wait();
    int rc;
    {
        const ThreadAway away;
        rc = wait();
        if (rc == EOWNERDEAD || reclaim_cpu_now()) {
            if (rc == EOWNERDEAD) coexec_block_exit();
            return rc;
        }
        mutex_unlock(m);
        coexec_block_exit();
    }
    if (next_pthread_mutex_trylock()(m) == EBUSY)
        lock_away([m] { return next_pthread_mutex_lock()(m); },
                  [m] { return next_pthread_mutex_trylock()(m); }, [m] { mutex_unlock(m); });
    return rc;
}

// What take_lock() needs of a mutex, and of a read-write lock (taken for
// reading or for writing).
struct MutexOps {
    pthread_mutex_t* m;
    int try_lock() const { return next_pthread_mutex_trylock()(m); }
    void unlock() const { mutex_unlock(m); }
};

struct RwOps {
    pthread_rwlock_t* l;
    bool read;
    int try_lock() const {
        return read ? next_pthread_rwlock_tryrdlock()(l) : next_pthread_rwlock_trywrlock()(l);
    }
    void unlock() const { rwlock_unlock(l); }
};

// A lock taken from `caller` with `lock()`: tried first, then waited for
// with the CPU away (lock_away()) when a thread that holds a coexec CPU
// waits in the program's code.
template <typename Lock, typename Ops>
int take_lock(const void* caller, Lock lock, const Ops& ops) {
    // The uncontended lock first, before anything else: its cost is the
    // wrapper's call and one trylock.
    if (int rc = ops.try_lock(); rc != EBUSY) return rc;
    if (!coexec_thread_call(caller)) return lock();
    return lock_away(
        lock, [&ops] { return ops.try_lock(); }, [&ops] { ops.unlock(); });
}

// A semaphore waited for from `caller` with `wait()`: tried first, then
// waited for with the CPU lent. sem_trywait reports EAGAIN through errno,
// which the wait then overwrites.
template <typename Wait>
int take_semaphore(const void* caller, sem_t* s, Wait wait) {
    const int saved = errno;
    if (next_sem_trywait()(s) == 0) return 0;
    errno = saved;
    CpuAway away(caller, lend);
    return wait();
}

} // namespace
} // namespace coexec::host

using namespace coexec::host;

#define CALLER __builtin_extract_return_addr(__builtin_return_address(0))
// A forwarded call that a later interposer may tell apart by its caller
// (the PoCL adapter's: the condition variables, joins, barriers) says whom
// it came from (coexec_interposed_caller()). The locks and semaphores,
// which no adapter wraps, skip it.
#define FORWARDED const coexec::core::ForwardedCall forwarded(*coexec_host_caller_slot(), CALLER)

// ---- waits for another thread -----------------------------------------

COEXEC_INTERPOSE int pthread_cond_wait(pthread_cond_t* c, pthread_mutex_t* m) {
    FORWARDED;
    if (!hosted_program_call(CALLER)) return next_pthread_cond_wait()(c, m);
    return cond_wait_away(m, [&] { return next_pthread_cond_wait()(c, m); });
}

COEXEC_INTERPOSE int pthread_cond_timedwait(pthread_cond_t* c, pthread_mutex_t* m,
                                            const timespec* at) {
    FORWARDED;
    if (!hosted_program_call(CALLER)) return next_pthread_cond_timedwait()(c, m, at);
    return cond_wait_away(m, [&] { return next_pthread_cond_timedwait()(c, m, at); });
}

COEXEC_INTERPOSE int pthread_cond_clockwait(pthread_cond_t* c, pthread_mutex_t* m, clockid_t clock,
                                            const timespec* at) {
    FORWARDED;
    if (!hosted_program_call(CALLER)) return next_pthread_cond_clockwait()(c, m, clock, at);
    return cond_wait_away(m, [&] { return next_pthread_cond_clockwait()(c, m, clock, at); });
}

// A lock is tried first: only a wait gives the CPU away, and it does so for
// any thread that holds a coexec CPU (coexec_thread_call()). trylock's other
// answers are lock's too (a robust mutex's EOWNERDEAD, with the lock taken).
// The deadlines of the timed forms are absolute: each retry keeps them.
COEXEC_INTERPOSE int pthread_mutex_lock(pthread_mutex_t* m) {
    return take_lock(
        CALLER, [m] { return next_pthread_mutex_lock()(m); }, MutexOps{m});
}

COEXEC_INTERPOSE int pthread_mutex_timedlock(pthread_mutex_t* m, const timespec* at) {
    return take_lock(
        CALLER, [m, at] { return next_pthread_mutex_timedlock()(m, at); }, MutexOps{m});
}

COEXEC_INTERPOSE int pthread_rwlock_rdlock(pthread_rwlock_t* l) {
    return take_lock(
        CALLER, [l] { return next_pthread_rwlock_rdlock()(l); }, RwOps{l, true});
}

COEXEC_INTERPOSE int pthread_rwlock_wrlock(pthread_rwlock_t* l) {
    return take_lock(
        CALLER, [l] { return next_pthread_rwlock_wrlock()(l); }, RwOps{l, false});
}

COEXEC_INTERPOSE int pthread_rwlock_timedrdlock(pthread_rwlock_t* l, const timespec* at) {
    return take_lock(
        CALLER, [l, at] { return next_pthread_rwlock_timedrdlock()(l, at); }, RwOps{l, true});
}

COEXEC_INTERPOSE int pthread_rwlock_timedwrlock(pthread_rwlock_t* l, const timespec* at) {
    return take_lock(
        CALLER, [l, at] { return next_pthread_rwlock_timedwrlock()(l, at); }, RwOps{l, false});
}

COEXEC_INTERPOSE int sem_wait(sem_t* s) {
    return take_semaphore(CALLER, s, [s] { return next_sem_wait()(s); });
}

COEXEC_INTERPOSE int sem_timedwait(sem_t* s, const timespec* at) {
    return take_semaphore(CALLER, s, [s, at] { return next_sem_timedwait()(s, at); });
}

COEXEC_INTERPOSE int sem_clockwait(sem_t* s, clockid_t clock, const timespec* at) {
    return take_semaphore(CALLER, s, [s, clock, at] { return next_sem_clockwait()(s, clock, at); });
}

COEXEC_INTERPOSE int pthread_join(pthread_t t, void** result) {
    FORWARDED;
    const void* caller = CALLER;
    if (!hosted_program_call(caller)) return next_pthread_join()(t, result);
    if (int rc = next_pthread_tryjoin_np()(t, result); rc != EBUSY) return rc;
    CpuAway away(caller, lend);
    return next_pthread_join()(t, result);
}

COEXEC_INTERPOSE int pthread_barrier_wait(pthread_barrier_t* b) {
    FORWARDED;
    CpuAway away(CALLER, lend);
    return next_pthread_barrier_wait()(b);
}

// ---- yields and sleeps -------------------------------------------------

// A yield is a yield (nosv_yield): when work waits for the CPU, of this
// process or another, it goes to that work first and the thread queues for
// a CPU behind it; otherwise the thread keeps it, at the cost of a look at
// two counters. It was a scheduling point once (nosv_schedpoint: give way
// only once the thread's turn is over); threads that spin on sched_yield
// for each other's results (OpenBLAS's pthreads pool hands work to its
// threads that way) then kept their CPUs for a whole quantum while the
// thread they waited for waited for one: 4 NumPy processes took 7.5 s
// instead of 1.8 s (2 CPUs).
//
// Then the kernel's yield (the re-hosted libomp's, when it is loaded), for
// threads that may share the CPU without holding it: under main, the
// threads the program starts, which coexec does not place; under all, a
// hosted thread whose wait here ended while its CPU was away (see
// KernelYield).
//
// A thread that has spun on its yields for a while naps instead, while work
// waits for a CPU (SpinStreak).
COEXEC_INTERPOSE int sched_yield() noexcept {
    FORWARDED;
    if (!hosted_program_call(CALLER)) return next_sched_yield()();
    int rc = 0;
    if (const uint64_t nap = t_spin_streak.nap(coexec::shm::now_ns());
        nap != 0 && coexec_cpu_wanted() != 0) {
        CpuAway away(CALLER, lend);
        const timespec t{0, static_cast<long>(nap)};
        next_nanosleep()(&t, nullptr);
    } else {
        nosv_yield(NOSV_YIELD_NONE);
        if (!every_program_thread_hosted())
            rc = next_sched_yield()();
        else if (some_thread_away())
            rc = t_kernel_yield.yield(next_sched_yield());
    }
    t_spin_streak.returned(coexec::shm::now_ns());
    return rc;
}

COEXEC_INTERPOSE int nanosleep(const timespec* req, timespec* rem) {
    FORWARDED;
    CpuAway away(CALLER, lend);
    return next_nanosleep()(req, rem);
}

COEXEC_INTERPOSE int clock_nanosleep(clockid_t clock, int flags, const timespec* req,
                                     timespec* rem) {
    FORWARDED;
    CpuAway away(CALLER, lend);
    return next_clock_nanosleep()(clock, flags, req, rem);
}

COEXEC_INTERPOSE int usleep(useconds_t usec) {
    FORWARDED;
    CpuAway away(CALLER, lend);
    return next_usleep()(usec);
}

COEXEC_INTERPOSE unsigned sleep(unsigned seconds) {
    FORWARDED;
    CpuAway away(CALLER, lend);
    return next_sleep()(seconds);
}

// ---- waits for descriptors and children --------------------------------

// A zero timeout only polls: the CPU stays.
COEXEC_INTERPOSE int poll(pollfd* fds, nfds_t n, int timeout_ms) {
    FORWARDED;
    CpuAway away(timeout_ms == 0 ? nullptr : CALLER, lend);
    return next_poll()(fds, n, timeout_ms);
}

COEXEC_INTERPOSE int ppoll(pollfd* fds, nfds_t n, const timespec* timeout, const sigset_t* mask) {
    FORWARDED;
    CpuAway away(zero(timeout) ? nullptr : CALLER, lend);
    return next_ppoll()(fds, n, timeout, mask);
}

COEXEC_INTERPOSE int select(int n, fd_set* r, fd_set* w, fd_set* e, timeval* timeout) {
    FORWARDED;
    CpuAway away(zero(timeout) ? nullptr : CALLER, lend);
    return next_select()(n, r, w, e, timeout);
}

COEXEC_INTERPOSE int pselect(int n, fd_set* r, fd_set* w, fd_set* e, const timespec* timeout,
                             const sigset_t* mask) {
    FORWARDED;
    CpuAway away(zero(timeout) ? nullptr : CALLER, lend);
    return next_pselect()(n, r, w, e, timeout, mask);
}

COEXEC_INTERPOSE int epoll_wait(int ep, epoll_event* events, int max, int timeout_ms) {
    FORWARDED;
    CpuAway away(timeout_ms == 0 ? nullptr : CALLER, lend);
    return next_epoll_wait()(ep, events, max, timeout_ms);
}

COEXEC_INTERPOSE int epoll_pwait(int ep, epoll_event* events, int max, int timeout_ms,
                                 const sigset_t* mask) {
    FORWARDED;
    CpuAway away(timeout_ms == 0 ? nullptr : CALLER, lend);
    return next_epoll_pwait()(ep, events, max, timeout_ms, mask);
}

COEXEC_INTERPOSE ssize_t read(int fd, void* buf, size_t n) {
    FORWARDED;
    CpuAway away(CALLER, keep);
    return next_read()(fd, buf, n);
}

COEXEC_INTERPOSE ssize_t readv(int fd, const iovec* iov, int n) {
    FORWARDED;
    CpuAway away(CALLER, keep);
    return next_readv()(fd, iov, n);
}

COEXEC_INTERPOSE ssize_t recv(int fd, void* buf, size_t n, int flags) {
    FORWARDED;
    CpuAway away(flags & MSG_DONTWAIT ? nullptr : CALLER, keep);
    return next_recv()(fd, buf, n, flags);
}

COEXEC_INTERPOSE ssize_t recvfrom(int fd, void* buf, size_t n, int flags, sockaddr* from,
                                  socklen_t* len) {
    FORWARDED;
    CpuAway away(flags & MSG_DONTWAIT ? nullptr : CALLER, keep);
    return next_recvfrom()(fd, buf, n, flags, from, len);
}

COEXEC_INTERPOSE ssize_t recvmsg(int fd, msghdr* msg, int flags) {
    FORWARDED;
    CpuAway away(flags & MSG_DONTWAIT ? nullptr : CALLER, keep);
    return next_recvmsg()(fd, msg, flags);
}

COEXEC_INTERPOSE int accept(int fd, sockaddr* addr, socklen_t* len) {
    FORWARDED;
    CpuAway away(CALLER, keep);
    return next_accept()(fd, addr, len);
}

COEXEC_INTERPOSE int accept4(int fd, sockaddr* addr, socklen_t* len, int flags) {
    FORWARDED;
    CpuAway away(CALLER, keep);
    return next_accept4()(fd, addr, len, flags);
}

COEXEC_INTERPOSE pid_t waitpid(pid_t pid, int* status, int options) {
    FORWARDED;
    CpuAway away(options & WNOHANG ? nullptr : CALLER, lend);
    return next_waitpid()(pid, status, options);
}

COEXEC_INTERPOSE pid_t wait(int* status) {
    FORWARDED;
    CpuAway away(CALLER, lend);
    return next_wait()(status);
}

COEXEC_INTERPOSE int waitid(idtype_t type, id_t id, siginfo_t* info, int options) {
    FORWARDED;
    CpuAway away(options & WNOHANG ? nullptr : CALLER, lend);
    return next_waitid()(type, id, info, options);
}
