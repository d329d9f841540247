// coexec: re-hosting of libomp's threads (see kmp_coexec.h for the contract).
#include "kmp_coexec.h"
#include "mutex_lock.hpp"
#include "support/env.hpp"
#include "team_turns.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

std::atomic<int> __kmp_coexec_enabled{0};

namespace {

using coexec::openmp::MutexLock;
using coexec::openmp::RegionShares;
using coexec::openmp::TeamTurns;
using coexec::openmp::TeamWait;

constexpr const char* kLabel = "openmp";
// How often a spinning thread asks coexec whether its CPU is wanted, and how
// often it lets the kernel run a thread outside coexec (see
// __kmp_coexec_yield()).
constexpr unsigned kProbeEvery = 8, kYieldEvery = 256;

bool verbose() {
    return coexec::adapter::env_flag("COEXEC_VERBOSE");
}

// What a root thread does with its CPU between outermost parallel regions:
// keep it unless serial code lasts long while someone needs a CPU (the
// default), give it back at every region end, lend it (it goes at once to
// anyone who needs it), or hold it. Serial code runs with the root's own
// affinity under every policy: region restores it at each region end, the
// others attach the root with COEXEC_ATTACH_KEEP_AFFINITY.
enum class RootPolicy { region, keep, lend, hold };

const char* root_policy_name(RootPolicy p) {
    switch (p) {
    case RootPolicy::keep:
        return "keep";
    case RootPolicy::lend:
        return "lend";
    case RootPolicy::region:
        return "region";
    case RootPolicy::hold:
        return "hold";
    }
    return "?";
}

// What the process knows about coexec: started or not, how many threads it
// attached (so the last one out may shut coexec down), and the root policy.
// A constinit global, not a function-local static: libomp links without the
// C++ runtime, so the shim must not need guard variables or exceptions.
class Process {
  public:
    static Process& instance();

    void start() {
        MutexLock lock(mutex_);
        if (tried_) return;
        tried_ = true;
        if (forked_child_) return;
        if (!key_created_) {
            key_created_ = pthread_key_create(&exit_key_, on_thread_exit) == 0;
        }
        if (coexec::adapter::env_flag("COEXEC_DISABLE")) {
            std::fprintf(stderr, "coexec: libomp runs without coexec (COEXEC_DISABLE is set)\n");
            return;
        }
        if (coexec_init_quiet() != NOSV_SUCCESS) {
            std::fprintf(stderr, "coexec: libomp runs without coexec (%s)\n", coexec_last_error());
            return;
        }
        root_policy_ = root_policy_from_env();
        if (uint64_t quantum = 0; coexec_quantum(&quantum) == NOSV_SUCCESS)
            turns_.configure(team_turns_from_env(), quantum);
        initialized_ = true;
        // Relaxed readers are fine: every thread that reads the flag either ran
        // this (the initialising root) or is ordered after it by libomp's
        // initialisation lock or by pthread_create of the worker, which also
        // publishes root_policy_ and the turns' configuration.
        __kmp_coexec_enabled.store(1, std::memory_order_release);
        if (verbose())
            std::fprintf(stderr, "coexec: libomp re-hosted on coexec (root policy: %s)\n",
                         root_policy_name(root_policy_));
    }

    // Shuts coexec down once nothing is attached; otherwise leaves it to the
    // process exit (coexec reclaims what a finished process held).
    void finalize() {
        MutexLock lock(mutex_);
        if (!initialized_ || attached_.load(std::memory_order_acquire) != 0) return;
        __kmp_coexec_enabled.store(0, std::memory_order_relaxed);
        initialized_ = false;
        tried_ = false; // a later re-initialisation (after omp_pause) may start again
        nosv_shutdown();
    }

    // The child of fork() is not registered with coexec: keep it stock.
    void forget_after_fork() {
        pthread_mutex_init(&mutex_, nullptr); // the parent may have held it
        forked_child_ = true;
        initialized_ = false;
        tried_ = true;
        attached_.store(0, std::memory_order_relaxed);
        __kmp_coexec_enabled.store(0, std::memory_order_relaxed);
        if (verbose())
            std::fprintf(stderr, "coexec: libomp runs without coexec in this fork() child\n");
    }

