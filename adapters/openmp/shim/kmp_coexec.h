// coexec: the hooks that the patched libomp calls to re-host its threads.
//
// libomp stays in charge of its own protocol (flags, sleep bits, teams); these
// hooks only decide who holds a coexec CPU. Every hook is a no-op when coexec
// is off (COEXEC_DISABLE=1, nosv_init() failed, or a fork() child), so the
// runtime then behaves exactly as stock libomp.
#ifndef KMP_COEXEC_H
#define KMP_COEXEC_H

#include <atomic>

// Nonzero once this process runs libomp on coexec. Written once, before any
// worker exists, and read in spin loops, hence relaxed reads are enough.
extern std::atomic<int> __kmp_coexec_enabled;

// True when libomp runs on coexec in this process.
inline bool __kmp_coexec_on() {
    return __kmp_coexec_enabled.load(std::memory_order_relaxed);
}

// Joins coexec unless disabled; idempotent. On failure or when disabled it
// prints exactly one line on stderr and leaves coexec off for good.
void __kmp_coexec_initialize();

// Leaves coexec once libomp has shut down and no thread is attached anymore.
void __kmp_coexec_finalize();

// In a fork() child: forgets the parent's coexec state and keeps coexec off,
// since the child is not a member of the parent's instance.
void __kmp_coexec_atfork_child();

// A libomp worker thread starts (attach, label "openmp") or ends (detach).
// `eligible` is false for threads that must stay plain (hidden helpers).
void __kmp_coexec_worker_begin(bool eligible);
void __kmp_coexec_worker_end();

// The calling thread forks (begin) or joins (end) a parallel region. A root
// thread is attached at its first region; between outermost regions it keeps
// its CPU while serial code is short (COEXEC_OMP_ROOT=keep, the default),
// gives it back (=region), lends it to whoever needs it (=lend) or holds it
// (=hold).
void __kmp_coexec_region_begin(bool eligible);
void __kmp_coexec_region_end();

// The calling thread's handle for __kmp_coexec_wake() while it suspends,
// or nullptr when the thread must use libomp's own condition-variable wait
// (it holds no CPU we manage).
void* __kmp_coexec_sleeper();

// Pauses the calling thread's task until __kmp_coexec_wake() of its handle.
void __kmp_coexec_pause();

// Resumes the task of a thread whose __kmp_coexec_sleeper() handle the
// caller read under that thread's suspend mutex, which it still holds (the
// thread may not have paused yet: coexec keeps a submit that arrives before
// the pause). `team` is the woken thread's team, or null: see
// __kmp_coexec_wait_begins() for the turn it may take.
void __kmp_coexec_wake(void* sleeper, const void* team);

// Called instead of sched_yield(). Returns true when it handled the yield: a
// coexec thread gives its CPU only if some other thread waits for it. When
// one does, the first such yield asks the wait loop to sleep instead (see
// __kmp_coexec_sleep_requested()); if the loop did not take the request by
// the next probe, the yield hands the CPU over and requeues the thread.
bool __kmp_coexec_yield();

// Called once before a wait loop spins: its first __kmp_coexec_yield()
// probes, so a thread whose CPU a teammate waits for sleeps at once.
// `team` is the caller's team (or null); `team_on_cpus(thr)` tells whether
// every thread this wait may wait for holds a CPU, null for a worker's wait
// for the next region. While several teams of the process contend for the
// CPUs, the team that has the turn keeps them in its waits, from its own
// process's work only, while the answer is yes (for the next region: for a
// short while); see __kmp_coexec_yield().
void __kmp_coexec_wait_begins(int (*team_on_cpus)(void *thr), void *thr,
                              const void *team);

// Called when the wait that __kmp_coexec_wait_begins() began is over: spins
// until the next wait (a lock's, say) keep no CPU for a team.
void __kmp_coexec_wait_ends();

// Called by a wait loop that may sleep now: true, once, when a yield asked
// it to and a thread still waits for the CPU. The loop then suspends (a
// coexec pause) and the thread it waits for resumes it.
bool __kmp_coexec_sleep_requested();

// For OMP_DYNAMIC teams: stores coexec's spare CPUs (coexec_spare_cpus())
// and returns true, or returns false when coexec is off.
bool __kmp_coexec_spare_cpus(int* spare);

// libomp's read of the calling thread's mask (it sizes its default team by
// the initial thread's). With coexec on: the mask the thread shows
// (coexec_visible_affinity()), not the CPU coexec may have pinned it to;
// otherwise the system call. Returns what the system call would: a
// non-negative value, or -1 with errno set.
long __kmp_coexec_get_affinity(void* mask, unsigned long size);

// Gives the CPU away around a kernel wait libomp cannot avoid (a join, a
// condition variable of a thread we did not attach). release() returns true
// when it released the CPU; pass that to retake().
bool __kmp_coexec_release_cpu();
void __kmp_coexec_retake_cpu(bool released);

// RAII form of release/retake, for waits with no lock held around them.
class kmp_coexec_blocking_section {
  public:
    kmp_coexec_blocking_section() : released_(__kmp_coexec_release_cpu()) {}
    ~kmp_coexec_blocking_section() { __kmp_coexec_retake_cpu(released_); }
    kmp_coexec_blocking_section(const kmp_coexec_blocking_section&) = delete;
    kmp_coexec_blocking_section& operator=(const kmp_coexec_blocking_section&) = delete;

  private:
    bool released_;
};

// Calls __kmp_coexec_region_end() when a join leaves by any of its returns.
class kmp_coexec_region_end_guard {
  public:
    kmp_coexec_region_end_guard() = default;
    ~kmp_coexec_region_end_guard() { __kmp_coexec_region_end(); }
    kmp_coexec_region_end_guard(const kmp_coexec_region_end_guard&) = delete;
    kmp_coexec_region_end_guard& operator=(const kmp_coexec_region_end_guard&) = delete;
};

#endif // KMP_COEXEC_H
