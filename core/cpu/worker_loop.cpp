// The worker loop: a worker waits for a CPU, runs this process's tasks on
// it (TaskOps::run_task(), tasks/task_run.cpp), and holds it idle or gives
// it away when there are none.
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
                    task = self.held.take_assigned();
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

} // namespace coexec::core
