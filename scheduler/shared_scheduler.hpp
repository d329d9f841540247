// The system-wide policy, operating on the shared segment.
//
// Methods marked "locked" must run while the caller holds the segment lock
// (see lock()); the others are lock-free reads meant as hints.
#pragma once

#include "scheduler/wake_list.hpp"
#include "shm/layout.hpp"
#include "shm/robust_mutex.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>

namespace coexec::scheduler {

// Where a task may run: any CPU, one CPU, or one NUMA node (logical indices).
struct Placement {
    enum class Kind : uint8_t { Any, Cpu, Numa } kind = Kind::Any;
    int32_t index = -1;
    bool strict = false;
    bool allows(const shm::CpuSlot& cpu, int32_t cpu_index) const;
};

class SharedScheduler {
  public:
    explicit SharedScheduler(shm::Segment& segment) : s_(segment) {}

    shm::Segment& segment() const { return s_; }
    int cpu_count() const { return s_.header.cpu_count; }
    uint64_t quantum_ns() const { return s_.header.config.quantum_ns; }

    // Takes the segment lock; repairs the segment first when the previous
    // holder died. Wakes queued in `wakes` are the caller's to flush after.
    shm::RobustLock lock(WakeList& wakes);

    // ---- processes (locked) ------------------------------------------
    // A free process slot for `pid`, or kNone when all are taken.
    int32_t register_process(pid_t pid, uint64_t start_time, const std::string& name);
    // Frees the slot, its threads and its CPUs (which go to others' work).
    void unregister_process(int32_t proc, WakeList& wakes);
    // Frees every process that died; true if any did.
    bool reap_dead(WakeList& wakes);
    // True when no registered process is alive (after reap_dead()).
    bool empty() const { return s_.header.alive_count == 0; }

    // ---- threads (locked) --------------------------------------------
    int32_t alloc_thread(int32_t proc, pid_t tid, const char* label, shm::ThreadState state,
                         bool keeps_affinity = false);
    // Frees `thread`'s slot. Every CPU it still holds (running, idle, lent
    // or kept) is released first and offered to waiting work, and the
    // thread leaves its process's pool: no CPU, pool or list ever refers to
    // a freed slot, which may be reused by another process at once.
    void release_thread(int32_t thread, WakeList& wakes);
    void pool_push(int32_t thread);

    // ---- CPUs --------------------------------------------------------
    // Lock-free: does `proc` have ready work that may run on `cpu`?
    bool has_work(int32_t proc, int32_t cpu) const;
    // Lock-free: does any process other than `self` have work for `cpu`?
    bool foreign_work(int32_t self, int32_t cpu) const;
    // Lock-free hint: how many more threads could run now without making
    // any wait. Unheld CPUs (Free, Idle, Sleeping) less the ready work of
    // every process; negative when work waits. Lent CPUs count as busy.
    int32_t spare_cpus() const;

    // Outcome of a scheduling decision for a CPU its holder is leaving.
    enum class Next { Own, Other, None };
    // Locked. Round-robin by quantum: the holder's process keeps the CPU
    // while its quantum lasts and it has work; otherwise the next process
    // (in slot order) with work and a pool thread gets it (Other, granted
    // and queued in `wakes`). `self_ready`: the holder itself has work that
    // is not queued yet (a yielding task).
    Next decide(int32_t cpu, int32_t self, bool self_ready, WakeList& wakes);
    // Locked. The holder of `cpu`, of process `self`, is preempted: the next
    // other process in round-robin order with work for `cpu` and a pool
    // thread gets it. False (and nothing changes) if none can take it.
    bool give_way(int32_t cpu, int32_t self, WakeList& wakes);
    // Lock-free, for the preemption safety net. The thread slot to signal
    // when another process holds `cpu` past its quantum plus
    // SegmentConfig::preempt_after_ns while `waiter` has work for it, or
    // kNone. Returns a given CPU's holder at most once per that period.
    int32_t overdue_holder(int32_t cpu, int32_t waiter, uint64_t now);

