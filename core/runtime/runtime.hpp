// The one per-process runtime object. It owns the parts, each with one job:
//   Membership   the process's place in the shared instance (membership.*);
//   WorkerPool   its worker threads (worker_pool.*);
//   IdlePolicy   what a worker does with a CPU it has no work for;
//   CpuBinding   kernel affinity, and CPUs kept or lent outside coexec;
//   Preemption   the safety net for holders that never yield;
//   ReadyWork    the ready queue, task storage, batches and submit windows
//                (tasks/ready_work.*);
//   CpuHandover  how a thread leaves its CPU and gets one (cpu_handover.*).
// It also uses the AffinityRegistry (affinity.hpp), the masks managed
// threads show: a process-wide object that outlives the runtime, in which
// the runtime lists its threads while they are managed.
// Runtime itself enters and leaves the instance and runs the monitor
// (runtime/runtime.cpp), and has the task operations behind the C API
// (tasks/task_ops.cpp; parallel tasks in
// tasks/parallel_ops.cpp, suspensions in tasks/suspend.cpp, joinable tasks in
// tasks/join.cpp), and the worker loop (cpu/worker_loop.cpp). Every
// change to the segment goes through the scheduler.
#pragma once

#include "config/config.hpp"
#include "core/cpu/cpu_binding.hpp"
#include "core/cpu/cpu_handover.hpp"
#include "core/cpu/idle_policy.hpp"
#include "core/cpu/preemption.hpp"
#include "core/cpu/worker_pool.hpp"
#include "core/interpose/affinity.hpp"
#include "core/runtime/membership.hpp"
#include "core/runtime/thread_context.hpp"
#include "core/runtime/thread_starts.hpp"
#include "core/tasks/ready_work.hpp"
#include "core/tasks/task.hpp"

#include <atomic>
#include <memory>
#include <optional>
#include <thread>

namespace coexec::core {

class Runtime {
  public:
    // Who may end an init with shutdown(): the thread that called nosv_init
    // (nOS-V's rule), or any thread of the process (an adapter's init, made
    // on whichever thread first needed coexec).
    enum class InitOwner { Thread, Process };
    // Enters the instance (nesting). Returns a nosv error code; why it failed
    // is printed, or only kept for last_error() when `quiet`.
    static int init(InitOwner owner, bool quiet = false);
    static const char* last_error();
    // Ends one init the caller may end, and leaves the instance when the
    // nesting count reaches zero.
    static int shutdown();
    // At exit (or when libcoexec is unloaded) with no last shutdown: see
    // Membership::drop_name_if_alone().
    static void exit_without_shutdown();
    // Returns once no thread the runtime created is still starting (see
    // ThreadStarts); fork() calls it.
    void await_thread_starts() const { thread_starts_.await(); }
    // The runtime, or null before init / after the last shutdown.
    static Runtime* get() { return instance_.load(std::memory_order_acquire); }

    // ---- topology (logical indices) ----------------------------------
    const Membership& membership() const { return member_; }
    int cpu_count() const { return member_.cpu_count(); }
    int numa_count() const { return member_.numa_count(); }
    int numa_of_cpu(int cpu) const { return member_.numa_of_cpu(cpu); }
    const std::vector<int>& cpu_system_ids() const { return member_.cpu_system_ids(); }
    const std::vector<int>& numa_system_ids() const { return member_.numa_system_ids(); }
    int logical_cpu(int system_id) const { return member_.logical_cpu(system_id); }
    int logical_numa(int system_id) const { return member_.logical_numa(system_id); }
    shm::Segment* segment() const { return &member_.segment(); }
    const coexec::config::Config& config() const { return config_; }

    // ---- the scheduling points (see the nosv_* contracts) ------------
    int submit(nosv_task* task, nosv_flags_t flags);
    int pause(ThreadContext& self);
    int yield(ThreadContext& self);
    int schedpoint(ThreadContext& self);
    int waitfor(ThreadContext& self, uint64_t ns, uint64_t* actual_ns);
    int attach(nosv_task** out, const nosv_affinity_t* affinity, const char* label,
               bool keeps_affinity);
    int detach(ThreadContext& self, bool restore_affinity);
    // Completes `task` if its last event is gone.
    void release_events(nosv_task* task, uint64_t count);

    // ---- joinable tasks (join.cpp) ------------------------------------
    // Waits until each of `tasks` (valid, joinable, distinct) completed the
    // run last submitted, at most `timeout_ns` (0: only checks; UINT64_MAX:
    // no limit). A calling task waits without its CPU. Returns the codes
    // that nosv_join_all documents.
    int join_wait(nosv_task* const* tasks, size_t n, uint64_t timeout_ns);
    // Counts a completed run of a joinable task and wakes its joiner: the
    // completion's last access to the task, which the joiner may destroy.
    void finish_join(JoinState& join);

