// The one per-process runtime object: the process's membership in the shared
// instance, its ready queue, its worker threads, and the scheduling points.
#pragma once

#include "core/config.hpp"
#include "core/ready_queue.hpp"
#include "core/spin_lock.hpp"
#include "core/task.hpp"
#include "core/task_pool.hpp"
#include "core/thread_context.hpp"
#include "scheduler/shared_scheduler.hpp"
#include "scheduler/topology.hpp"
#include "shm/segment.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace coexec::core {

class Runtime {
  public:
    // Joins the instance (nesting). Returns a nosv error code; why it failed
    // is printed, or only kept for last_error() when `quiet`.
    static int init(bool quiet = false);
    static const char* last_error();
    // Leaves it when the nesting count reaches zero.
    static int shutdown();
    // The runtime, or null before init / after the last shutdown.
    static Runtime* get() { return instance_.load(std::memory_order_acquire); }

    // ---- topology (logical indices) ----------------------------------
    int cpu_count() const { return int(cpu_system_ids_.size()); }
    int numa_count() const { return int(numa_system_ids_.size()); }
    const std::vector<int>& cpu_system_ids() const { return cpu_system_ids_; }
    const std::vector<int>& numa_system_ids() const { return numa_system_ids_; }
    int numa_of_cpu(int cpu) const { return segment()->cpus[cpu].numa; }
    int logical_cpu(int system_id) const;
    int logical_numa(int system_id) const;
    shm::Segment* segment() const { return mapping_.get(); }
    int32_t proc() const { return proc_; }
    const Config& config() const { return config_; }

    // ---- the scheduling points (see the nosv_* contracts) ------------
    int submit(nosv_task* task, nosv_flags_t flags);
    int pause(ThreadContext& self);
    int yield(ThreadContext& self);
    int schedpoint(ThreadContext& self);
    int waitfor(ThreadContext& self, uint64_t ns, uint64_t* actual_ns);
    int attach(nosv_task** out, const nosv_affinity_t* affinity, const char* label,
               bool keeps_affinity);
    int detach(ThreadContext& self, bool restore_affinity);
    int block_enter(ThreadContext& self);
    int lend_cpu(ThreadContext& self);
    int keep_cpu(ThreadContext& self);
    int block_exit(ThreadContext& self);
    bool cpu_wanted(const ThreadContext& self) const;
    // See coexec_spare_cpus().
    int spare_cpus() const;
    // Completes `task` if its last event is gone.
    void release_events(nosv_task* task, uint64_t count);

    scheduler::Placement placement_of(const nosv_affinity_t& affinity) const;
    // Task storage: a task plus `metadata_size` bytes.
    nosv_task* new_task(nosv_task_type* type, size_t metadata_size);
    void delete_task(nosv_task* task);
    nosv_task_type* external_type() { return &external_type_; }

    ~Runtime();

  private:
    Runtime() = default;
    int start(bool quiet);
    // Reports why start() fails (printed unless quiet) and keeps it.
    void fail_reason(const std::string& why, bool quiet);
    void stop();
    void monitor_main();

    // ---- the preemption safety net (preemption.cpp) -------------------
    // Installs the signal handler unless the program has one of its own;
    // true when this process's threads give way to it.
    bool install_preemption();
    static void on_preempt_signal(int);
    // In the handler, in user code: gives the caller's CPU to the next
    // other process with work for it, then waits to get that CPU back.
    void give_way(ThreadContext& self);
    // Monitor: signals holders of CPUs this process has long waited for.
    void ask_overdue_holders();

    // Queues a ready task and makes sure some CPU will pick it up.
    void make_ready(nosv_task* task, bool front);
    // Gives an unheld CPU to this process's work when one exists.
    void kick(const scheduler::Placement& where);
    // For a task that lives on its own thread (attached, or resumed): when
    // a CPU is unheld it goes straight to that thread, and the task is not
    // queued. Returns false when it did nothing (no CPU is unheld).
    bool give_directly(nosv_task* task, const scheduler::Placement& where, bool front);
    // Keeps one pool worker available to receive CPUs from other processes.
    void ensure_receiver();
    bool spawn_worker();

