// The process and thread tables: who is a member of the instance, and
// which of its threads may receive a CPU. Process slots (registration, the
// alive list, pools, thread counts, the preemption flag and count, monitor
// words, receivers), thread slots (allocation and freeing, tid, label,
// receive word, pool membership, the futex word's sleeps and wakes) and
// their free list and high-water marks.
//
// Methods marked COEXEC_REQUIRES(segment_lock) run under the segment lock
// (scheduler_lock.hpp); the others say who may call them.
#pragma once

#include "scheduler/scheduler_lock.hpp"
#include "scheduler/trace_rings.hpp"
#include "shm/layout.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace coexec::scheduler {

// The runtime class of a thread label: exactly "openmp", "tbb" or "pocl"
// (what the adapters attach with), else Other.
shm::LabelClass classify_label(std::string_view label);
// "openmp", "tbb", "pocl" or "other".
const char* label_class_name(shm::LabelClass c);

class ProcessTable {
  public:
    ProcessTable(shm::Segment& segment, TraceRings& trace) : s_(segment), trace_(trace) {}

    // Empties every slot ever used (below the high-water marks) and the
    // lists: no process is a member.
    void format() COEXEC_REQUIRES(segment_lock);
    // Repair after a dead lock holder: the alive list, the pools, the free
    // list and the thread counts are derived again from the slots' states
    // (a thread's and a process's state are each one store). After the CPU
    // table's repair, which may have changed thread states.
    void repair() COEXEC_REQUIRES(segment_lock);

    // ---- processes ---------------------------------------------------
    // A free process slot for `pid`, or kNone when all are taken.
    // `home_numa`: the NUMA node its unbound work prefers (ProcSlot), or
    // kNone.
    int32_t register_process(pid_t pid, uint64_t start_time, const std::string& name,
                             int32_t home_numa = shm::kNone) COEXEC_REQUIRES(segment_lock);
    // Whether `proc` is still the Alive member `pid` started at
    // `start_time` (a slot may be freed, or reused, at any time).
    bool still_names(int32_t proc, pid_t pid, uint64_t start_time) const
        COEXEC_REQUIRES(segment_lock);
    // `proc`'s slot is free, and it is out of the alive list; its threads
    // and pool are gone (free_threads_of()) and it holds no CPU.
    void unregister(int32_t proc) COEXEC_REQUIRES(segment_lock);
    // Frees every thread slot of `proc`, and empties its pool.
    void free_threads_of(int32_t proc) COEXEC_REQUIRES(segment_lock);
    // Lock-free, by the process itself: whether its threads give way to the
    // preemption signal.
    void set_preemptible(int32_t proc, bool on);
    // Lock-free, by the process itself: one of its threads gave way.
    void count_preemption(int32_t proc);
    // Lock-free, by the process itself as it exits without leaving, before
    // it drops its share of the segment's in-use lock: the last mapping to
    // close may then remove the segment's name (ProcSlot::departing).
    void mark_departing(int32_t proc);
    // Lock-free. Wakes (`wake_monitor`) or waits for (`wait_monitor`, at
    // most `timeout_ns`) the monitor thread of `proc`.
    void wake_monitor(int32_t proc);
    void wait_monitor(int32_t proc, uint64_t timeout_ns);

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
    // The thread of `proc` that may take CPU `c` directly, claimed for the
    // caller to grant; kNone when there is none.
    int32_t claim_receiver(int32_t c, int32_t proc) COEXEC_REQUIRES(segment_lock);

    // ---- threads and pools -------------------------------------------
    // A new thread slot of `proc`, or kNone when all are taken.
    int32_t alloc_thread(int32_t proc, pid_t tid, const char* label, shm::ThreadState state,
                         bool keeps_affinity = false) COEXEC_REQUIRES(segment_lock);
    // Puts `thread`'s slot on the free list (leaving its pool first);
    // nothing may refer to it any more: it holds no CPU.
    void free_thread(int32_t thread) COEXEC_REQUIRES(segment_lock);
    // Parks `thread`, which holds no CPU, in its process's pool: other
    // processes may grant it a CPU from now on.
    void pool_push(int32_t thread) COEXEC_REQUIRES(segment_lock);
    // Takes a thread out of `proc`'s pool for a grant the caller makes at
    // once (it is still Pool), or kNone when the pool is empty.
    int32_t pool_pop(int32_t proc) COEXEC_REQUIRES(segment_lock);
    // Takes a thread out of `proc`'s pool (it is Waiting now, for a CPU the
    // caller gives it), or kNone when the pool is empty.
    int32_t take_pool_thread(int32_t proc) COEXEC_REQUIRES(segment_lock);
    // Empties `proc`'s pool for good (the process stops): nobody may grant
    // its threads a CPU any more.
    void close_pool(int32_t proc) COEXEC_REQUIRES(segment_lock);
    // Lock-free, by the thread itself before anyone can grant it a CPU, or
    // once it runs: its kernel tid and what it shows (`coexec top`). A
    // reader may see a torn label for one refresh. While recording, a new
    // label of a running thread is traced (TraceKind::Label).
    void set_tid(int32_t thread, pid_t tid);
    void set_label(int32_t thread, std::string_view label);
    // Lock-free, from any thread of the process: bumps `thread`'s word and
    // wakes it if it sleeps there (a deadline wake, a stop).
    void wake_thread(int32_t thread);
    // Lock-free, by the thread itself: blocks until `thread`'s word moves
    // past `seen` or `timeout_ns` pass.
    void wait_word(int32_t thread, uint32_t seen, uint64_t timeout_ns);

  private:
    // Takes `thread` out of its process's pool stack, if it is there.
    void pool_remove(int32_t thread) COEXEC_REQUIRES(segment_lock);
    // Puts the slot on the free list.
    void free_slot(int32_t thread) COEXEC_REQUIRES(segment_lock);
    // Puts `thread` first in its process's list of threads
    // (ProcSlot::thread_head), or takes it out.
    void link_thread(int32_t thread) COEXEC_REQUIRES(segment_lock);
    void unlink_thread(int32_t thread) COEXEC_REQUIRES(segment_lock);

    shm::Segment& s_;
    TraceRings& trace_; // joins and labels are recorded
};

} // namespace coexec::scheduler
