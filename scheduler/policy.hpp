// The policy: which process's work gets a CPU, and when. Round-robin
// between processes by quantum, at scheduling points, first to processes
// short of CPUs; the preemption safety net for holders that never reach
// one; and what becomes of a CPU its holder leaves. It decides; the CPU
// table (cpu_table.hpp) and the process table (process_table.hpp) make the
// changes. Its own writes are the turn of a holder that keeps its CPU
// (next_turn()), preempt_asked_ns (overdue_holder(), overdue_within()) and
// a preempted thread's state (give_way(), give_way_within()).
//
// Methods marked COEXEC_REQUIRES(segment_lock) run under the segment lock
// (scheduler_lock.hpp); the others are lock-free hints or say who may
// call them.
#pragma once

#include "scheduler/cpu_table.hpp"
#include "scheduler/keep_word.hpp"
#include "scheduler/placement.hpp"
#include "scheduler/process_table.hpp"
#include "scheduler/scheduler_lock.hpp"
#include "scheduler/thread_binding.hpp"
#include "scheduler/trace_rings.hpp"
#include "scheduler/wake_list.hpp"
#include "shm/layout.hpp"

#include <cstdint>

namespace coexec::scheduler {

class Policy {
  public:
    Policy(shm::Segment& segment, CpuTable& cpus, ProcessTable& procs, const ThreadBinding& binding,
           TraceRings& trace)
        : s_(segment), cpus_(cpus), procs_(procs), binding_(binding), trace_(trace) {}

    // Two processes that each run on one of two CPUs, both with more work, are
    // served as fairly by keeping their CPUs as by swapping them every quantum,
    // and a swap costs both their caches and a moment where one process has
    // both CPUs and the other none. So a process that is not short of CPUs
    // waits this many quanta for a CPU, not one (docs/design.md, "Share
    // turns"). Two PyTorch processes of two threads ran in 0.96 of the time
    // they took with a swap every quantum.
    static constexpr uint64_t kShareTurnQuanta = 8;

    // ---- demand (lock-free hints) ------------------------------------
    // Does `proc` have ready work that may run on `cpu`?
    bool has_work(int32_t proc, int32_t cpu) const;
    // Does `proc` have ready work bound to `cpu` or to its NUMA node (work
    // that can run nowhere else, next to its memory), or work that may run
    // anywhere with `cpu`'s node its home node (ProcSlot::home_numa)?
    bool has_local_work(int32_t proc, int32_t cpu) const;
    // Does any process other than `self` have work for `cpu`?
    bool foreign_work(int32_t self, int32_t cpu) const;
    // How many more threads could run now without making any wait: the
    // unheld CPUs (shm::is_unheld, Lent ones included: they can be claimed)
    // less the ready work of every process; negative when work waits.
    int32_t spare_cpus() const;
    // Whether `proc`'s turn on `cpu` is over at `now`, so that decide()
    // would pass the CPU on: another process's turn, or its quantum spent
    // and either its share turn spent too or a process short of CPUs
    // waiting for `cpu`. A stale read only delays a switch.
    bool turn_over(int32_t cpu, int32_t proc, uint64_t now) const;

    // ---- decisions at scheduling points ------------------------------
    // Outcome of a scheduling decision for a CPU its holder is leaving.
    enum class Next { Own, Other, None };
    // Round-robin by quantum: the holder's process keeps the CPU while its
    // quantum lasts and it has work; otherwise the next process after the
    // CPU's turn holder in the alive list (the order in which the processes
    // joined) with work and a pool thread gets it (Other, granted and queued
    // in `wakes`). A process that already runs on as many CPUs as the
    // holder's, and whose work could run there, waits for the end of the
    // holder's share turn (kShareTurnQuanta quanta) instead. `self_ready`:
    // the holder itself has work that is not queued yet (a yielding task).
    Next decide(int32_t cpu, int32_t self, bool self_ready, WakeList& wakes)
        COEXEC_REQUIRES(segment_lock);
    // The holder `thread` of `cpu`, of process `self`, is preempted: the next
    // other process in round-robin order with work for `cpu` and a pool
    // thread gets it (as decide() would choose), and `thread` waits for a
    // CPU. False (and nothing changes) if none can take it.
    bool give_way(int32_t cpu, int32_t self, int32_t thread, WakeList& wakes)
        COEXEC_REQUIRES(segment_lock);
    // Like give_way(), for a holder that gives way to its own process (a
    // program thread, see core/interpose/program_threads.hpp): a thread of
    // `self` that waits for `cpu`, or a pool thread for its ready work, gets
    // it, and `thread` waits for a CPU. False (and nothing changes) if none
    // can take it.
    bool give_way_within(int32_t cpu, int32_t self, int32_t thread, WakeList& wakes)
        COEXEC_REQUIRES(segment_lock);

