// The process's ready tasks, by priority and placement. push_unplaced() and
// push_preempted() are thread-safe and lock-free (they link the task onto a
// stack that the other members drain); every other member must run under
// the queue lock of ready work (ReadyWork::queue_lock_). Every push, pop and
// external count is mirrored in the process's Demand, so that other
// processes see its demand.
#pragma once

#include "core/tasks/task.hpp"
#include "scheduler/demand.hpp"
#include "scheduler/placement.hpp"
#include "shm/layout.hpp"

#include <atomic>
#include <deque>
#include <utility>
#include <vector>

namespace coexec::core {

class ReadyQueue {
  public:
    ReadyQueue(shm::Segment& segment, int32_t proc, int cpus, int numa_nodes);

    // Queues `task` with `where`; `front` puts it ahead of its priority peers.
    void push(nosv_task* task, const scheduler::Placement& where, bool front);
    // Thread-safe and lock-free: queues a task that no thread owns yet, with
    // no placement, at the back. The submit fast path: submitters never wait
    // for the queue lock that workers take to pop. The task is counted at
    // once, and the locked members see it from their next call on.
    void push_unplaced(nosv_task* task);
    // Thread-safe, lock-free and allocation-free (a signal handler calls
    // it): queues the running task of a thread preempted on logical CPU
    // `cpu`, preferring that CPU (ahead of the work that prefers it too)
    // but not bound to it.
    // Not strict: the preempted thread may hold a lock (a malloc arena's,
    // the program's) that the threads now running on `cpu` block on in the
    // kernel, holding the CPU; only another CPU can then run it again.
    void push_preempted(nosv_task* task, int cpu);
    // The best task that may run on logical CPU `cpu` (on NUMA `numa`), or
    // null. Strict and preferred matches come first at equal priority; a
    // CPU with nothing of its own steals preferred work of other places.
    nosv_task* pop(int cpu, int numa);
    // Pops the best task for `cpu` into out[0] and, when it has no placement
    // and many more such tasks wait, up to `max`-1 more of the same
    // priority that no thread owns yet, leaving a fair share for the other
    // CPUs. Returns how many it took.
    size_t pop_batch(int cpu, int numa, nosv_task** out, size_t max);
    // Puts tasks taken by pop_batch back in front, in their order.
    void unpop(nosv_task* const* tasks, size_t n);
    // Takes `task`, queued by push() with `where`, out of the queue; false
    // when it is not there.
    bool remove(nosv_task* task, const scheduler::Placement& where);
    // Highest priority ready for `cpu`, or INT_MIN.
    int top_priority(int cpu, int numa);
    // Counts an item that is ready but held outside the queue (IMMEDIATE).
    void count_external(const scheduler::Placement& where, int delta);

    // ---- parallel tasks (ParallelState::active()) ----------------------
    // pop() and pop_batch() hand out one execution per pop, and leave the
    // task at the head of its queue while executions remain; push() of a
    // popped execution gives it back. Every execution is counted as one
    // ready item.
    //
    // Queues `executions` more executions of `task`; the task itself is
    // queued once (at the front when `front`). The caller brings one count
    // of the task's events: the queue's own if the task was not queued yet,
    // else it is dropped (the queue holds one already).
    void push_parallel(nosv_task* task, const scheduler::Placement& where, uint32_t executions,
                       bool front);
    // Takes a cancelled task's executions out of the queue. Returns how many
    // there were; when nonzero the caller now owns the queue's event count.
    uint32_t withdraw(nosv_task* task, const scheduler::Placement& where);

  private:
    class Fifo {
      public:
        void push(nosv_task* t, bool front);
        nosv_task* pop();
        bool empty() const { return size_ == 0; }
        size_t size() const { return size_; }
        // pop(), but among the first kLookahead tasks of the head's
        // priority it takes the first whose thread last held logical CPU
        // `cpu`, if any, unless that would pass the same head over more
        // than kMaxPasses times in a row.
        nosv_task* pop_warm(int cpu);
        // The head, if it has `priority`; else null.
        nosv_task* pop_at(int priority);
        // The task pop() would return, or null.
        nosv_task* head() const;
        int top_priority() const;
        // Removes `t` wherever it is; false if it is not queued here.
        bool erase(const nosv_task* t);

      private:
        // Buckets by descending priority; most programs use one or two.
        std::vector<std::pair<int, std::deque<nosv_task*>>> by_priority_;
        size_t size_ = 0;
        // The head pop_warm() last passed over, and how often in a row.
        // Only compared, never dereferenced: a stale value costs one pass.
        const nosv_task* passed_head_ = nullptr;
        unsigned passes_ = 0;
    };
    struct Slot {
        Fifo* fifo;
        scheduler::Placement where;
    };
    Fifo& fifo_for(const nosv_task* task, const scheduler::Placement& where);
    // Queues without counting: push() and drain_intake() count apart.
    void place(nosv_task* task, const scheduler::Placement& where, bool front);
    // Moves what push_unplaced() and push_preempted() left in their stacks
    // into the queues, in order.
    void drain_intake();
    static void link(std::atomic<nosv_task*>& stack, nosv_task* task);
    // Empties `stack`; returns its tasks oldest first, linked by intake_next.
    static nosv_task* take_oldest_first(std::atomic<nosv_task*>& stack);
    void count(const scheduler::Placement& where, int delta);
    // `task` was just popped from `fifo`: one execution is handed out, and
    // the task goes back to the head while more remain.
    void take_execution(Fifo& fifo, nosv_task* task);

    scheduler::Demand demand_; // the counters other processes see
    // Tasks from push_unplaced(), newest first (a Treiber stack).
    std::atomic<nosv_task*> intake_{nullptr};
    std::atomic<nosv_task*> preempted_{nullptr}; // from push_preempted(), newest first
    // Unplaced work: fresh tasks in any_, tasks that live on a thread
    // (attached or resumed) in any_bound_, so batches never look inside a
    // task; ready_seq keeps FIFO order between the two.
    Fifo any_, any_bound_;
    uint64_t back_seq_ = uint64_t(1) << 62, front_seq_ = (uint64_t(1) << 62) - 1;
    std::vector<Fifo> strict_cpu_, preferred_cpu_, strict_numa_, preferred_numa_;
    long preferred_count_ = 0;
    int cpus_;
};

} // namespace coexec::core