    // Locked. Hands `cpu` to `thread`, whatever it held before.
    void grant(int32_t cpu, int32_t thread, WakeList& wakes);
    // Lock-free, only by the holder of a Running CPU: hands it to another
    // thread of the same process, which the caller wakes (`wakes`).
    void handoff_within_process(int32_t cpu, int32_t thread, WakeList& wakes);
    // Sets the kernel affinity of `thread` to `cpu` and records it in
    // ThreadSlot::bound_cpu, unless it is bound there already. Only by the
    // thread itself, or by whoever grants it `cpu` while it waits. A thread
    // the kernel refuses (another user's) is left to bind itself.
    void bind_thread(int32_t thread, int32_t cpu);
    // Locked. The holder keeps `cpu` but has no work: Idle while it spins
    // (and looks for work itself), Sleeping once it sleeps.
    void set_holding(int32_t cpu, bool sleeping);
    // Locked. The holder of Running `cpu` leaves coexec's view but keeps
    // running on it until someone claims it (which evicts it).
    void set_lent(int32_t cpu);
    // Locked. `thread` takes back the CPU it lent: false if it was claimed.
    bool reclaim_lent(int32_t cpu, int32_t thread);
    // Lock-free. The holder of `cpu` when it keeps the CPU while outside
    // coexec (coexec_keep_cpu), with its serial word in `word`; else kNone.
    int32_t keeping_holder(int32_t cpu, uint32_t& word) const;
    // Locked. Frees `cpu` if `thread` still keeps it in the period `word`
    // names; the thread learns it at coexec_block_exit().
    bool take_kept(int32_t cpu, int32_t thread, uint32_t word);
    // Locked. Nobody holds `cpu` any more.
    void set_free(int32_t cpu);

    // Locked. Finds an unheld CPU allowed by `where` for process `proc` and
    // gives it to `proc`: to its own idle holder (woken), or to one of its
    // pool threads (evicting another process's idle holder, or a lender: a
    // Lent CPU is the last choice). Returns the CPU, or kNone if none is
    // unheld or `proc` has no pool thread for it.
    int32_t claim_unheld_cpu(int32_t proc, const Placement& where, WakeList& wakes);
    // Locked. An unheld CPU allowed by `where`: `prefer` if it is unheld and
    // not Lent, else Free first, then one held idle by `proc`, then any idle,
    // then a Lent one; or kNone.
    int32_t find_unheld_cpu(int32_t proc, const Placement& where,
                            int32_t prefer = shm::kNone) const;
    // Locked. Gives unheld `cpu` to `thread` directly; an idle holder goes
    // back to its pool, a lender is evicted.
    void give_unheld_cpu(int32_t cpu, int32_t thread, WakeList& wakes);
    // Locked. `cpu` is unheld (Free, held idle, or Lent): gives it,
    // round-robin, to a process with work for it: to that process's idle
    // holder of it, or to one of its pool threads (evicting any other holder
    // or the lender). Returns the thread granted, or kNone.
    int32_t offer(int32_t cpu, WakeList& wakes);
    // Locked. Its holder has just made `cpu` unheld (set_holding, set_lent,
    // set_free): offers it to work queued meanwhile, as offer().
    int32_t offer_released(int32_t cpu, WakeList& wakes);
    // Locked. Offers every Free CPU.
    void distribute_free(WakeList& wakes);

    // Lock-free: CPU time `proc` received, including open stints.
    uint64_t cpu_time_ns(int32_t proc, uint64_t now) const;

    // Lock-free, for assertions. Whether `thread` is the Running holder of
    // a CPU other than `cpu` (kNone: of any CPU): a thread runs on one CPU
    // at a time, so a grant must never find it so.
    bool runs_elsewhere(int32_t thread, int32_t cpu) const;

  private:
    void repair(WakeList& wakes);
    void close_stint(shm::CpuSlot& cpu, uint64_t now);
    // The only writer of a CPU's state after formatting: keeps unheld_cpus
    // and wakeable_cpus in step with it.
    void set_state(int32_t cpu, shm::CpuState next);
    // The holder of `cpu` keeps it without running coexec work: `next` is
    // Idle, Sleeping or Lent.
    void hold_without_work(int32_t cpu, shm::CpuState next);
    void evict_holder(shm::CpuSlot& cpu);
    // Lets `thread` run on every managed CPU (an evicted lender).
    void unbind_thread(int32_t thread);
    int32_t pool_pop(int32_t proc);
    int32_t grant_to_pool(int32_t cpu, int32_t proc, WakeList& wakes);
    void release_cpus_of(int32_t proc);
    void free_threads_of(int32_t proc);
    // Puts the slot on the free list; nothing may refer to it any more.
    void free_slot(int32_t thread);
    // Takes `thread` out of its process's pool stack, if it is there.
    void pool_remove(int32_t thread);
    bool turn_expired(const shm::CpuSlot& cpu, int32_t self, uint64_t now) const;
    // Lock-free: calls `stop(proc)` for each process on the alive list until
    // one returns true, and says whether one did. The list may change under
    // the walk; the bounds are checked, so a stale read only skips or
    // repeats a process.
    template <class Stop>
    bool any_alive_unlocked(Stop stop) const;
    Next next_turn(int32_t cpu, int32_t self, bool self_may_keep, bool self_ready, uint64_t now,
                   WakeList& wakes);

    shm::Segment& s_;
};

} // namespace coexec::scheduler
