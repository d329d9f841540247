// The shared scheduler: the only writer of the segment's scheduling state
// (a process's ready counters are written through Demand). It is made of
// parts with one job each, and ties them together: the operations that
// span parts (formatting, a process or thread leaving, reaping, repair,
// the end of a keep period) are its own. Each field has one home file
// (docs/design.md, "Which file writes which field"):
//   cpu_table.cpp         CpuTable: the CPU slots, the CPU counters, grants
//                         and a thread's side of them, keep words;
//   process_table.cpp     ProcessTable: process slots, the alive list,
//                         thread slots, their free list and high-water
//                         marks, pools, receivers, monitor words;
//   policy.cpp            Policy: the decisions; it writes the turn of a
//                         holder that keeps its CPU, preempt_asked_ns, and a
//                         preempted thread's state;
//   cpu_time.cpp          CpuTime: each CPU's stint and the totals;
//   thread_binding.cpp    ThreadBinding: each thread's kernel affinity;
//   member_watch.cpp      MemberWatch: the beats, the look-ups of members in
//                         /proc, the reap and entry-check elections;
//   trace_rings.cpp       TraceRings: the recorder slots and count, and the
//                         trace rings (through shm/trace_ring.cpp);
//   demand.hpp            a process's ready counters (scheduler::Demand);
//   shared_scheduler.cpp  the settings and the CPU origin (format()), the
//                         reap mark (reap()) and the recovery count
//                         (repair()).
// A thread's futex word moves only through ThreadWord (thread_word.hpp).
// shm/segment.cpp writes the header's identity, isolation and lock at
// creation.
//
// Methods marked COEXEC_REQUIRES(segment_lock) must run while the caller
// holds the segment lock (a SchedulerLock), and Clang rejects a call made
// without it (scheduler_lock.hpp). The others are lock-free, and say who
// may call them.
#pragma once

#include "scheduler/alive_list.hpp"
#include "scheduler/cpu_table.hpp"
#include "scheduler/cpu_time.hpp"
#include "scheduler/keep_word.hpp"
#include "scheduler/member_watch.hpp"
#include "scheduler/placement.hpp"
#include "scheduler/policy.hpp"
#include "scheduler/process_table.hpp"
#include "scheduler/scheduler_lock.hpp"
#include "scheduler/thread_binding.hpp"
#include "scheduler/topology.hpp"
#include "scheduler/trace_rings.hpp"
#include "scheduler/wake_list.hpp"
#include "shm/layout.hpp"

#include <cstdint>
#include <sys/types.h>

namespace coexec::scheduler {

class SharedScheduler {
  public:
    explicit SharedScheduler(shm::Segment& segment)
        : s_(segment), watch_(segment), binding_(segment), time_(segment), trace_(segment),
          procs_(segment, trace_), cpus_(segment, procs_, binding_, time_, trace_),
          policy_(segment, cpus_, procs_, binding_, trace_) {}
    SharedScheduler(const SharedScheduler&) = delete;
    SharedScheduler& operator=(const SharedScheduler&) = delete;

    shm::Segment& segment() const { return s_; }
    int cpu_count() const { return s_.header.cpu_count; }
    uint64_t quantum_ns() const { return s_.header.config.quantum_ns; }

    // ---- the parts ---------------------------------------------------
    // The CPU slots, grants and a holder's own CPU.
    CpuTable& cpus() { return cpus_; }
    const CpuTable& cpus() const { return cpus_; }
    // The process and thread slots, pools and receivers.
    ProcessTable& procs() { return procs_; }
    const ProcessTable& procs() const { return procs_; }
    // Who gets a CPU, and when.
    Policy& policy() { return policy_; }
    const Policy& policy() const { return policy_; }
    // Lock-free: whether the members still run, and the elections of who
    // looks (MemberWatch).
    MemberWatch& watch() { return watch_; }
    // Lock-free: the kernel affinity of the threads (ThreadBinding).
    ThreadBinding& binding() { return binding_; }
    // Lock-free: the CPU time each process received (CpuTime).
    const CpuTime& cpu_time() const { return time_; }