    // ---- the preemption safety net (lock-free) -----------------------
    // The thread slot to signal when another process holds `cpu` past the
    // turn decide() would give it (a quantum, or a share turn if `waiter`
    // runs on as many CPUs) plus SegmentConfig::preempt_after_ns while
    // `waiter` has work for it, or kNone. Returns a given CPU's holder at
    // most once per that period.
    int32_t overdue_holder(int32_t cpu, int32_t waiter, uint64_t now);
    // Whether `thread` of `proc` has held `cpu` for a quantum plus
    // SegmentConfig::preempt_after_ns while `proc` has other work for it.
    // True for a given CPU at most once per that period.
    bool overdue_within(int32_t cpu, int32_t proc, int32_t thread, uint64_t now);

    // ---- unheld CPUs -------------------------------------------------
    // Finds an unheld CPU allowed by `where` for process `proc` and gives it
    // to `proc`: to its own idle holder (woken), or to one of its pool
    // threads (evicting another process's idle holder, or a lender: a Lent
    // CPU is the last choice). With none unheld, takes a parked one
    // (take_parked_cpu()). Returns the CPU, or kNone if none is unheld or
    // parked, or `proc` has no pool thread for it.
    int32_t claim_unheld_cpu(int32_t proc, const Placement& where, WakeList& wakes)
        COEXEC_REQUIRES(segment_lock);
    // Gives `thread` (of a task that lives on its own thread) an unheld CPU
    // allowed by `where`: the one it is bound to if unheld and not Lent,
    // else Free first, then one held idle by its process, then any idle,
    // then a Lent one. An idle holder goes back to its pool, a lender is
    // evicted. Returns the CPU, or kNone if none is unheld.
    int32_t grant_unheld_cpu(int32_t thread, const Placement& where, WakeList& wakes)
        COEXEC_REQUIRES(segment_lock);
    // `cpu` is unheld (Free, held idle, or Lent): gives it to a process with
    // work for it, round-robin, a process whose work is bound to the CPU or
    // its NUMA node first: to that process's idle holder of it, or to one of
    // its pool threads (evicting any other holder or the lender). Returns
    // the thread granted, or kNone.
    int32_t offer(int32_t cpu, WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    // Takes a CPU allowed by `where` from the holder that parked it (on the
    // node `proc`'s work there prefers first), frees it and grants it to a
    // pool thread or waiting thread of `proc`, or offers it if `proc` has
    // none. The parker learns it when its task is resumed
    // (CpuTable::unpark()). Returns the CPU, or kNone if none is parked.
    int32_t take_parked_cpu(int32_t proc, const Placement& where, WakeList& wakes)
        COEXEC_REQUIRES(segment_lock);
    // Takes every parked CPU that `proc` has work for, as take_parked_cpu():
    // the monitor's safety net for work whose submit did not (a task
    // queued by the scheduler itself, a preempted one).
    void take_parked_for(int32_t proc, WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    // Offers every Free CPU, to the members with work and a pool thread.
    void distribute_free(WakeList& wakes) COEXEC_REQUIRES(segment_lock);

    // ---- a holder leaving its CPU ------------------------------------
    // The holder keeps `cpu` but has no work: Idle while it spins (and looks
    // for work itself), Sleeping once it sleeps. Then, as offer(), work
    // queued meanwhile gets it (possibly the holder itself).
    int32_t hold_idle(int32_t cpu, bool sleeping, WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    // The holder of Running `cpu` leaves coexec's view but keeps running on
    // it until someone claims it (which evicts it); work queued meanwhile
    // gets it at once, as offer().
    int32_t lend(int32_t cpu, WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    // Nobody holds `cpu` any more; work queued meanwhile gets it, as offer().
    int32_t release(int32_t cpu, WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    // Frees `cpu` if `thread` still keeps it in the period `word` names (a
    // monitor takes a CPU kept too long); the thread learns it at
    // SharedScheduler::end_keep().
    bool take_kept(int32_t cpu, int32_t thread, KeepWord word, WakeList& wakes)
        COEXEC_REQUIRES(segment_lock);

  private:
    // Whether `self` has no more claim to `cpu` at `now` by its quantum: the
    // turn is another process's, or `self`'s quantum on it is spent (the
    // share turn may still hold it: turn_over()).
    bool quantum_spent(const shm::CpuSlot& cpu, int32_t self, uint64_t now) const;
    // How many CPUs run `proc`'s threads (Running slots it owns): O(1).
    // Exact under the lock; a hint without it.
    int32_t running_cpus(int32_t proc) const;
    // Whether `proc`, with work for `cpu`, is short of CPUs next to a holder
    // process running on `holder_cpus`: it runs on fewer, or its work is
    // bound to `cpu` (or to its NUMA node) and cannot use the CPUs it has.
    bool short_of_cpus(int32_t proc, int32_t cpu, int32_t holder_cpus) const;
    // How long a holder keeps `cpu` from processes that are not short of
    // CPUs: kShareTurnQuanta quanta from the start of its turn.
    uint64_t share_turn_ns() const;
    uint64_t quantum_ns() const { return s_.header.config.quantum_ns; }
    Next next_turn(int32_t cpu, int32_t self, bool self_may_keep, bool self_ready, uint64_t now,
                   WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    int32_t grant_to_pool(int32_t cpu, int32_t proc, WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    // offer() among the `n` process slots of `procs` (in alive-list order),
    // round-robin from the one after `cpu`'s turn holder, in one walk.
    int32_t offer_among(int32_t cpu, const int32_t* procs, int n, WakeList& wakes)
        COEXEC_REQUIRES(segment_lock);
    // An unheld CPU allowed by `where` for a thread of `proc`; see
    // grant_unheld_cpu() for the order.
    // The CPU of unheld set `set` (a header's free_cpus, idle_cpus or
    // lent_cpus) that `where` allows and `also(cpu)` accepts: the
    // placement's preferred CPU, else the lowest on NUMA node `node` (if not
    // kNone), else the lowest. It visits the set's members, not every CPU
    // slot. (Defined and used in policy.cpp.)
    template <class Also>
    int32_t pick_unheld(const shm::CpuBits& set, const Placement& where, int32_t node,
                        Also also) const COEXEC_REQUIRES(segment_lock);
    // The NUMA node whose CPUs `proc`'s work placed at `where` prefers: a
    // non-strict node placement's, else (for work that may run anywhere) the
    // process's home node; kNone for none.
    int32_t preferred_node(int32_t proc, const Placement& where) const
        COEXEC_REQUIRES(segment_lock);
    int32_t find_unheld_cpu(int32_t proc, const Placement& where, int32_t prefer) const
        COEXEC_REQUIRES(segment_lock);
    // Takes `cpu` from the thread that parked it, if it still does, frees
    // it and grants it to a pool thread or waiting thread of `proc` (offers
    // it if `proc` has none); false if `cpu` is not parked.
    bool take_parked(int32_t cpu, int32_t proc, WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    // After the holder made `cpu` unheld: offers it to work queued
    // meanwhile (the Dekker pair of a submitter's kick).
    int32_t offer_released(int32_t cpu, WakeList& wakes) COEXEC_REQUIRES(segment_lock);

    shm::Segment& s_;
    CpuTable& cpus_;
    ProcessTable& procs_;
    const ThreadBinding& binding_; // where a thread is bound, for its grant
    TraceRings& trace_;            // preemptions are recorded
};

} // namespace coexec::scheduler