    RootPolicy root_policy() const { return root_policy_; }
    TeamTurns& turns() { return turns_; }
    // Arms the thread-exit hook, so a root thread that ends detaches itself.
    void watch_exit(void* value) {
        if (key_created_) pthread_setspecific(exit_key_, value);
    }
    // Counted so finalize() knows when no thread holds a task any more. The
    // release on detach pairs with finalize()'s acquire: a detach that
    // finalize() counts has finished with coexec before shutdown starts.
    void attached() { attached_.fetch_add(1, std::memory_order_relaxed); }
    void detached() { attached_.fetch_sub(1, std::memory_order_release); }

  private:
    static void on_thread_exit(void* slot);

    static RootPolicy root_policy_from_env() {
        const char* v = std::getenv("COEXEC_OMP_ROOT");
        if (v == nullptr || *v == '\0' || std::strcmp(v, "keep") == 0) return RootPolicy::keep;
        if (std::strcmp(v, "region") == 0) return RootPolicy::region;
        if (std::strcmp(v, "lend") == 0) return RootPolicy::lend;
        if (std::strcmp(v, "hold") == 0) return RootPolicy::hold;
        std::fprintf(stderr,
                     "coexec: COEXEC_OMP_ROOT must be region, keep, lend or hold, not '%s'; "
                     "using keep\n",
                     v);
        return RootPolicy::keep;
    }

    // COEXEC_OMP_TEAM_TURNS: unset, empty or 1 lets teams take turns (see
    // team_turns.hpp), 0 keeps each wait's CPU hand-off.
    static bool team_turns_from_env() {
        const char* v = std::getenv("COEXEC_OMP_TEAM_TURNS");
        if (v == nullptr || *v == '\0' || std::strcmp(v, "1") == 0) return true;
        if (std::strcmp(v, "0") == 0) return false;
        std::fprintf(stderr, "coexec: COEXEC_OMP_TEAM_TURNS must be 0 or 1, not '%s'; using 1\n",
                     v);
        return true;
    }

    pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
    pthread_key_t exit_key_{};
    bool key_created_ = false;
    bool tried_ = false;
    bool initialized_ = false;
    bool forked_child_ = false;
    RootPolicy root_policy_ = RootPolicy::keep;
    std::atomic<int> attached_{0};
    TeamTurns turns_;
};

// none: not seen yet; worker/root: attached by us; foreign: a coexec thread
// attached by someone else; plain: stays outside coexec.
enum class Role { none, worker, root, foreign, plain };

// The calling thread's relation to coexec. Only its own thread writes it;
// a resumer reads the task and role of a thread paused in libomp (see
// __kmp_coexec_wake()).
class ThreadSlot {
  public:
    // Marks the thread as inside a libcoexec call: the sleep and yield
    // wrappers then pass straight through (libcoexec may sleep internally).
    class Inside {
      public:
        explicit Inside(ThreadSlot& s) : s_(s) { ++s_.inside_; }
        ~Inside() { --s_.inside_; }
        Inside(const Inside&) = delete;
        Inside& operator=(const Inside&) = delete;

      private:
        ThreadSlot& s_;
    };
    bool inside_coexec() const { return inside_ != 0; }
    // Counts the calls of a spinning thread; see __kmp_coexec_yield().
    unsigned spin_tick() { return ++spins_; }
    // Whether this spin probes: the first of a wait (probe_first()), then
    // every kProbeEvery-th.
    void probe_first() { probe_first_ = true; }
    bool probe_due(unsigned spin) {
        return std::exchange(probe_first_, false) || spin % kProbeEvery == 0;
    }
    // A yield's request that the wait loop sleep (see __kmp_coexec_yield()).
    bool& sleep_request() { return sleep_request_; }

    TeamWait& wait() { return wait_; }
    RegionShares& shares() { return shares_; }

    Role role() const { return role_; }
    bool holds_cpu() const { return holds_; }
    int& depth() { return depth_; }

