// The system-wide policy, and the only writer of the segment's scheduling
// state: CPU slots, thread slots, process slots, pools, free lists, counters
// and trace rings (a process's ready counters are written through Demand).
//
// Methods marked "Locked" must run while the caller holds the segment lock
// (a SchedulerLock on this scheduler); they are declared
// COEXEC_REQUIRES(this), so Clang rejects a call made without it. The others
// are lock-free, and say who may call them. Where
// each field changes (shm/layout.hpp has the fields):
//   shared_scheduler.cpp  format(): the CPU table, the settings and every
//                         slot's first values; process slots (registration,
//                         pools, thread counts, beats, receivers, monitor
//                         words, the preemption flag and count), thread slots
//                         (allocation and freeing, tid, label, receive word,
//                         pool membership), the alive list, the high-water
//                         marks and free list, the reap mark when it reaps,
//                         the ready counters' zeroing, a leaving process's
//                         turns, and repair();
//   cpu_slots.cpp         after format(), a CPU slot's owner, state, stint,
//                         hand-over and count, and its turn (start_turn());
//                         unheld_cpus, wakeable_cpus, running_cpus; grants
//                         and a thread's state as it gets, holds or loses a
//                         CPU; keep words; hand-off counts;
//   cpu_time.cpp          CPU time: each CPU's stint and the totals (class
//                         CpuTime);
//   thread_binding.cpp    each thread's kernel affinity (class ThreadBinding);
//   policy.cpp            the decisions: who gets a CPU, and when; it writes
//                         the turn of a holder that keeps its CPU,
//                         preempt_asked_ns, and a preempted thread's state;
//   member_watch.cpp      the beats and the look-ups of members in /proc,
//                         and the reap and entry-check elections (class
//                         MemberWatch);
//   trace_rings.cpp       the recorder slots and count, and the trace rings
//                         (class TraceRings, through shm/trace_ring.cpp);
//   demand.hpp            a process's ready counters (scheduler::Demand).
// A thread's futex word moves only through ThreadWord (thread_word.hpp).
// shm/segment.cpp writes the header's identity, isolation and lock at
// creation.
#pragma once

#include "scheduler/alive_list.hpp"
#include "scheduler/cpu_time.hpp"
#include "scheduler/keep_word.hpp"
#include "scheduler/member_watch.hpp"
#include "scheduler/placement.hpp"
#include "scheduler/scheduler_lock.hpp"
#include "scheduler/thread_binding.hpp"
#include "scheduler/topology.hpp"
#include "scheduler/trace_rings.hpp"
#include "scheduler/wake_list.hpp"
#include "shm/layout.hpp"
#include "shm/robust_mutex.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace coexec::scheduler {

// The runtime class of a thread label: exactly "openmp", "tbb" or "pocl"
// (what the adapters attach with), else Other.
shm::LabelClass classify_label(std::string_view label);
// "openmp", "tbb", "pocl" or "other".
const char* label_class_name(shm::LabelClass c);

// Also the segment lock's capability (shm/thread_safety.hpp; see above).
class COEXEC_CAPABILITY("segment lock") SharedScheduler {
  public:
    explicit SharedScheduler(shm::Segment& segment)
        : s_(segment), watch_(segment), binding_(segment), time_(segment), trace_(segment) {}

    // Two processes that each run on one of two CPUs, both with more work, are
    // served as fairly by keeping their CPUs as by swapping them every quantum,
    // and a swap costs both their caches and a moment where one process has
    // both CPUs and the other none. So a process that is not short of CPUs
    // waits this many quanta for a CPU, not one (docs/design.md, "Share
    // turns"). Two PyTorch processes of two threads ran in 0.96 of the time
    // they took with a swap every quantum.
    static constexpr uint64_t kShareTurnQuanta = 8;
    shm::Segment& segment() const { return s_; }
    // Lock-free: whether the members still run, and the elections of who
    // looks (MemberWatch).
    MemberWatch& watch() { return watch_; }
    int cpu_count() const { return s_.header.cpu_count; }
    uint64_t quantum_ns() const { return s_.header.config.quantum_ns; }