    // ---- parallel tasks (parallel_ops.cpp) ----------------------------
    // nosv_cancel from the calling task: no execution of it starts from now
    // on. NOSV_ERR_INVALID_OPERATION when it was cancelled already.
    int cancel(ThreadContext& self);

    // ---- nosv_suspend (suspend.cpp) -----------------------------------
    // Before a body runs: a fresh run's event count, or a resumed one's.
    void begin_body(nosv_task* task);
    // After a body that called nosv_suspend returned on `self`: the task is
    // suspended, and resumed as its mode says.
    void suspend_after_body(ThreadContext& self, nosv_task* task);
    // Suspended -> Ready, if still suspended (a timer fired).
    void resume_suspended(nosv_task* task);
    // For nosv_destroy: Suspended -> Created, with its timer (if any)
    // cancelled, so that nothing in the runtime refers to the task any more.
    // False when it was not suspended (a submit or its timer resumed it).
    bool discard_suspended(nosv_task* task);
    // For release_events: the last event of a task suspended with
    // EVENT_SUBMIT resumes it rather than completing it.
    bool resume_after_events(nosv_task* task);

    // ---- program threads (program_threads.hpp) ------------------------
    // The calling attached thread is (or no longer is) a program thread
    // that coexec hosts: the preemption safety net then also gives its CPU
    // to this process's own work when it holds it too long (Preemption).
    void host_program_thread(ThreadContext& self);
    void unhost_program_thread(ThreadContext& self);

    nosv_task_type* external_type() { return &external_type_; }
    // The process's ready work and task storage.
    ReadyWork& ready() { return ready_; }
    // How threads leave and get CPUs, also around code of their own.
    CpuHandover& handover() { return handover_; }

    ~Runtime();

  private:
    friend class WorkerPool;
    friend class IdlePolicy;
    friend class Preemption;

    Runtime()
        : affinity_(AffinityRegistry::instance()), idle_(*this), workers_(*this),
          preemption_(*this), ready_(member_, workers_),
          handover_(member_, ready_, workers_, binding_, stopping_),
          suspend_timers_(thread_starts_) {}
    int start(bool quiet);
    // Reports why start() fails (printed unless quiet) and keeps it.
    void fail_reason(const std::string& why, bool quiet);
    void stop();
    // Watches for processes that died holding CPUs, for work of ours that
    // no CPU picked up, for holders past their turn, and for kept CPUs.
    void monitor_main();

    scheduler::SharedScheduler& sched() const { return member_.scheduler(); }
    int32_t proc() const { return member_.proc(); }
    bool stopping() const { return stopping_.load(std::memory_order_acquire); }

    // ---- workers (worker_loop.cpp) -----------------------------------
    void worker_main(ThreadContext& self);
    void run_task(ThreadContext& self, nosv_task* task);
    // One execution of a parallel task (run_task's path for them).
    void run_execution(ThreadContext& self, nosv_task* task);
    void show_label(ThreadContext& self, const nosv_task_type* type);

    static std::atomic<Runtime*> instance_;

    coexec::config::Config config_;
    // Outlives the runtime (see AffinityRegistry); the runtime lists its
    // threads there while they are managed.
    AffinityRegistry& affinity_;
    // The mask workers show: the init thread's at nosv_init.
    cpu_set_t process_mask_{};
    Membership member_;
    std::atomic<bool> stopping_{false};
    std::optional<CpuBinding> binding_; // made once the process is a member
    IdlePolicy idle_;
    ThreadStarts thread_starts_; // of workers_, monitor_ and suspend_timers_
    WorkerPool workers_;
    Preemption preemption_;
    ReadyWork ready_;
    CpuHandover handover_;
    // The slot of the program thread coexec hosts (the main thread), or
    // kNone. Written by that thread, read by the monitor (relaxed: a stale
    // read only delays or skips one request of the safety net, whose
    // handler checks the thread's own state again).
    std::atomic<int32_t> program_slot_{shm::kNone};
    // Set by the monitor before it signals the program thread asleep on
    // its CPU, taken by the thread's handler (Preemption).
    std::atomic<bool> program_lend_asked_{false};

    std::thread monitor_;
    nosv_task_type external_type_;
    SuspendTimers suspend_timers_; // TIMEOUT_SUBMIT suspensions (suspend.cpp)
};

} // namespace coexec::core