    // Becomes a coexec thread, unless it already is one (then it is foreign:
    // someone else attached it, it runs on a CPU it holds, and we never
    // detach it). Workers are bound to the CPU coexec grants; roots run the
    // application's serial code too, so they keep their own affinity.
    void enter(Role role) {
        if (adopt_foreign()) return;
        have_mask_ = sched_getaffinity(0, sizeof(mask_), &mask_) == 0;
        nosv_task_t task = nullptr;
        Inside inside(*this);
        // Under region a root is bound to its CPU in regions and widened
        // again at each region end (two affinity calls a region); the other
        // policies keep the root's own affinity (see the policy comment).
        keeps_affinity_ =
            role == Role::root && Process::instance().root_policy() != RootPolicy::region;
        const int err =
            nosv_attach(&task, nullptr, kLabel,
                        keeps_affinity_ ? COEXEC_ATTACH_KEEP_AFFINITY : NOSV_ATTACH_NONE);
        if (err != NOSV_SUCCESS) {
            if (verbose())
                std::fprintf(stderr, "coexec: libomp thread not attached: %s\n",
                             nosv_get_error_string(err));
            role_ = Role::plain; // never retried
            return;
        }
        Process::instance().attached();
        Process::instance().watch_exit(this);
        task_ = task;
        role_ = role;
        holds_ = true;
    }

    // A thread libomp has not seen in a region yet that someone else
    // attached (a hosted program thread, a TBB worker) becomes foreign: it
    // holds the CPU it runs on. Its first waits in libomp (for the global
    // locks under which the first region registers a root, for an OpenMP
    // lock taken outside any region) then give the CPU away as a root's do.
    // Spinning on the kernel's yield instead, two such threads kept both
    // CPUs of a node while the thread whose turn the lock's ticket gave
    // waited for one (omp_thread_roots). Returns true when it made the
    // thread foreign.
    bool adopt_foreign() {
        if (role_ != Role::none) return false;
        nosv_task_t own = nosv_self();
        if (own == nullptr) return false;
        role_ = Role::foreign;
        holds_ = true;
        task_ = own;
        return true;
    }

    // Detaches a thread that we attached.
    void leave() {
        if (role_ != Role::worker && role_ != Role::root) return;
        Inside inside(*this);
        if (!holds_) coexec_block_exit();
        nosv_detach(NOSV_DETACH_NONE);
        Process::instance().detached();
        reset();
    }

    // Gives the CPU back while the thread runs outside coexec's view.
    bool release() {
        if (!step_out(coexec_block_enter)) return false;
        // The CPU binding belongs to coexec; serial code runs where it did
        // before (and threads it creates inherit that).
        if (role_ == Role::root && !keeps_affinity_ && have_mask_)
            sched_setaffinity(0, sizeof(mask_), &mask_);
        return true;
    }

    // Leaves coexec through `step` (coexec_block_enter, coexec_lend_cpu or
    // coexec_keep_cpu) until retake(); with the latter two the CPU is still
    // the thread's then unless someone took it meanwhile.
    bool step_out(int (*step)()) {
        if (!holds_ || inside_) return false;
        Inside inside(*this);
        if (step() != NOSV_SUCCESS) return false;
        holds_ = false;
        return true;
    }

    void retake() {
        if (holds_ || role_ == Role::none || role_ == Role::plain) return;
        Inside inside(*this);
        // The affinity serial code had, maybe set by the program since the
        // last region: release() restores it.
        if (role_ == Role::root && !keeps_affinity_)
            have_mask_ = sched_getaffinity(0, sizeof(mask_), &mask_) == 0;
        if (coexec_block_exit() == NOSV_SUCCESS) holds_ = true;
    }

    // Whether the thread holds a CPU with a task that libomp's suspend may
    // pause. A foreign task too: its owner (the TBB adapter, say) pauses it
    // only outside libomp, and libomp matches each pause with one submit, so
    // the two protocols never consume each other's submits.
    bool pausable() const { return holds_; }
    nosv_task_t task() const { return static_cast<nosv_task_t>(task_); }
    // Whether coexec task priorities of the thread's task are ours to set:
    // not those of a task someone else attached.
    bool owns_task() const { return role_ == Role::worker || role_ == Role::root; }