    // Locked. Lays out the CPU table for `found.cpus` (and records where
    // they came from), the settings, the free list and empty process slots.
    // For a segment whose processes are all gone.
    void format(const Discovery& found, const shm::SegmentConfig& config) COEXEC_REQUIRES(this);
    // format() for a segment being created (shm::SegmentOptions::initialize):
    // it is not published yet, so no other process can use it or take its
    // lock, and the analysis is told so.
    void format_unpublished(const Discovery& found,
                            const shm::SegmentConfig& config) COEXEC_NO_THREAD_SAFETY_ANALYSIS {
        format(found, config);
    }

    // ---- processes (locked) ------------------------------------------
    // A free process slot for `pid`, or kNone when all are taken.
    int32_t register_process(pid_t pid, uint64_t start_time, const std::string& name)
        COEXEC_REQUIRES(this);
    // Frees the slot, its threads and its CPUs (which go to others' work).
    void unregister_process(int32_t proc, WakeList& wakes) COEXEC_REQUIRES(this);
    using DeadMembers = scheduler::DeadMembers;
    // Locked. Frees each member of `dead` whose slot still names the same
    // process (pid and start time), and recorders that died; true if any
    // member was freed. Makes no /proc look-up: its cost follows the dead.
    bool reap(const DeadMembers& dead, WakeList& wakes) COEXEC_REQUIRES(this);
    // ---- direct grants across processes (ReceiveWord) -----------------
    // Lock-free, by `proc`, under its queue lock, right after it queued the
    // own task of its thread `t` as its only ready item: a CPU granted to
    // `proc` that the task may use (`cpu`, or any when `cpu` < 0) may go
    // straight to `t` instead of to a pool thread.
    void open_receiver(int32_t proc, int32_t t, int32_t cpu);
    // Lock-free, under `t`'s process's queue lock: closes `t`'s word and
    // says whether a direct grant had claimed the thread. Called by a
    // process that popped the own task of its thread `t` (true: the thread
    // runs it already, drop it), and by thread `t` after a grant (true: the
    // grant was direct and the task is still queued, take it out).
    bool close_receiver(int32_t t);
    // Lock-free, by thread `t` after it took a grant: whether a direct grant
    // claimed it (close_receiver() decides, under the queue lock). Either
    // way the thread may then run: a popper that dropped its task is done
    // reading it.
    bool receive_claimed(int32_t t) const;
    // Locked. The thread of `proc` that may take CPU `c` directly, claimed
    // for the caller to grant(); kNone when there is none.
    int32_t claim_receiver(int32_t c, int32_t proc) COEXEC_REQUIRES(this);

    // Locked. Whether the CPU table was laid out (format()); a fresh
    // segment has none until its first member discovers the topology.
    bool formatted() const COEXEC_REQUIRES(this) { return s_.header.cpu_count > 0; }
    // True when no registered process is alive (after reap()).
    bool empty() const COEXEC_REQUIRES(this) { return s_.header.alive_count == 0; }
    // Lock-free, by the process itself: whether its threads give way to the
    // preemption signal.
    void set_preemptible(int32_t proc, bool on);
    // Lock-free, by the process itself: one of its threads gave way.
    void count_preemption(int32_t proc);
    // Lock-free. Wakes (`wake_monitor`) or waits for (`wait_monitor`, at
    // most `timeout_ns`) the monitor thread of `proc`.
    void wake_monitor(int32_t proc);
    void wait_monitor(int32_t proc, uint64_t timeout_ns);

    // ---- threads and pools (locked unless said) ----------------------
    // A new thread slot of `proc`, or kNone when all are taken.
    int32_t alloc_thread(int32_t proc, pid_t tid, const char* label, shm::ThreadState state,
                         bool keeps_affinity = false) COEXEC_REQUIRES(this);
    // Frees `thread`'s slot. Every CPU it still holds (running, idle, lent
    // or kept) is released first and offered to waiting work, and the
    // thread leaves its process's pool: no CPU, pool or list ever refers to
    // a freed slot, which may be reused by another process at once.
    void release_thread(int32_t thread, WakeList& wakes) COEXEC_REQUIRES(this);
    // Parks `thread`, which holds no CPU, in its process's pool: other
    // processes may grant it a CPU from now on.
    void pool_push(int32_t thread) COEXEC_REQUIRES(this);
    // Takes a thread out of `proc`'s pool (it is Waiting now, for a CPU the
    // caller gives it), or kNone when the pool is empty.
    int32_t take_pool_thread(int32_t proc) COEXEC_REQUIRES(this);
    // Empties `proc`'s pool for good (the process stops): nobody may grant
    // its threads a CPU any more.
    void close_pool(int32_t proc) COEXEC_REQUIRES(this);
    // Lock-free, by the thread itself before anyone can grant it a CPU, or
    // once it runs: its kernel tid and what it shows (`coexec top`). A
    // reader may see a torn label for one refresh. While recording, a new
    // label of a running thread is traced (TraceKind::Label).
    void set_tid(int32_t thread, pid_t tid);
    void set_label(int32_t thread, std::string_view label);
    // Lock-free, from any thread of the process: bumps `thread`'s word and
    // wakes it if it sleeps there (a deadline wake, a stop).
    void wake_thread(int32_t thread);

