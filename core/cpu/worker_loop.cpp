// The worker loop: a worker waits for a CPU, runs this process's tasks on
// it, and holds it idle or gives it away when there are none. Also how a
// task's body runs and its task completes (TaskOps::run_task(),
// release_events()).
#include "core/runtime/runtime.hpp"

#include <pthread.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <utility>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::WakeList;
using AfterLeaving = CpuHandover::AfterLeaving;
using LeaveReason = CpuHandover::LeaveReason;

void TaskOps::show_label(ThreadContext& self, const nosv_task_type* type) {
    if (self.shown_type == type) return;
    self.shown_type = type;
    sched().procs().set_label(self.slot, type && !type->label.empty() ? type->label : "task");
}

void Runtime::worker_main(ThreadContext& self) {
    RuntimeSection section; // a worker is in coexec but for its task bodies
    this_thread_context() = &self;
    // A task sees the process's mask, not the CPU the worker is pinned to.
    // Listed before its tid is published: from then on granters may pin it.
    self.affinity.tid = ::gettid();
    self.affinity.pthread = pthread_self();
    affinity_.add(self.affinity, process_mask_);
    sched().procs().set_tid(self.slot, self.affinity.tid);
    prctl(PR_SET_NAME, "coexec-worker", 0, 0, 0);
    binding_->adopt(self); // a worker lives as long as its thread: never released
    while (handover_.wait_for_cpu(self) != kNone) {
        // A fresh grant runs this process's work before any new decision:
        // the turn was just given to us, and with a short quantum deciding
        // again could hand the CPU straight back.
        nosv_task* task = nullptr;
        WakeList wakes; // woken once this worker has nothing left to do
        if (nosv_task* t = ready_.next_for_worker(self);
            t && handover_.hand_to(self, t, true, wakes, &task) == AfterLeaving::Gone) {
            workers_.return_to_pool(self);
            wakes.flush(*segment(), self.slot);
            continue;
        }
        for (;;) {
            if (stopping()) break;
            if (!task) {
                AfterLeaving how = handover_.leave_cpu(self, LeaveReason::Done, wakes, &task);
                if (how == AfterLeaving::Gone) workers_.return_to_pool(self);
                wakes.flush(*segment(), self.slot);
                if (how == AfterLeaving::Gone || how == AfterLeaving::Pooled) break;
                if (how == AfterLeaving::Holding) {
                    if (!idle_.hold(self)) break; // evicted: pooled
                    // Evicted and granted again by our own process (hand_to),
                    // maybe with a task, before hold() saw the eviction.
                    task = std::exchange(self.assigned, nullptr);
                }
                if (!task) continue;
            }
            tasks_.run_task(self, task);
            task = nullptr;
        }
        if (stopping()) break;
    }
    affinity_.remove(self.affinity, AffinityRegistry::Restore::no);
    ready_.return_batch(self);
    workers_.finish(self);
}

void TaskOps::run_task(ThreadContext& self, nosv_task* task) {
    if (task->par.active()) return run_execution(self, task);
    task->thread = &self;
    begin_body(task); // one event for the body, or those of a suspended task
    // The status stays Ready (or Running, inline): see TaskState::Ready.
    self.current = task;
    show_label(self, task->type);
    {
        UserSection body;
        if (task->type->run) task->type->run(task);
        // A suspended body has not ended: it runs again later.
        if (task->type->end && !task->suspend.requested) task->type->end(task);
    }
    if (self.window_size != 1) ready_.end_window(self); // the window ends with the body
    self.current = nullptr;
    task->thread = nullptr;
    if (task->suspend.requested) return suspend_after_body(self, task);
    task->status.reset(TaskState::Ended); // submits nothing paused for are dropped
    task->deadline.clear();               // and a wake no waitfor used
    release_events(task, 1);
}

void TaskOps::release_events(nosv_task* task, uint64_t count) {
    // acq_rel: the decrement that reaches zero sees every write the task
    // and its event producers made before their own decrements.
    if (task->events.fetch_sub(count, std::memory_order_acq_rel) != count) return;
    if (resume_after_events(task)) return; // suspended with EVENT_SUBMIT
    nosv_task* waiter = std::exchange(task->blocking_waiter, nullptr);
    auto completed = task->type->completed;
    JoinState* join = task->join.get(); // a joinable task outlives its callback
    task->status.reset(TaskState::Created);
    if (completed) completed(task); // may destroy or resubmit the task
    if (join) finish_join(*join);   // the last access: a joiner may destroy it
    if (waiter) submit(waiter, NOSV_SUBMIT_NONE);
}

} // namespace coexec::core