    // In a fork() child: a worker's CPU binding came from the parent's coexec.
    void forget_after_fork() {
        const bool bound = role_ == Role::worker || (role_ == Role::root && !keeps_affinity_);
        if (have_mask_ && bound) sched_setaffinity(0, sizeof(mask_), &mask_);
        reset();
    }

    void reset() {
        role_ = Role::none;
        holds_ = false;
        depth_ = 0;
        task_ = nullptr;
    }

  private:
    int inside_ = 0;
    Role role_ = Role::none;
    bool holds_ = false;
    int depth_ = 0;
    unsigned spins_ = 0;
    bool probe_first_ = false;
    bool sleep_request_ = false;
    TeamWait wait_;
    RegionShares shares_;
    void* task_ = nullptr;
    bool have_mask_ = false;
    bool keeps_affinity_ = false; // attached with COEXEC_ATTACH_KEEP_AFFINITY
    cpu_set_t mask_{};
};

// Trivially destructible: detaching at thread exit goes through a pthread key.
thread_local ThreadSlot slot;

constinit Process g_process;

Process& Process::instance() {
    return g_process;
}

void Process::on_thread_exit(void* value) {
    static_cast<ThreadSlot*>(value)->leave();
}

} // namespace

void __kmp_coexec_initialize() {
    Process::instance().start();
}

void __kmp_coexec_finalize() {
    // The main thread gets no pthread-key destructor at exit: detach it here.
    slot.leave();
    Process::instance().finalize();
}

void __kmp_coexec_atfork_child() {
    slot.forget_after_fork();
    Process::instance().forget_after_fork();
}

void __kmp_coexec_worker_begin(bool eligible) {
    if (__kmp_coexec_on() && eligible) slot.enter(Role::worker);
}

void __kmp_coexec_worker_end() {
    slot.leave();
}

void __kmp_coexec_region_begin(bool eligible) {
    if (!__kmp_coexec_on() || !eligible) return;
    if (slot.role() == Role::none) slot.enter(Role::root);
    if (slot.role() == Role::root && slot.depth()++ == 0) slot.retake();
    if (slot.holds_cpu()) slot.shares().forked(coexec::openmp::now_ns());
}

void __kmp_coexec_region_end() {
    if (slot.role() != Role::root || slot.depth() == 0) return;
    if (--slot.depth() != 0) return;
    switch (Process::instance().root_policy()) {
    case RootPolicy::keep:
        slot.step_out(coexec_keep_cpu);
        break;
    case RootPolicy::lend:
        slot.step_out(coexec_lend_cpu);
        break;
    case RootPolicy::region:
        slot.release();
        break;
    case RootPolicy::hold:
        break;
    }
}

void* __kmp_coexec_sleeper() {
    return __kmp_coexec_on() && slot.pausable() ? &slot : nullptr;
}

void __kmp_coexec_pause() {
    ThreadSlot::Inside inside(slot);
    nosv_pause(NOSV_PAUSE_NONE);
    // A turn's priority (see __kmp_coexec_wake()) orders the queue only: a
    // running thread that kept it would, in a yield, go back ahead of the
    // thread it yields to (a lock holder, say).
    if (slot.owns_task()) nosv_set_task_priority(slot.task(), 0);
}

void __kmp_coexec_wake(void* sleeper, const void* team) {
    // The sleeper's slot lives as long as its thread, which waits in libomp
    // until this submit; its fields stay as they were when it published the
    // handle under libomp's suspend mutex, which the caller holds.
    const ThreadSlot& target = *static_cast<const ThreadSlot*>(sleeper);
    ThreadSlot::Inside inside(slot);
    const bool first =
        Process::instance().turns().woken(team, slot.shares().of(team), coexec::openmp::now_ns());
    // The task is paused or pausing, in no queue: the priority applies from
    // this submit on.
    if (target.owns_task()) nosv_set_task_priority(target.task(), first ? 1 : 0);
    nosv_submit(target.task(), NOSV_SUBMIT_UNLOCKED);
}

