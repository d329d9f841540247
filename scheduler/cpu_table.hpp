// The CPU table: every CPU slot of the segment after format() (its state,
// owner, stint of ownership, hand-over mark, counted process and turn), the
// CPU counters that follow the states (Header::unheld_cpus, wakeable_cpus,
// and each process's ProcSlot::running_cpus), grants, and a thread's side
// of them (its grant and its state as it gets, holds or loses a CPU). It
// makes the changes; which CPU goes to whom is the policy's (policy.hpp).
// Two fields of a CPU slot are the policy's to write besides: the turn of a
// holder that keeps its CPU, and preempt_asked_ns.
//
// Methods marked COEXEC_REQUIRES(segment_lock) run under the segment lock
// (scheduler_lock.hpp); the others say who may call them.
#pragma once

#include "scheduler/cpu_time.hpp"
#include "scheduler/keep_word.hpp"
#include "scheduler/scheduler_lock.hpp"
#include "scheduler/thread_binding.hpp"
#include "scheduler/topology.hpp"
#include "scheduler/trace_rings.hpp"
#include "scheduler/wake_list.hpp"
#include "shm/layout.hpp"

#include <cstdint>
#include <vector>

namespace coexec::scheduler {

class ProcessTable;

// Lock-free, for assertions: whether `thread` is the Running holder of a CPU
// of `segment` other than `cpu` (kNone: of any CPU). A thread runs on one
// CPU at a time, so a grant must never find it so.
bool runs_elsewhere(const shm::Segment& segment, int32_t thread, int32_t cpu);

class CpuTable {
  public:
    CpuTable(shm::Segment& segment, ProcessTable& procs, ThreadBinding& binding, CpuTime& time,
             TraceRings& trace)
        : s_(segment), procs_(procs), binding_(binding), time_(time), trace_(trace) {}

    int cpu_count() const { return s_.header.cpu_count; }

    // Lays out the CPU slots for `cpus` (at most Header::max_cpus), every one Free,
    // their NUMA nodes, and the counters.
    void format(const std::vector<CpuInfo>& cpus) COEXEC_REQUIRES(segment_lock);
    // Repair after a dead lock holder: finishes or undoes the CPU slot
    // writes it left half done (grant, set_free, evict_holder and
    // claim_kept each write a CPU slot in several stores), then counts the
    // CPU counters again from the slots.
    void repair(WakeList& wakes) COEXEC_REQUIRES(segment_lock);