    // What the caller should do after leaving its CPU.
    // Continue: the caller keeps the CPU. Gone: the CPU went to another
    // thread. Pooled: it went to another process and the caller (a free
    // worker) is already back in the pool. Holding: the caller keeps the
    // CPU idle.
    enum class Leave { Continue, Gone, Pooled, Holding };
    // Why the caller leaves its CPU.
    enum class Leaving {
        Done,  // a free worker between tasks: it may get the next task back
        Block, // its task stops; it is made ready only after the thread left
        Yield, // as Block, but the caller keeps the CPU if nothing else wants it
    };
    // The caller is leaving its CPU. Only a free worker (Done) gets a task
    // back, in `*next`, and then Continues. The threads the CPU went to are
    // in `wakes`: the caller wakes them once it has nothing left to do but
    // sleep (woken earlier, one would preempt it on this CPU, and the caller
    // would stay runnable without a CPU until the kernel ran it again).
    Leave leave_cpu(ThreadContext& self, Leaving why, scheduler::WakeList& wakes,
                    nosv_task** next = nullptr);
    Leave hand_to(ThreadContext& self, nosv_task* task, bool can_run, scheduler::WakeList& wakes,
                  nosv_task** next);
    Leave go_unheld(ThreadContext& self, bool can_run, scheduler::WakeList& wakes);
    nosv_task* pop_own(int cpu);
    // Whether `self` is the Running holder of `cpu` (for assertions).
    bool holds(const ThreadContext& self, int32_t cpu) const;
    // The next task for a free worker: its batch, else the queue (refilling
    // the batch when the queue is long).
    nosv_task* next_for_worker(ThreadContext& self);
    void return_batch(ThreadContext& self);
    // Blocks until the thread is granted a CPU; returns it, or kNone when
    // the runtime stops.
    int32_t wait_for_cpu(ThreadContext& self);
    // The caller's thread leaves its CPU (Block or Yield). Its task may be
    // made ready again only after this: made ready while the thread still
    // held a CPU, it could be granted a second one. False if a Yield found
    // nothing else for the CPU and kept it. The CPU's next holder is in
    // `wakes`, as for leave_cpu().
    bool step_off_cpu(ThreadContext& self, Leaving why, scheduler::WakeList& wakes);
    // After step_off_cpu() and once the caller's task is ready: wakes the
    // threads in `wakes`, then waits for the CPU granted to the caller.
    void step_on_cpu(ThreadContext& self, scheduler::WakeList& wakes);
    // Runs the calling thread on `cpu` from now on. A thread that keeps its
    // affinity is pinned only if the kernel has it elsewhere.
    void bind_to(ThreadContext& self, int32_t cpu);
    // Makes the next bind_to() set the kernel affinity, whatever it was.
    void forget_binding(ThreadContext& self);
    // Before a thread that keeps its affinity runs code of its own: undoes
    // what bind_to() pinned.
    void unpin(ThreadContext& self);
    void step_out(ThreadContext& self);
    bool reclaim_kept_cpu(ThreadContext& self);
    bool reclaim_lent_cpu(ThreadContext& self);
    // Monitor: frees CPUs that threads have kept outside coexec since an
    // earlier look of its own, at least a millisecond ago.
    void take_long_kept_cpus(uint64_t now);
    struct KeptSighting {
        int32_t thread = shm::kNone;
        uint32_t word = 0;
        uint64_t since_ns = 0;
    };
    std::vector<KeptSighting> kept_seen_; // per CPU; the monitor's own

    void worker_main(ThreadContext& self);
    // Idle holder: spins then sleeps until work arrives (true) or the CPU
    // is taken away (false).
    bool hold_idle(ThreadContext& self);
    // A spinning holder that saw work offers its CPU (possibly to itself)
    // under the lock; false if nobody could take it.
    bool offer_own_cpu(ThreadContext& self);
    // The holder stops spinning: marks its CPU Sleeping and offers it to work
    // queued meanwhile. True if it still holds the CPU and may sleep.
    bool sleep_holding(ThreadContext& self);
    void run_task(ThreadContext& self, nosv_task* task);
    void show_label(ThreadContext& self, const nosv_task_type* type);
    void finish_worker(ThreadContext& self);
    void return_to_pool(ThreadContext& self);

    static std::atomic<Runtime*> instance_;

    Config config_;
    shm::SegmentMapping mapping_;
    std::unique_ptr<scheduler::SharedScheduler> sched_;
    int32_t proc_ = shm::kNone;
    std::vector<int> cpu_system_ids_, numa_system_ids_;

    SpinLock queue_mutex_;
    std::unique_ptr<ReadyQueue> queue_;

    std::mutex workers_mutex_;
    std::vector<std::unique_ptr<ThreadContext>> workers_;
    std::atomic<int> unblocked_workers_{0};
    std::vector<ThreadContext*> by_slot_; // slot -> context (this process's)

    TaskPool task_pool_;
    std::atomic<bool> stopping_{false};
    std::thread monitor_;
    nosv_task_type external_type_;
};

} // namespace coexec::core
