// The one per-process runtime object. It owns the parts, each with one job:
//   Membership   the process's place in the shared instance (membership.*);
//   WorkerPool   its worker threads (worker_pool.*);
//   IdlePolicy   what a worker does with a CPU it has no work for;
//   CpuBinding   kernel affinity, and CPUs kept or lent outside coexec;
//   Preemption   the safety net for holders that never yield;
//   ReadyWork    the ready queue, task storage, batches and submit windows
//                (tasks/ready_work.*);
//   CpuHandover  how a thread leaves its CPU and gets one (cpu_handover.*);
//   TaskOps      the task operations behind the C API (tasks/task_ops.*;
//                parallel tasks in parallel_ops.cpp, suspensions in
//                suspend.cpp, joinable tasks in join.cpp).
// It also uses the AffinityRegistry (affinity.hpp), the masks managed
// threads show: a process-wide object that outlives the runtime, in which
// the runtime lists its threads while they are managed.
// No part is a friend of Runtime: each gets references to the parts it
// uses (and the stop flag, read-only) when it is made. Runtime itself
// enters and leaves the instance and runs the monitor (runtime/runtime.cpp),
// attaches and detaches threads (runtime/attach.cpp), and runs the worker
// loop (cpu/worker_loop.cpp): what ties the parts together. Every change to
// the segment goes through the scheduler.
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
#include "core/tasks/task_ops.hpp"

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
    // Membership::leave_at_exit().
    static void exit_without_shutdown();
    // Returns once no thread the runtime created is still starting (see
    // ThreadStarts); fork() calls it.
    void await_thread_starts() const { thread_starts_.await(); }
    // The runtime, or null before init / after the last shutdown.
    static Runtime* get() { return instance_.load(std::memory_order_acquire); }

    // ---- the parts, for the C API ----------------------------------------
    // The instance as this process sees it: segment, scheduler, topology.
    const Membership& membership() const { return member_; }
    const coexec::config::Config& config() const { return config_; }
    // The task operations behind the C API.
    TaskOps& tasks() { return tasks_; }
    // The process's ready work and task storage.
    ReadyWork& ready() { return ready_; }
    // How threads leave and get CPUs, also around code of their own.
    CpuHandover& handover() { return handover_; }
    // The safety net; also told which thread is the hosted program thread.
    Preemption& preemption() { return preemption_; }

    // ---- attached threads (attach.cpp) ---------------------------------
    // nosv_attach of the calling thread: it gets a task of its own (the
    // type external_type() with `label`), and waits for a CPU.
    int attach(nosv_task** out, const nosv_affinity_t* affinity, const char* label,
               bool keeps_affinity);
    // nosv_detach: the thread leaves its CPU and coexec; `self` is freed.
    int detach(ThreadContext& self, bool restore_affinity);
    nosv_task_type* external_type() { return &external_type_; }

    ~Runtime();

  private:
    // Each part gets references to the parts it uses, and the stop flag.
    Runtime()
        : affinity_(AffinityRegistry::instance()),
          workers_(member_, stopping_, thread_starts_,
                   [this](ThreadContext& self) { worker_main(self); }),
          ready_(member_, workers_), handover_(member_, ready_, workers_, binding_, stopping_),
          idle_(member_, handover_, binding_, stopping_),
          preemption_(member_, ready_, workers_, handover_, binding_),
          tasks_(member_, ready_, handover_, workers_, thread_starts_) {}
    int start(bool quiet);
    // Reports why start() fails (printed unless quiet) and keeps it.
    void fail_reason(const std::string& why, bool quiet);
    void stop();
    // Watches for processes that died holding CPUs, for work of ours that
    // no CPU picked up, for holders past their turn, and for kept CPUs.
    void monitor_main();
    // The worker loop (worker_loop.cpp): a worker's whole life.
    void worker_main(ThreadContext& self);

    scheduler::SharedScheduler& sched() const { return member_.scheduler(); }
    int32_t proc() const { return member_.proc(); }
    shm::Segment* segment() const { return &member_.segment(); }
    bool stopping() const { return stopping_.load(std::memory_order_acquire); }

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
    ThreadStarts thread_starts_;        // of workers_, monitor_ and tasks_' timers
    WorkerPool workers_;
    ReadyWork ready_;
    CpuHandover handover_;
    IdlePolicy idle_;
    Preemption preemption_;
    std::thread monitor_;
    // The monitor has named itself in the process slot
    // (MemberWatch::monitor_started()); set once by the monitor.
    std::atomic<bool> monitor_named_{false};
    nosv_task_type external_type_;
    TaskOps tasks_;
};

} // namespace coexec::core
