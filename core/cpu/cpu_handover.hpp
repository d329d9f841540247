// How a thread leaves its CPU and gets one: at the scheduling points (to
// the next task of its process, to another process, or unheld), while it
// waits for a grant, and around code of its own outside coexec
// (coexec_block_enter/_exit, coexec_lend_cpu, coexec_keep_cpu).
#pragma once

#include "core/cpu/cpu_binding.hpp"
#include "core/runtime/membership.hpp"
#include "core/runtime/thread_context.hpp"
#include "core/tasks/task.hpp"

#include <atomic>
#include <optional>

namespace coexec::core {

class ReadyWork;
class WorkerPool;

class CpuHandover {
  public:
    // `binding` is made once the process is a member; `stopping` is set when
    // the runtime stops (waits then return kNone).
    CpuHandover(const Membership& member, ReadyWork& ready, WorkerPool& workers,
                std::optional<CpuBinding>& binding, const std::atomic<bool>& stopping)
        : member_(member), ready_(ready), workers_(workers), binding_(binding),
          stopping_(stopping) {}

    // ---- leaving and getting a CPU -------------------------------------
    // What the caller should do after leaving its CPU.
    // Continue: the caller keeps the CPU. Gone: the CPU went to another
    // thread. Pooled: it went to another process and the caller (a free
    // worker) is already back in the pool. Holding: the caller keeps the
    // CPU idle.
    enum class AfterLeaving { Continue, Gone, Pooled, Holding };
    // Why the caller leaves its CPU.
    enum class LeaveReason {
        Done,  // a free worker between tasks: it may get the next task back
        Block, // its task stops; it is made ready only after the thread left
        Yield, // as Block, but the caller keeps the CPU if nothing else wants it
    };
    // The caller is leaving its CPU. Only a free worker (Done) gets a task
    // back, in `*next`, and then Continues. The threads the CPU went to are
    // in `wakes`: the caller wakes them once it has nothing left to do but
    // sleep (woken earlier, one would preempt it on this CPU, and the caller
    // would stay runnable without a CPU until the kernel ran it again).
    AfterLeaving leave_cpu(ThreadContext& self, LeaveReason why, scheduler::WakeList& wakes,
                           nosv_task** next = nullptr);
    // The caller's CPU goes to `task`: to its thread if it has one, else
    // back to the caller (`*next`, when `can_run`) or to a pool worker.
    AfterLeaving hand_to(ThreadContext& self, nosv_task* task, bool can_run,
                         scheduler::WakeList& wakes, nosv_task** next);
    // Whether `self` is the Running holder of `cpu` (for assertions).
    bool holds(const ThreadContext& self, int32_t cpu) const;
    // Blocks until the thread is granted a CPU; returns it, or kNone when
    // the runtime stops.
    int32_t wait_for_cpu(ThreadContext& self);
    // The caller's thread leaves its CPU (Block or Yield). Its task may be
    // made ready again only after this: made ready while the thread still
    // held a CPU, it could be granted a second one. False if a Yield found
    // nothing else for the CPU and kept it. The CPU's next holder is in
    // `wakes`, as for leave_cpu().
    bool step_off_cpu(ThreadContext& self, LeaveReason why, scheduler::WakeList& wakes);
    // After step_off_cpu() and once the caller's task is ready: wakes the
    // threads in `wakes`, then waits for the CPU granted to the caller.
    void step_on_cpu(ThreadContext& self, scheduler::WakeList& wakes);
    // The caller's task stops running and the thread leaves coexec's view.
    void step_out(ThreadContext& self);

    // ---- a paused task's CPU, parked (CpuTable::park()) ----------------
    // For a pause: when no work of any process waits for the caller's CPU,
    // parks it, lock-free, and returns true; the caller then sleeps in
    // sleep_parked() and takes the CPU back with unpark(). False, with
    // nothing changed, when work waits: the caller leaves the CPU as usual.
    bool park(ThreadContext& self);
    // After park(): sleeps until a submit resumes the task
    // (ReadyWork::resume_parked()) or the runtime stops.
    void sleep_parked(ThreadContext& self);
    // After park(): ends the park. True if the caller still holds its CPU
    // (no lock taken); false if someone took it meanwhile: the caller holds
    // no CPU then, and makes its task ready and waits for one
    // (step_on_cpu(), which ends the blocked count that park() began).
    bool unpark(ThreadContext& self);

    // ---- code of the thread's own (the block extension) -----------------
    int block_enter(ThreadContext& self);
    int lend_cpu(ThreadContext& self);
    int keep_cpu(ThreadContext& self);
    int lend_kept_cpu(ThreadContext& self);
    int block_exit(ThreadContext& self);
    // block_exit() only if that needs no wait: the CPU lent or kept is
    // still the thread's. False (the thread stays outside) otherwise.
    bool reclaim_cpu(ThreadContext& self);

    // ---- questions about CPUs --------------------------------------------
    // See coexec_cpu_wanted(): COEXEC_CPU_WANTED_* flags, 0 when none.
    int cpu_wanted(const ThreadContext& self) const;
    // See coexec_spare_cpus().
    int spare_cpus() const;
    // See coexec_quantum().
    uint64_t quantum_ns() const;

  private:
    scheduler::SharedScheduler& sched() const { return member_.scheduler(); }
    int32_t proc() const { return member_.proc(); }
    shm::Segment* segment() const { return &member_.segment(); }
    bool stopping() const { return stopping_.load(std::memory_order_acquire); }

    // Nothing of the process's for the caller's CPU: it holds it idle (a
    // free worker, `can_run`) or releases it.
    AfterLeaving go_unheld(ThreadContext& self, bool can_run, scheduler::WakeList& wakes);

    const Membership& member_;
    ReadyWork& ready_;
    WorkerPool& workers_;
    std::optional<CpuBinding>& binding_;
    const std::atomic<bool>& stopping_;
};

} // namespace coexec::core