    // ---- a thread's own CPU (lock-free, by the thread itself) --------
    // The CPU granted to `thread` since it last looked, consumed; or kNone.
    // Acquire: the grant's CPU slot writes are visible.
    int32_t take_grant(int32_t thread);
    // Blocks until `thread`'s word moves past `seen` or `timeout_ns` pass.
    void wait_word(int32_t thread, uint32_t seen, uint64_t timeout_ns);
    // Starts a keep period on the CPU `thread` runs on (coexec_keep_cpu).
    KeepWord begin_keep(int32_t thread);
    // Ends the period `word`: true if the thread still has its CPU, false if
    // a monitor took it (take_kept()). Lock-free when it wins; when it lost,
    // it takes the lock once, so that on return the CPU is already freed.
    bool end_keep(int32_t thread, KeepWord word);
    // Lock-free: the kernel affinity of the threads (ThreadBinding).
    ThreadBinding& binding() { return binding_; }

    // ---- demand (lock-free hints) ------------------------------------
    // Does `proc` have ready work that may run on `cpu`?
    bool has_work(int32_t proc, int32_t cpu) const;
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
    // By the holder of Running `cpu`: whether it has held the CPU for a
    // quantum at `now` (since it was granted or handed the CPU). Within a
    // process the quantum applies to its tasks: the next one may run.
    bool stint_over(int32_t cpu, uint64_t now) const;
    // By the holder of Running `cpu`, just after it took its grant: how long
    // before `now` the grant was made, when the CPU was unheld then; 0 when
    // its holder handed it over (that thread may still be on its way off the
    // kernel CPU, which says nothing about programs outside coexec).
    uint64_t unheld_grant_age(int32_t cpu, uint64_t now) const;

    // ---- decisions (policy.cpp) ---------------------------------------
    // Outcome of a scheduling decision for a CPU its holder is leaving.
    enum class Next { Own, Other, None };
    // Locked. Round-robin by quantum: the holder's process keeps the CPU
    // while its quantum lasts and it has work; otherwise the next process
    // after the CPU's turn holder in the alive list (the order in which the
    // processes joined) with work and a pool thread gets it (Other, granted
    // and queued in `wakes`). A process that already runs on as many CPUs
    // as the holder's, and whose work could run there, waits for the end
    // of the holder's share turn (kShareTurnQuanta quanta) instead.
    // `self_ready`: the holder itself has work that is not queued yet (a
    // yielding task).
    Next decide(int32_t cpu, int32_t self, bool self_ready, WakeList& wakes) COEXEC_REQUIRES(this);
    // Locked. The holder `thread` of `cpu`, of process `self`, is preempted:
    // the next other process in round-robin order with work for `cpu` and a
    // pool thread gets it (as decide() would choose), and `thread` waits
    // for a CPU. False (and nothing changes) if none can take it.
    bool give_way(int32_t cpu, int32_t self, int32_t thread, WakeList& wakes) COEXEC_REQUIRES(this);
    // Lock-free, for the preemption safety net. The thread slot to signal
    // when another process holds `cpu` past the turn decide() would give it
    // (a quantum, or a share turn if `waiter` runs on as many CPUs) plus
    // SegmentConfig::preempt_after_ns while `waiter` has work for it, or
    // kNone. Returns a given CPU's holder at most once per that period.
    int32_t overdue_holder(int32_t cpu, int32_t waiter, uint64_t now);
    // Locked. Like give_way(), for a holder that gives way to its own
    // process (a program thread, see core/interpose/program_threads.hpp): a thread
    // of `self` that waits for `cpu`, or a pool thread for its ready work,
    // gets it, and `thread` waits for a CPU. False (and nothing changes)
    // if none can take it.
    bool give_way_within(int32_t cpu, int32_t self, int32_t thread, WakeList& wakes)
        COEXEC_REQUIRES(this);
    // Lock-free, for the preemption safety net within a process: whether
    // `thread` of `proc` has held `cpu` for a quantum plus
    // SegmentConfig::preempt_after_ns while `proc` has other work for it.
    // True for a given CPU at most once per that period.
    bool overdue_within(int32_t cpu, int32_t proc, int32_t thread, uint64_t now);
    // Locked. Finds an unheld CPU allowed by `where` for process `proc` and
    // gives it to `proc`: to its own idle holder (woken), or to one of its
    // pool threads (evicting another process's idle holder, or a lender: a
    // Lent CPU is the last choice). Returns the CPU, or kNone if none is
    // unheld or `proc` has no pool thread for it.
    int32_t claim_unheld_cpu(int32_t proc, const Placement& where, WakeList& wakes)
        COEXEC_REQUIRES(this);
    // Locked. Gives `thread` (of a task that lives on its own thread) an
    // unheld CPU allowed by `where`: the one it is bound to if unheld and
    // not Lent, else Free first, then one held idle by its process, then
    // any idle, then a Lent one. An idle holder goes back to its pool, a
    // lender is evicted. Returns the CPU, or kNone if none is unheld.
    int32_t grant_unheld_cpu(int32_t thread, const Placement& where, WakeList& wakes)
        COEXEC_REQUIRES(this);
    // Locked. `cpu` is unheld (Free, held idle, or Lent): gives it,
    // round-robin, to a process with work for it: to that process's idle
    // holder of it, or to one of its pool threads (evicting any other holder
    // or the lender). Returns the thread granted, or kNone.
    int32_t offer(int32_t cpu, WakeList& wakes) COEXEC_REQUIRES(this);
    // Locked. Offers every Free CPU.
    void distribute_free(WakeList& wakes) COEXEC_REQUIRES(this);

