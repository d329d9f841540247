// The process's ready work: its ready queue (private memory, mirrored by
// the ready counters in the segment) and the lock that guards it, the
// storage of its tasks, and the work its threads hold outside the queue (a
// worker's batch, a task's submit window). It queues a ready task and makes
// sure some CPU will pick it up, and hands a free worker its next task.
#pragma once

#include "core/runtime/membership.hpp"
#include "core/runtime/spin_lock.hpp"
#include "core/runtime/thread_context.hpp"
#include "core/tasks/ready_queue.hpp"
#include "core/tasks/task.hpp"
#include "core/tasks/task_pool.hpp"

#include <memory>

namespace coexec::core {

class WorkerPool;

class ReadyWork {
  public:
    // `workers` keeps a thread to receive the CPUs that ready work claims.
    ReadyWork(const Membership& member, WorkerPool& workers) : member_(member), workers_(workers) {}

    // Once the process is a member: the queue mirrors into its slot.
    void open();

    // ---- task storage --------------------------------------------------
    // A task plus `metadata_size` bytes.
    nosv_task* new_task(nosv_task_type* type, size_t metadata_size);
    void delete_task(nosv_task* task);

    scheduler::Placement placement_of(const nosv_affinity_t& affinity) const;

    // ---- making work ready ----------------------------------------------
    // Queues a ready task and makes sure some CPU will pick it up; a paused
    // task whose thread parked its CPU is resumed there instead
    // (resume_parked()).
    void make_ready(nosv_task* task, bool front);
    // Wakes the thread of a resumed `task` that sleeps with its CPU parked
    // (CpuHandover::park()): it runs the task on that CPU again. False, with
    // nothing done, if the thread did not park.
    bool resume_parked(nosv_task* task);
    // A submitted task becomes ready: all its executions for a parallel
    // one (make_ready_parallel), else make_ready().
    void ready_submitted(nosv_task* task, bool front);
    void make_ready_parallel(nosv_task* task);
    // Thread-safe and lock-free (ReadyQueue::push_unplaced(),
    // push_preempted(); a signal handler calls them): the running task of
    // a thread that gave way.
    void push_unplaced(nosv_task* task) { queue_->push_unplaced(task); }
    void push_preempted(nosv_task* task, int cpu) { queue_->push_preempted(task, cpu); }
    // A task taken from the queue that nobody could run: back in front.
    void put_back(nosv_task* task);
    // An IMMEDIATE successor set (+1) or taken (-1) on logical CPU `cpu`:
    // ready work that waits outside the queue, counted for the CPU.
    void count_successor(int32_t cpu, int delta);
    // Takes a cancelled task's executions out of the queue (see
    // ReadyQueue::withdraw()).
    uint32_t withdraw(nosv_task* task);
    // Highest priority ready for logical CPU `cpu`, or INT_MIN.
    int top_priority(int32_t cpu);

    // ---- taking work ---------------------------------------------------
    // The best task of this process for logical CPU `cpu`, or null.
    nosv_task* pop_own(int cpu);
    // After a grant: a direct one leaves the thread's own task queued; take
    // it out.
    void withdraw_if_granted(ThreadContext& self);
    // The next task for a free worker: its batch, else the queue (refilling
    // the batch when the queue is long).
    nosv_task* next_for_worker(ThreadContext& self);
    // The rest of the worker's batch goes back to the queue.
    void return_batch(ThreadContext& self);

    // ---- the submit window (nosv_set_submit_window_size) -----------------
    // Makes the submits held in the calling thread's window ready (inline:
    // most calls find it empty, on paths as hot as pause).
    void flush_window(ThreadContext& self) {
        if (!self.pending.window.empty()) flush_held(self);
    }
    // For the calling task (size > 0).
    void set_submit_window(ThreadContext& self, size_t size);
    // The running body ends: its window is flushed and back to size 1.
    void end_window(ThreadContext& self);
    // Whether the calling task's window holds submits back (size > 1).
    bool window_holds(const ThreadContext& self) const { return self.pending.window_size > 1; }
    // The calling task's window holds `task` back (with its UNLOCKED hint)
    // until it is full, then flushes it.
    void hold_back(ThreadContext& self, nosv_task* task, bool unlocked) {
        self.pending.window.emplace_back(task, unlocked);
        if (self.pending.window.size() >= self.pending.window_size) flush_held(self);
    }
    // An inline task runs on the caller's thread with a window of its own,
    // of size 1 unless it sets one: returns the caller's size, which
    // restore_window() puts back when the inline task is done.
    uint32_t open_inline_window(ThreadContext& self) {
        return std::exchange(self.pending.window_size, 1);
    }
    void restore_window(ThreadContext& self, uint32_t size) { self.pending.window_size = size; }

  private:
    scheduler::SharedScheduler& sched() const { return member_.scheduler(); }
    int32_t proc() const { return member_.proc(); }
    shm::Segment* segment() const { return &member_.segment(); }

    // Gives an unheld CPU to this process's work when one exists.
    void kick(const scheduler::Placement& where);
    // For a task that lives on its own thread (attached, or resumed): when
    // a CPU is unheld it goes straight to that thread, and the task is not
    // queued. Returns false when it did nothing (no CPU is unheld).
    bool give_directly(nosv_task* task, const scheduler::Placement& where, bool front);
    // Under queue_lock_. Whether the caller, who popped `t`, may hand it on:
    // false when a direct grant reached the task's thread first.
    bool claimed_by_us(nosv_task* t);
    // Under queue_lock_. Queues a task that lives on its own thread; as the
    // only ready item of the process, it lets a CPU granted to the process
    // (by another, or by a CPU of its own going free) reach the thread
    // directly (ProcessTable::open_receiver()).
    void queue_own_task(nosv_task* task, const scheduler::Placement& where, bool front);
    void flush_held(ThreadContext& self);

    const Membership& member_;
    WorkerPool& workers_;
    SpinLock queue_lock_;
    std::unique_ptr<ReadyQueue> queue_;
    TaskPool task_pool_;
};

} // namespace coexec::core
