// coexec: teams of one process that take turns at full width.
//
// Two OpenMP teams that share the CPUs (two TBB threads that each open
// regions, say) settle into running each worker on its primary's CPU: two
// thread switches a region. While several teams of the process wake threads
// and their regions are short, one team has the turn for a scheduler
// quantum: the threads it wakes go ahead of the others' (a task priority),
// and its waits keep their CPUs from the process's other work while the
// team runs, so the other teams' waits hand their CPUs to it. Work of
// another process still gets a CPU at once, and a team alone never has the
// turn.
//
// The decisions below are functions of the times their callers pass (the
// shim passes now_ns()), so tests/openmp/team_turns_test.cpp checks them
// step by step; what they gain is measured by benchmarks/openmp/omp_bench.py
// (coexec-omp+tbb against coexec-no-turns).
#pragma once

#include "mutex_lock.hpp"

#include <coexec/ext.h>

#include <pthread.h>
#include <time.h>

#include <atomic>

namespace coexec::openmp {

inline unsigned long now_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<unsigned long>(t.tv_sec) * 1'000'000'000ul + t.tv_nsec;
}

// A team takes turns only while its primary's share of a region averages
// less than this. A turn saves the region's two thread switches on a shared
// CPU (3-5 us on the VMs measured) but makes the region wait for the slower
// of its threads on two CPUs, whose speeds vary. In `omp_in_tbb` turns won
// for shares of 16 us (1.08x of serial-inner instead of 1.17x), were even at
// 32 and 80 us and lost at 180 us (1.16x instead of 1.04x); see docs/tbb.md.
constexpr unsigned long kShortShareNs = 25'000;

// How long a worker of the team that has the turn waits for the next region
// before it gives its CPU away: in a loop of short regions its primary forks
// again within microseconds, or gets a CPU within one wait of a team that
// has no turn.
constexpr unsigned long kNextRegionNs = 50'000;

// What a waker knows of the woken thread's team: whether its primary's
// shares are short, when the waker is that primary (RegionShares).
enum class Shares { unknown, short_ones, long_ones };

// How long a thread's own share of the regions it forks takes: from the
// fork to its first wait (the end of its worksharing, or the join). Only
// its own thread touches it. Times are now_ns() values, above 0.
class RegionShares {
  public:
    // The thread forks a region at `now`.
    void forked(unsigned long now) { forked_at_ = now; }

    // Whether a fork awaits its first wait, which then needs the time: the
    // waits of a thread that forks nothing (a worker) read no clock.
    bool measuring() const { return forked_at_ != 0; }

    // A wait in `team` begins at `now`; the first after a fork ends the
    // share.
    void waits(const void* team, unsigned long now) {
        if (forked_at_ == 0) return;
        const unsigned long share = now - forked_at_;
        forked_at_ = 0;
        // About the last eight regions, each counted as at most twice the
        // threshold: one slow region (the kernel ran another program in the
        // middle of it, a vCPU had idled) raises the average by a quarter of
        // the threshold at most, so it ends no turn of shares that average
        // below three quarters of it; shares that are all long still
        // average above the threshold.
        const unsigned long sample = share < 2 * kShortShareNs ? share : 2 * kShortShareNs;
        if (team != team_) average_ = sample; // a new team starts afresh
        team_ = team;
        average_ = average_ - average_ / 8 + sample / 8;
    }

    // Whether the shares are short, if the caller is the primary of `team`.
    Shares of(const void* team) const {
        if (team == nullptr || team != team_) return Shares::unknown;
        return average_ < kShortShareNs ? Shares::short_ones : Shares::long_ones;
    }

  private:
    unsigned long forked_at_ = 0;
    unsigned long average_ = 0;
    const void* team_ = nullptr;
};

// Which team of the process has the turn. One per process.
class TeamTurns {
  public:
    // Called once coexec runs, before any thread of ours waits: whether
    // teams take turns (COEXEC_OMP_TEAM_TURNS), and for how long
    // (coexec_quantum()).
    void configure(bool on, unsigned long length_ns) {
        on_ = on;
        length_ = length_ns;
    }