    // ---- a holder leaving its CPU (cpu_slots.cpp) --------------------
    // Lock-free, only by the holder of a Running CPU: hands it to another
    // thread of the same process (taken from the pool, or one whose task is
    // ready), which the caller wakes (`wakes`).
    void handoff_within_process(int32_t cpu, int32_t thread, WakeList& wakes);
    // Locked. The holder keeps `cpu` but has no work: Idle while it spins
    // (and looks for work itself), Sleeping once it sleeps. Then, as
    // offer(), work queued meanwhile gets it (possibly the holder itself).
    int32_t hold_idle(int32_t cpu, bool sleeping, WakeList& wakes) COEXEC_REQUIRES(this);
    // Locked. The holder of Running `cpu` leaves coexec's view but keeps
    // running on it until someone claims it (which evicts it); work queued
    // meanwhile gets it at once, as offer().
    int32_t lend(int32_t cpu, WakeList& wakes) COEXEC_REQUIRES(this);
    // Locked. Nobody holds `cpu` any more; work queued meanwhile gets it, as
    // offer().
    int32_t release(int32_t cpu, WakeList& wakes) COEXEC_REQUIRES(this);
    // Locked. `thread` takes back the CPU it lent: false if it was claimed.
    bool reclaim_lent(int32_t cpu, int32_t thread) COEXEC_REQUIRES(this);
    // Lock-free. The holder of `cpu` when it keeps the CPU while outside
    // coexec (coexec_keep_cpu), with its word in `word`; else kNone.
    int32_t keeping_holder(int32_t cpu, KeepWord& word) const;
    // Locked. Frees `cpu` if `thread` still keeps it in the period `word`
    // names; the thread learns it at end_keep().
    bool take_kept(int32_t cpu, int32_t thread, KeepWord word, WakeList& wakes)
        COEXEC_REQUIRES(this);
    // Lock-free: whether `thread` is the Running holder of `cpu`.
    bool holds(int32_t thread, int32_t cpu) const;
    // Lock-free, for assertions. Whether `thread` is the Running holder of
    // a CPU other than `cpu` (kNone: of any CPU): a thread runs on one CPU
    // at a time, so a grant must never find it so.
    bool runs_elsewhere(int32_t thread, int32_t cpu) const;

    // Lock-free: the CPU time each process received (CpuTime).
    const CpuTime& cpu_time() const { return time_; }