    // ---- the segment -------------------------------------------------
    // Lays out the CPU table for `found.cpus` (and records where they came
    // from), the settings, the free list and empty process slots. For a
    // segment whose processes are all gone.
    void format(const Discovery& found, const shm::SegmentConfig& config)
        COEXEC_REQUIRES(segment_lock);
    // format() for a segment being created (shm::SegmentOptions::initialize):
    // it is not published yet, so no other process can use it or take its
    // lock, and the analysis is told so.
    void format_unpublished(const Discovery& found,
                            const shm::SegmentConfig& config) COEXEC_NO_THREAD_SAFETY_ANALYSIS {
        format(found, config);
    }
    // Whether the CPU table was laid out (format()); a fresh segment has
    // none until its first member discovers the topology.
    bool formatted() const COEXEC_REQUIRES(segment_lock) { return s_.header.cpu_count > 0; }
    // True when no registered process is alive (after reap()).
    bool empty() const COEXEC_REQUIRES(segment_lock) { return s_.header.alive_count == 0; }

    // ---- members leaving ---------------------------------------------
    // Frees `proc`'s slot, its threads and its CPUs (which go to others'
    // work).
    void unregister_process(int32_t proc, WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    using DeadMembers = scheduler::DeadMembers;
    // Frees each member of `dead` whose slot still names the same process
    // (pid and start time), and recorders that died; true if any member was
    // freed. Makes no /proc look-up: its cost follows the dead.
    bool reap(const DeadMembers& dead, WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    // Frees `thread`'s slot. Every CPU it still holds (running, idle, lent
    // or kept) is released first and offered to waiting work, and the
    // thread leaves its process's pool: no CPU, pool or list ever refers to
    // a freed slot, which may be reused by another process at once.
    void release_thread(int32_t thread, WakeList& wakes) COEXEC_REQUIRES(segment_lock);

    // ---- a CPU kept outside coexec (coexec_keep_cpu) ------------------
    // Lock-free, by the thread: starts a keep period on the CPU `thread`
    // runs on.
    KeepWord begin_keep(int32_t thread) { return cpus_.begin_keep(thread); }
    // By the thread: ends the period `word`. True if the thread still has
    // its CPU, false if a monitor took it (Policy::take_kept()). Lock-free
    // when it wins; when it lost, it takes the lock once, so that on return
    // the CPU is already freed.
    bool end_keep(int32_t thread, KeepWord word);
    // The same for a park (CpuTable::park()) of `cpu`: lock-free unless a
    // taker won the period.
    bool end_park(int32_t thread, int32_t cpu, KeepWord word);

    // ---- the trace rings (TraceRings, trace_rings.hpp) -----------------
    // By a recorder (`coexec record`) of process `pid`: ownership changes
    // are written to the trace rings while at least one recorder is on;
    // every locked change after add_recorder() is recorded (lock-free
    // hand-offs may lag by one change). False when kMaxRecorders already
    // record. A recorder that dies without remove_recorder() is removed by
    // reap().
    bool add_recorder(pid_t pid) COEXEC_REQUIRES(segment_lock) { return trace_.add_recorder(pid); }
    void remove_recorder(pid_t pid) COEXEC_REQUIRES(segment_lock) { trace_.remove_recorder(pid); }
    // Lock-free: whether a recorder is on.
    bool recording() const { return trace_.recording(); }

  private:
    friend class SchedulerLock; // repair() runs under the lock it takes
    // Unregisters `proc`, which left (Leave) or died (Reap).
    void unregister(int32_t proc, WakeList& wakes, shm::TraceKind why)
        COEXEC_REQUIRES(segment_lock);
    // Rebuilds everything a dead lock holder may have left half-updated.
    void repair(WakeList& wakes) COEXEC_REQUIRES(segment_lock);
    // By `thread`, whose period `word` a taker won: waits for the taker's
    // locked section, which frees the CPU, and makes the word the thread's
    // again.
    void after_lost_period(int32_t thread, KeepWord word);

    shm::Segment& s_;
    MemberWatch watch_;
    ThreadBinding binding_;
    CpuTime time_;
    TraceRings trace_; // every ownership change is reported to it
    ProcessTable procs_;
    CpuTable cpus_;
    Policy policy_;
};

} // namespace coexec::scheduler