    // A thread of `team` is woken at `now`: returns whether the team has
    // the turn while other teams contend. A team whose primary forks short
    // regions takes the turn when no other team has it; when its own turn
    // is over, or its regions grew long, it lets another team take the next
    // one.
    bool woken(const void* team, Shares shares, unsigned long now) {
        if (!on_ || team == nullptr) return false;
        MutexLock lock(mutex_);
        const void* owner = owner_.load(std::memory_order_relaxed);
        const bool over = elapsed(now) >= length_;
        const bool contended = now < contended_until_.load(std::memory_order_relaxed);
        if (owner == team) {
            if (!over && shares != Shares::long_ones) return contended;
            last_ = team;
            owner_.store(nullptr, std::memory_order_relaxed);
            since_.store(now, std::memory_order_relaxed);
            return false;
        }
        if (owner != nullptr && !over) {
            contended_until_.store(now + 2 * length_, std::memory_order_relaxed);
            return false;
        }
        if (shares != Shares::short_ones) return false;
        // Free (or its owner stopped waking threads): the team whose turn
        // ended last waits one more turn for another team to take it.
        if (owner == nullptr && team == last_ && !over) return false;
        if (owner != nullptr) last_ = owner;
        const bool taken_over = last_ != nullptr && last_ != team;
        if (taken_over) contended_until_.store(now + 2 * length_, std::memory_order_relaxed);
        owner_.store(team, std::memory_order_relaxed);
        since_.store(now, std::memory_order_relaxed);
        return contended || taken_over;
    }

    // Whether `team` has the turn at `now` while other teams contend for
    // the CPUs. Relaxed reads of fields that woken() writes under the mutex,
    // for spin loops: a stale answer keeps or gives the CPU for one more
    // probe, and every decision it feeds is a hint (who spins, who sleeps).
    bool has_turn(const void* team, unsigned long now) const {
        if (team == nullptr || owner_.load(std::memory_order_relaxed) != team) return false;
        return now < contended_until_.load(std::memory_order_relaxed) && elapsed(now) < length_;
    }

  private:
    // How long the turn has run (or, with no owner, since it ended) at
    // `now`; 0 for a time read before another thread started or ended it.
    unsigned long elapsed(unsigned long now) const {
        const unsigned long since = since_.load(std::memory_order_relaxed);
        return now > since ? now - since : 0;
    }

    pthread_mutex_t mutex_ = PTHREAD_MUTEX_INITIALIZER;
    bool on_ = false;
    unsigned long length_ = 20'000'000;
    std::atomic<const void*> owner_{nullptr};
    std::atomic<unsigned long> since_{0}, contended_until_{0};
    const void* last_ = nullptr; // the team whose turn ended last
};

// What the calling thread's current wait waits for, and whether it keeps
// its CPU while its team has the turn. Only its own thread touches it.
class TeamWait {
  public:
    // See __kmp_coexec_wait_begins().
    void begins(int (*team_on_cpus)(void*), void* thr, const void* team) {
        team_on_cpus_ = team_on_cpus;
        thr_ = thr;
        team_ = team;
        next_region_since_ = 0;
    }
    // The wait is over; spins until the next begins() wait for no teammate.
    void ends() { begins(nullptr, nullptr, nullptr); }
    const void* team() const { return team_; }

    // Whether the wait keeps its CPU at `now` although `wanted`
    // (coexec_cpu_wanted()) is nonzero: only from its own process's work,
    // only while its team has the turn, and only while every teammate it
    // waits for holds a CPU or, for the next region, for kNextRegionNs from
    // the first time it was asked.
    bool keeps_cpu(int wanted, bool has_turn, unsigned long now) {
        if ((wanted & COEXEC_CPU_WANTED_ELSEWHERE) || !has_turn) return false;
        if (team_on_cpus_ != nullptr) return team_on_cpus_(thr_) != 0;
        if (next_region_since_ == 0) next_region_since_ = now;
        return now - next_region_since_ < kNextRegionNs;
    }

  private:
    int (*team_on_cpus_)(void*) = nullptr;
    void* thr_ = nullptr;
    const void* team_ = nullptr;
    unsigned long next_region_since_ = 0;
};

} // namespace coexec::openmp