void __kmp_coexec_wait_begins(int (*team_on_cpus)(void*), void* thr, const void* team) {
    slot.wait().begins(team_on_cpus, thr, team);
    if (slot.shares().measuring()) slot.shares().waits(team, coexec::openmp::now_ns());
    // A team that shares one CPU finds its teammate queued there at every
    // wait. Spinning up to kProbeEvery times before the first probe made a
    // barrier of two threads on one CPU 12 % slower; one more probe per
    // wait does not show in the barriers of a team alone.
    if (slot.holds_cpu()) slot.probe_first();
}

void __kmp_coexec_wait_ends() {
    slot.wait().ends();
}

namespace {
// Whether a waiting thread keeps its CPU from `wanted` (see TeamTurns).
// Asked only while someone wants the CPU, where a wait that does not keep
// it sleeps or yields by its next probe: far dearer than the clock read.
bool keeps_cpu(int wanted) {
    const unsigned long now = coexec::openmp::now_ns();
    TeamWait& wait = slot.wait();
    return wait.keeps_cpu(wanted, Process::instance().turns().has_turn(wait.team(), now), now);
}
} // namespace

bool __kmp_coexec_yield() {
    if (!__kmp_coexec_on() || slot.inside_coexec()) return false;
    if (!slot.holds_cpu() && !slot.adopt_foreign()) return false;
    // The first spin of a wait, then every kProbeEvery-th, probes whether a
    // coexec thread waits for the CPU (a relaxed read of the segment). The
    // first finds a teammate that shares the CPU, queued before the wait
    // began. Probing on every spin would make each spin slower, and a
    // thread released from a barrier would see its flag later; a thread
    // that starts to wait later gets the CPU a few spins later instead, far
    // less than a hand-off costs. When no one waits, every kYieldEvery-th
    // spin still lets the kernel run a thread outside coexec that shares the
    // CPU (a root in serial code, a host thread of another library), without
    // a system call on every spin of a short barrier; the raw syscall
    // bypasses the sched_yield wrapper.
    //
    // A thread that waits has nothing to do with the CPU, so when someone
    // wants it the first probe asks the wait loop to sleep (libomp's wait
    // loops check right after yielding). A yield would requeue the thread
    // as ready work, and it would take CPUs back from threads that have
    // work only to spin again. A request still pending at the next probe
    // came from a wait that cannot sleep: that probe yields.
    const unsigned spin = slot.spin_tick();
    if (!slot.probe_due(spin)) return true;
    const int wanted = coexec_cpu_wanted();
    if (wanted != 0 && !keeps_cpu(wanted)) {
        if (!slot.sleep_request()) {
            slot.sleep_request() = true;
            return true;
        }
        slot.sleep_request() = false;
        ThreadSlot::Inside inside(slot);
        nosv_yield(NOSV_YIELD_NONE);
    } else if (spin % kYieldEvery == 0) {
        syscall(SYS_sched_yield);
    }
    return true;
}

bool __kmp_coexec_sleep_requested() {
    if (!slot.sleep_request()) return false;
    slot.sleep_request() = false;
    // The request may come from an earlier wait: sleep only if the CPU is
    // still wanted, and only with a task to pause (else libomp would block
    // the thread on its condition variable while it holds the CPU).
    const int wanted = coexec_cpu_wanted();
    return wanted != 0 && !keeps_cpu(wanted) && __kmp_coexec_sleeper() != nullptr;
}

bool __kmp_coexec_spare_cpus(int* spare) {
    return __kmp_coexec_on() && coexec_spare_cpus(spare) == NOSV_SUCCESS;
}

long __kmp_coexec_get_affinity(void* mask, unsigned long size) {
    if (!__kmp_coexec_on()) return syscall(SYS_sched_getaffinity, 0, size, mask);
    // A TBB master or a PoCL worker that opens the first region may be
    // pinned to the CPU it holds; a team sized by that pin would have one
    // thread where the program, run natively, gets one per CPU.
    if (int err = coexec_visible_affinity(size, mask); err != 0) {
        errno = err;
        return -1;
    }
    return 0;
}

bool __kmp_coexec_release_cpu() {
    return __kmp_coexec_on() && slot.release();
}

void __kmp_coexec_retake_cpu(bool released) {
    if (released) slot.retake();
}
