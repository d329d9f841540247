// The task operations behind the C API: nosv_submit, pause, yield,
// schedpoint and waitfor (task_ops.cpp); a body's run and its task's
// completion (task_run.cpp); joinable tasks (join.cpp); parallel
// tasks (parallel_ops.cpp); suspensions (suspend.cpp).
#pragma once

#include "core/cpu/cpu_handover.hpp"
#include "core/runtime/membership.hpp"
#include "core/runtime/thread_context.hpp"
#include "core/runtime/thread_starts.hpp"
#include "core/tasks/ready_work.hpp"
#include "core/tasks/task.hpp"

namespace coexec::core {

class WorkerPool;

class TaskOps {
  public:
    // `starts` launches the timer thread of TIMEOUT_SUBMIT suspensions.
    TaskOps(const Membership& member, ReadyWork& ready, CpuHandover& handover, WorkerPool& workers,
            ThreadStarts& starts)
        : member_(member), ready_(ready), handover_(handover), workers_(workers),
          suspend_timers_(starts) {}

    // ---- the scheduling points (see the nosv_* contracts) ------------
    int submit(nosv_task* task, nosv_flags_t flags);
    int pause(ThreadContext& self);
    int yield(ThreadContext& self);
    int schedpoint(ThreadContext& self);
    int waitfor(ThreadContext& self, uint64_t ns, uint64_t* actual_ns);
    // Completes `task` if its last event is gone.
    void release_events(nosv_task* task, uint64_t count);

    // ---- running bodies (task_run.cpp) ----------------------------------
    // Runs `task` (one execution of it, if parallel) on the calling thread.
    void run_task(ThreadContext& self, nosv_task* task);

    // ---- joinable tasks (join.cpp) ------------------------------------
    // Waits until each of `tasks` (valid, joinable, distinct) completed the
    // run last submitted, at most `timeout_ns` (0: only checks; UINT64_MAX:
    // no limit). A calling task waits without its CPU. Returns the codes
    // that nosv_join_all documents.
    int join_wait(nosv_task* const* tasks, size_t n, uint64_t timeout_ns);

    // ---- parallel tasks (parallel_ops.cpp) ----------------------------
    // nosv_cancel from the calling task: no execution of it starts from now
    // on. NOSV_ERR_INVALID_OPERATION when it was cancelled already.
    int cancel(ThreadContext& self);

    // ---- nosv_suspend (suspend.cpp) -----------------------------------
    // For nosv_destroy: Suspended -> Created, with its timer (if any)
    // cancelled, so that nothing in the runtime refers to the task any more.
    // False when it was not suspended (a submit or its timer resumed it).
    bool discard_suspended(nosv_task* task);
    // The runtime stops: no timer resumes a task from here on.
    void stop_timers() { suspend_timers_.stop(); }

  private:
    scheduler::SharedScheduler& sched() const { return member_.scheduler(); }
    int32_t proc() const { return member_.proc(); }
    shm::Segment* segment() const { return &member_.segment(); }

    // The thread's slot shows the label of `type` (the default when none).
    void show_label(ThreadContext& self, const nosv_task_type* type);
    // One execution of a parallel task (run_task's path for them).
    void run_execution(ThreadContext& self, nosv_task* task);
    // Counts a completed run of a joinable task and wakes its joiner: the
    // completion's last access to the task, which the joiner may destroy.
    void finish_join(JoinState& join);
    // Before a body runs: a fresh run's event count, or a resumed one's.
    void begin_body(nosv_task* task);
    // After a body that called nosv_suspend returned on `self`: the task is
    // suspended, and resumed as its mode says.
    void suspend_after_body(ThreadContext& self, nosv_task* task);
    // Suspended -> Ready, if still suspended (a timer fired).
    void resume_suspended(nosv_task* task);
    // For release_events: the last event of a task suspended with
    // EVENT_SUBMIT resumes it rather than completing it.
    bool resume_after_events(nosv_task* task);

    const Membership& member_;
    ReadyWork& ready_;
    CpuHandover& handover_;
    WorkerPool& workers_;
    SuspendTimers suspend_timers_; // TIMEOUT_SUBMIT suspensions (suspend.cpp)
};

} // namespace coexec::core