    // ---- changes, for the policy and the scheduler -------------------
    // Hands `cpu` to `thread`, whatever it held before.
    void grant(int32_t cpu, int32_t thread, WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    // `proc`'s turn on `cpu` starts now, unless it is its turn already.
    void start_turn(int32_t cpu, int32_t proc, uint64_t now) COEXEC_REQUIRES(segment_lock);
    // The holder of `cpu` keeps it without running coexec work: `next` is
    // Idle, Sleeping or Lent.
    void hold_without_work(int32_t cpu, shm::CpuState next) COEXEC_REQUIRES(segment_lock);
    // Nobody holds `cpu` any more (Free).
    void set_free(int32_t cpu) COEXEC_REQUIRES(segment_lock);
    // The idle holder of `cpu` goes back to its pool; a lender is told at
    // reclaim_lent() that it lost the CPU.
    void evict_holder(int32_t cpu) COEXEC_REQUIRES(segment_lock);
    // `proc` leaves: its CPUs are Free, its stints end, its turns are over.
    void release_all_of(int32_t proc) COEXEC_REQUIRES(segment_lock);

    // ---- a holder's own CPU ------------------------------------------
    // Lock-free, only by the holder of a Running CPU: hands it to another
    // thread of the same process (taken from the pool, or one whose task is
    // ready), which the caller wakes (`wakes`).
    void handoff_within_process(int32_t cpu, int32_t thread, WakeList& wakes);
    // `thread` takes back the CPU it lent: false if it was claimed.
    bool reclaim_lent(int32_t cpu, int32_t thread) COEXEC_REQUIRES(segment_lock);
    // Lock-free, by the thread itself. The CPU granted to `thread` since it
    // last looked, consumed; or kNone. Acquire: the grant's CPU slot writes
    // are visible.
    int32_t take_grant(int32_t thread);
    // Lock-free: whether `thread` is the Running holder of `cpu`.
    bool holds(int32_t thread, int32_t cpu) const;
    // Lock-free: see the free function above.
    bool runs_elsewhere(int32_t thread, int32_t cpu) const {
        return scheduler::runs_elsewhere(s_, thread, cpu);
    }
    // By the holder of Running `cpu`: whether it has held the CPU for a
    // quantum at `now` (since it was granted or handed the CPU). Within a
    // process the quantum applies to its tasks: the next one may run.
    bool stint_over(int32_t cpu, uint64_t now) const;
    // By the holder of Running `cpu`, just after it took its grant: how long
    // before `now` the grant was made, when the CPU was unheld then; 0 when
    // its holder handed it over (that thread may still be on its way off the
    // kernel CPU, which says nothing about programs outside coexec).
    uint64_t unheld_grant_age(int32_t cpu, uint64_t now) const;

    // ---- CPUs kept outside coexec (coexec_keep_cpu) -----------------
    // Lock-free, by the thread: starts a keep period on the CPU `thread`
    // runs on.
    KeepWord begin_keep(int32_t thread);
    // Lock-free, by the thread: ends the period `word`. True if the thread
    // still has its CPU; false if a monitor took it (claim_kept()), in which
    // case the taker may still be freeing the CPU (SharedScheduler::end_keep
    // waits for it).
    bool try_end_keep(int32_t thread, KeepWord word);
    // Lock-free, by the thread, after try_end_keep() lost and the taker's
    // locked section ended: the word is the thread's again.
    void finish_lost_keep(int32_t thread, KeepWord word);
    // Lock-free. The holder of `cpu` when it keeps the CPU while outside
    // coexec, or parks it, with its word in `word`; else kNone.
    int32_t keeping_holder(int32_t cpu, KeepWord& word) const;
    // Wins the period `word` of `thread`, which still keeps `cpu`: the
    // thread is Blocked, and the caller frees the CPU in the same locked
    // section. False if the thread ended the period first, or left `cpu`.
    bool claim_kept(int32_t cpu, int32_t thread, KeepWord word) COEXEC_REQUIRES(segment_lock);

    // ---- CPUs parked by a paused holder (nosv_pause) -----------------
    // A holder whose task pauses while no work waits for its CPU keeps the
    // CPU, Running, and sleeps: a park. Its submit wakes it with the CPU
    // still its own, and neither step takes the lock. Whoever needs a CPU
    // meanwhile takes a parked one at once, as a kept one
    // (Policy::take_parked_cpu(), claim_kept()). cpu_table.cpp says why the
    // protocol is sound.
    // Lock-free, by the Running holder `thread` of `cpu`: starts a Parked
    // period and marks the CPU parked (Header::parked, parked_cpus).
    KeepWord park(int32_t cpu, int32_t thread);
    // Lock-free, by the parked thread: ends the period `word`. True if the
    // thread still holds `cpu` (and the mark is cleared); false if a taker
    // won the period (it cleared the mark): then, as after a lost keep, the
    // thread waits for the taker's locked section (SharedScheduler::end_keep()).
    bool unpark(int32_t cpu, int32_t thread, KeepWord word);
    // Lock-free. The holder of `cpu` when it parks it, with its word in
    // `word`; else kNone.
    int32_t parked_holder(int32_t cpu, KeepWord& word) const;

  private:
    // Tells `thread`, bound to `cpu`, that it holds it: the last step of
    // grant() and handoff_within_process().
    void publish_grant(int32_t cpu, int32_t thread, WakeList& wakes);
    // The only writer of a CPU's state after formatting: keeps unheld_cpus
    // and wakeable_cpus in step with it, the unheld sets (note_state()) and
    // the owner's running_cpus.
    void set_state(int32_t cpu, shm::CpuState next);
    // Puts `cpu` in the header's unheld set of state `st` (free_cpus,
    // idle_cpus, lent_cpus), and out of the others.
    void note_state(int32_t cpu, shm::CpuState st);
    // Takes `cpu` out of the parked set, and out of the count if it was in
    // the set. Lock-free; safe to repeat.
    void unmark_parked(int32_t cpu);
    // Moves `cpu`'s count in ProcSlot::running_cpus to the process that
    // holds it Running now (owner_proc), if that changed.
    void recount_running(int32_t cpu);
    // Repair: counts every process's Running CPUs again from the CPU slots.
    void recount_all_running() COEXEC_REQUIRES(segment_lock);
    // Repair: whether `cpu`'s named holder may hold it.
    bool holder_is_sound(int32_t cpu) const COEXEC_REQUIRES(segment_lock);

    shm::Segment& s_;
    ProcessTable& procs_; // an evicted holder goes back to its pool
    ThreadBinding& binding_;
    CpuTime& time_;
    TraceRings& trace_;
};

} // namespace coexec::scheduler
