// Attaching and detaching threads (nosv_attach, nosv_detach): the runtime
// lists the thread in the affinity registry and the segment, and gives it a
// task of its own that takes its turns like any other.
#include "core/runtime/runtime.hpp"

#include <pthread.h>
#include <unistd.h>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::WakeList;

int Runtime::attach(nosv_task** out, const nosv_affinity_t* affinity, const char* label,
                    bool keeps_affinity) {
    auto ctx = std::make_unique<ThreadContext>();
    ctx->attach.attached = true;
    ctx->attach.keeps_affinity = keeps_affinity;
    // Each attached thread's task has a type of its own, so that the type's
    // label is the attach label (as nosv_get_task_type_label reports it).
    ctx->attach.type = std::make_unique<nosv_task_type>(external_type_);
    if (label) ctx->attach.type->label = label;
    nosv_task* t = ready_.new_task(ctx->attach.type.get(), 0);
    if (!t) return NOSV_ERR_OUT_OF_MEMORY;
    // From here on the thread shows the mask it has now (the kernel's: the
    // system call, not libcoexec's own sched_getaffinity). Listed before its
    // tid is in the segment, where granters find it to pin it.
    ctx->affinity.tid = ::gettid();
    ctx->affinity.pthread = pthread_self();
    affinity_.add_current(ctx->affinity, process_mask_);
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched(), wakes);
        ctx->slot =
            sched().procs().alloc_thread(proc(), ctx->affinity.tid, label ? label : "attached",
                                         ThreadState::Waiting, keeps_affinity);
    }
    wakes.flush(*segment());
    if (ctx->slot == kNone) {
        affinity_.remove(ctx->affinity, AffinityRegistry::Restore::no);
        ready_.delete_task(t);
        return NOSV_ERR_OUT_OF_MEMORY;
    }
    if (affinity) t->affinity = *affinity;
    t->thread = ctx.get();
    t->status.reset(TaskState::Ready);
    ctx->attach.task = t;
    ctx->work.run_attached(t, ctx->attach.type.get()); // the slot already shows the attach label
    ThreadContext* raw = ctx.release();
    this_thread_context() = raw;
    binding_->adopt(*raw);
    ready_.make_ready(t, false);
    handover_.wait_for_cpu(*raw);
    t->status.relabel(TaskState::Running);
    *out = t;
    return NOSV_SUCCESS;
}

int Runtime::detach(ThreadContext& self, bool restore_affinity) {
    ready_.flush_window(self);
    nosv_task* t = self.work.current;
    WakeList wakes;
    if (self.held.cpu != kNone) handover_.leave_cpu(self, CpuHandover::LeaveReason::Block, wakes);
    {
        // Also a CPU the thread still keeps or lends (detached between
        // coexec_keep_cpu or coexec_lend_cpu and coexec_block_exit).
        scheduler::SchedulerLock lock(sched(), wakes);
        sched().release_thread(self.slot, wakes);
    }
    wakes.flush(*segment());
    // The remembered mask: the one the thread had at attach, or the last it
    // set since. A thread that keeps its affinity gets it back only when
    // coexec pinned it or a set is pending. NOSV_DETACH_NO_RESTORE_AFFINITY
    // (!restore_affinity) leaves any thread's kernel mask as it is, as in
    // nOS-V: the pin, if coexec set one, which the calls show from then on.
    using Restore = AffinityRegistry::Restore;
    Restore how = Restore::no;
    if (restore_affinity)
        how =
            !self.attach.keeps_affinity || self.binding.pinned ? Restore::yes : Restore::if_changed;
    affinity_.remove(self.affinity, how);
    binding_->release(self);
    ready_.delete_task(t);
    this_thread_context() = nullptr;
    delete &self;
    return NOSV_SUCCESS;
}

} // namespace coexec::core