    // ---- the trace rings (TraceRings, trace_rings.hpp) -----------------
    // Locked, by a recorder (`coexec record`) of process `pid`: ownership
    // changes are written to the trace rings while at least one recorder is
    // on; every locked change after add_recorder() is recorded (lock-free
    // hand-offs may lag by one change). False when kMaxRecorders already
    // record. A recorder that dies without remove_recorder() is removed by
    // reap().
    bool add_recorder(pid_t pid) COEXEC_REQUIRES(this) { return trace_.add_recorder(pid); }
    void remove_recorder(pid_t pid) COEXEC_REQUIRES(this) { trace_.remove_recorder(pid); }
    // Lock-free: whether a recorder is on.
    bool recording() const { return trace_.recording(); }

  private:
    friend class SchedulerLock; // repair() runs under the lock it takes
    // shared_scheduler.cpp
    // Unregisters `proc`, which left (Leave) or died (Reap).
    void unregister(int32_t proc, WakeList& wakes, shm::TraceKind why) COEXEC_REQUIRES(this);
    void repair(WakeList& wakes) COEXEC_REQUIRES(this);
    void release_cpus_of(int32_t proc) COEXEC_REQUIRES(this);
    void free_threads_of(int32_t proc) COEXEC_REQUIRES(this);
    // Puts the slot on the free list; nothing may refer to it any more.
    void free_slot(int32_t thread) COEXEC_REQUIRES(this);
    // Takes `thread` out of its process's pool stack, if it is there.
    void pool_remove(int32_t thread) COEXEC_REQUIRES(this);
    int32_t pool_pop(int32_t proc) COEXEC_REQUIRES(this);

    // cpu_slots.cpp
    // Hands `cpu` to `thread`, whatever it held before.
    void grant(int32_t cpu, int32_t thread, WakeList& wakes) COEXEC_REQUIRES(this);
    // Tells `thread`, bound to `cpu`, that it holds it: the last step of
    // grant() and handoff_within_process().
    void publish_grant(int32_t cpu, int32_t thread, WakeList& wakes);
    // `proc`'s turn on `cpu` starts now, unless it is its turn already.
    void start_turn(int32_t cpu, int32_t proc, uint64_t now) COEXEC_REQUIRES(this);
    // The only writer of a CPU's state after formatting: keeps unheld_cpus
    // and wakeable_cpus in step with it, and the owner's running_cpus.
    void set_state(int32_t cpu, shm::CpuState next);
    // Moves `cpu`'s count in ProcSlot::running_cpus to the process that
    // holds it Running now (owner_proc), if that changed.
    void recount_running(int32_t cpu);
    // Repair: counts every process's Running CPUs again from the CPU slots.
    void recount_all_running() COEXEC_REQUIRES(this);
    // The holder of `cpu` keeps it without running coexec work: `next` is
    // Idle, Sleeping or Lent.
    void hold_without_work(int32_t cpu, shm::CpuState next) COEXEC_REQUIRES(this);
    void set_free(int32_t cpu) COEXEC_REQUIRES(this);
    void evict_holder(int32_t cpu) COEXEC_REQUIRES(this);
    // Repair: finishes or undoes the CPU slot writes a dead lock holder
    // left half done (grant, set_free, evict_holder and take_kept each
    // write a CPU slot in several stores).
    void repair_cpu_slots(WakeList& wakes) COEXEC_REQUIRES(this);
    // Repair: whether `cpu`'s named holder may hold it.
    bool holder_is_sound(int32_t cpu) const COEXEC_REQUIRES(this);
    // After the holder made `cpu` unheld: offers it to work queued
    // meanwhile (the Dekker pair of a submitter's kick).
    int32_t offer_released(int32_t cpu, WakeList& wakes) COEXEC_REQUIRES(this);

    // policy.cpp
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
    Next next_turn(int32_t cpu, int32_t self, bool self_may_keep, bool self_ready, uint64_t now,
                   WakeList& wakes) COEXEC_REQUIRES(this);
    int32_t grant_to_pool(int32_t cpu, int32_t proc, WakeList& wakes) COEXEC_REQUIRES(this);
    // An unheld CPU allowed by `where` for a thread of `proc`; see
    // grant_unheld_cpu() for the order.
    int32_t find_unheld_cpu(int32_t proc, const Placement& where, int32_t prefer) const
        COEXEC_REQUIRES(this);

    shm::Segment& s_;
    MemberWatch watch_;
    ThreadBinding binding_;
    CpuTime time_;
    TraceRings trace_; // every ownership change is reported to it
};

} // namespace coexec::scheduler
