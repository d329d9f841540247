// Entering and leaving the shared instance, and the process's monitor.
#include "core/runtime/runtime.hpp"

#include "scheduler/kernel_affinity.hpp"
#include "shm/clock.hpp"

#include <cstdio>
#include <pthread.h>
#include <unistd.h>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::MemberWatch;
using scheduler::SharedScheduler;
using scheduler::WakeList;

std::atomic<Runtime*> Runtime::instance_{nullptr};

namespace {

// Nesting of nosv_init/nosv_shutdown, and why the last init failed; both
// guarded by init_mutex(). Part of the one per-process runtime state.
int g_nesting = 0;
std::string g_last_error;
// Of g_nesting: the inits any thread may end (InitOwner::Process), and
// those the calling thread made itself (InitOwner::Thread). Only the
// owning thread reads or writes its own count, under init_mutex().
int g_process_inits = 0;
thread_local int t_thread_inits = 0;

std::mutex& init_mutex() {
    static std::mutex m;
    return m;
}

// The monitor's period (wake_monitor() ends one early). At each it beats
// (ProcSlot::alive_ns, which tells other members it still runs, see
// MemberWatch::kAliveStaleNs), and then looks for dead members, overdue
// holders and CPUs for its process's work (monitor_main()).
constexpr uint64_t kMonitorPeriodNs = 20'000'000;

void warn(const std::string& text) {
    std::fprintf(stderr, "coexec: %s\n", text.c_str());
}

// Before fork(): no thread of the runtime is still starting (ThreadStarts).
// A thread inside init or shutdown is not waited for: the runtime may be
// gone, or its workers may be what that thread waits for.
void settle_before_fork() {
    std::unique_lock guard(init_mutex(), std::try_to_lock);
    if (!guard) return;
    if (Runtime* rt = Runtime::get()) rt->await_thread_starts();
}

// After fork() the child is not a member of the instance: it forgets the
// parent's runtime without touching the segment, and may nosv_init anew.
void forget_after_fork() {
    g_nesting = 0;
    g_process_inits = 0;
    t_thread_inits = 0; // the child's one thread is the one that forked
    this_thread_context() = nullptr;
    new (&init_mutex()) std::mutex;
}

} // namespace

ThreadContext*& this_thread_context() {
    // initial-exec: read on every spin of a re-hosted wait loop
    // (coexec_cpu_wanted); one pointer fits glibc's static TLS reserve even
    // when libcoexec is dlopen()ed.
    thread_local ThreadContext* ctx __attribute__((tls_model("initial-exec"))) = nullptr;
    return ctx;
}

const char* Runtime::last_error() {
    std::lock_guard guard(init_mutex());
    return g_last_error.c_str();
}

void Runtime::fail_reason(const std::string& why, bool quiet) {
    g_last_error = why; // init_mutex() is held by init()
    if (!quiet) warn(why);
}

int Runtime::init(InitOwner owner, bool quiet) {
    std::lock_guard guard(init_mutex());
    g_last_error.clear();
    int& owned = owner == InitOwner::Thread ? t_thread_inits : g_process_inits;
    if (g_nesting > 0) {
        ++g_nesting;
        ++owned;
        return NOSV_SUCCESS;
    }
    static std::once_flag fork_handler;
    std::call_once(fork_handler, [] {
        // The affinity registry's mutex is held across fork(), so that the
        // child's copy of the list is whole (the registry exists from here on).
        AffinityRegistry::instance();
        pthread_atfork(
            [] {
                settle_before_fork();
                AffinityRegistry::instance().before_fork();
                Preemption::fork_begins();
            },
            [] {
                Preemption::fork_ends();
                AffinityRegistry::instance().after_fork_parent();
            },
            [] {
                Preemption::fork_ends();
                ThreadContext* self = this_thread_context();
                AffinityRegistry::instance().after_fork_child(self ? &self->affinity : nullptr);
                instance_.store(nullptr, std::memory_order_relaxed);
                forget_after_fork();
            });
    });
    // A process that exits without its last nosv_shutdown() (PoCL leaves its
    // workers parked at exit, so its adapter cannot shut down) must not
    // leave the segment's name in /dev/shm once nobody else uses it. A
    // static's destructor runs at exit, or when libcoexec is unloaded.
    static struct AtExit {
        ~AtExit() { exit_without_shutdown(); }
    } at_exit;
    std::unique_ptr<Runtime> rt(new Runtime);
    int rc = rt->start(quiet);
    if (rc != NOSV_SUCCESS) return rc;
    instance_.store(rt.release(), std::memory_order_release);
    g_nesting = 1;
    owned = 1;
    return NOSV_SUCCESS;
}

int Runtime::shutdown() {
    std::lock_guard guard(init_mutex());
    if (g_nesting == 0) return NOSV_ERR_NOT_INITIALIZED;
    // A thread ends its own inits first; one that made none may end an
    // adapter's (the process's). Any other thread's shutdown is refused, as
    // in nOS-V, and the owner can still shut down afterwards.
    int* owned = t_thread_inits > 0    ? &t_thread_inits
                 : g_process_inits > 0 ? &g_process_inits
                                       : nullptr;
    if (!owned) return NOSV_ERR_INVALID_OPERATION;
    // The last shutdown joins every worker: a worker cannot join itself.
    if (g_nesting == 1)
        if (const ThreadContext* self = this_thread_context(); self && self->worker)
            return NOSV_ERR_INVALID_OPERATION;
    --*owned;
    if (--g_nesting > 0) return NOSV_SUCCESS;
    Runtime* rt = instance_.load(std::memory_order_acquire);
    rt->stop();
    instance_.store(nullptr, std::memory_order_release);
    delete rt;
    return NOSV_SUCCESS;
}

void Runtime::exit_without_shutdown() {
    // A thread inside init or shutdown (which may be joining workers while
    // another thread exits) is left to finish: waiting for it could hang
    // the exit, and a shutdown removes the name itself.
    std::unique_lock guard(init_mutex(), std::try_to_lock);
    if (!guard) return;
    if (Runtime* rt = instance_.load(std::memory_order_acquire)) rt->member_.leave_at_exit();
}

int Runtime::start(bool quiet) {
    config::ConfigResult cr = config::load_config(config_);
    for (auto& w : cr.warnings)
        warn(w);
    if (!cr.ok) {
        fail_reason(cr.error, quiet);
        return NOSV_ERR_INVALID_PARAMETER;
    }
    std::string why;
    if (int rc = member_.enter(config_, why); rc != NOSV_SUCCESS) {
        fail_reason(why, quiet);
        return rc;
    }
    // Workers show the mask of the thread that started coexec (the whole
    // machine, usually), not the one CPU they are pinned to.
    if (!scheduler::kernel_own_affinity(process_mask_))
        for (int id : member_.cpu_system_ids())
            CPU_SET(size_t(id), &process_mask_);
    set_affinity_compat(config_.affinity_compat);
    binding_.emplace(sched(), affinity_, config_.sched_batch);
    ready_.open();
    external_type_.label = "attached";
    external_type_.external = true;
    external_type_.magic = kTypeMagic;
    // A member always has a worker: one to run its tasks, and to receive
    // CPUs from other processes. Without a thread slot for it, the process
    // would wait forever for a CPU or a worker, so it does not enter.
    if (!workers_.spawn(/*warn=*/false)) {
        member_.leave();
        fail_reason("the shared segment has no free thread slot (all " +
                        std::to_string(kMaxThreads) + " are in use)",
                    quiet);
        return NOSV_ERR_OUT_OF_MEMORY;
    }
    preemption_.install();
    monitor_ = thread_starts_.launch([this] { monitor_main(); });
    // Not a member until the monitor is named: an execve() right after
    // nosv_init() would otherwise leave a slot that every look-up trusts
    // for as long as the process runs (MemberWatch::image_alive()).
    monitor_named_.wait(false, std::memory_order_acquire);
    return NOSV_SUCCESS;
}

void Runtime::monitor_main() {
    Segment& s = *segment();
    scheduler::Demand demand(s, proc());
    // While this thread runs, the process is the member that registered;
    // an execve() ends it (MemberWatch).
    sched().watch().monitor_started(proc(), ::gettid());
    monitor_named_.store(true, std::memory_order_release);
    monitor_named_.notify_all();
    while (!stopping()) {
        sched().procs().wait_monitor(proc(), kMonitorPeriodNs);
        if (stopping()) break;
        uint64_t now = now_ns();
        sched().watch().beat(proc(), now);
        preemption_.ask_sleeping_program_threads();
        bool want_cpu = demand.total() > 0;
        auto all_held = [&] { return s.header.unheld_cpus.load(std::memory_order_relaxed) == 0; };
        // One monitor per interval sweeps for dead members, elected without
        // the lock, and looks them up in /proc without it too: the lock is
        // taken only when one died. A dead member that holds CPUs we wait
        // for is looked for at every period.
        SharedScheduler::DeadMembers dead;
        if (sched().watch().claim_reap(now, MemberWatch::kReapIntervalNs))
            dead = sched().watch().find_dead(now, MemberWatch::kAliveStaleNs);
        else if (want_cpu && all_held())
            dead = sched().watch().dead_holders(proc(), now, MemberWatch::kAliveStaleNs);
        // Whoever passes a CPU to this process (a holder at its turn's end,
        // a preempted holder, a CPU going free) grants it to a pool thread,
        // unless the work is a lone task waiting on its own thread. Work that
        // lives on its threads (a preempted task, a waitfor that ended) is
        // queued without a submit, which is where a pool thread is otherwise
        // made sure of: without one, every grant would pass this process
        // over, and a holder spinning for its data would keep the CPU.
        if (want_cpu) workers_.ensure_receiver();
        if (want_cpu && all_held()) {
            preemption_.ask_overdue_holders();
            binding_->take_long_kept(now);
        }
        // Work that no submit placed (a preempted task, one queued by the
        // scheduler) takes a parked CPU it may use here, at the latest.
        const bool parked = want_cpu && s.header.parked_cpus.load(std::memory_order_relaxed) > 0;
        if (dead.empty() && (!want_cpu || all_held()) && !parked) continue;
        WakeList wakes;
        {
            scheduler::SchedulerLock lock(sched(), wakes);
            sched().reap(dead, wakes);
            sched().policy().distribute_free(wakes);
            if (want_cpu) sched().policy().claim_unheld_cpu(proc(), {}, wakes);
            if (parked) sched().policy().take_parked_for(proc(), wakes);
        }
        wakes.flush(s);
    }
    sched().watch().monitor_ends(proc());
}

void Runtime::stop() {
    if (ThreadContext* self = this_thread_context(); self && self->attach.attached)
        detach(*self, true);
    stopping_.store(true, std::memory_order_release);
    tasks_.stop_timers(); // no timer resumes a task from here on
    preemption_.uninstall();
    // Nobody may grant our pool threads a CPU any more.
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched(), wakes);
        sched().procs().close_pool(proc());
    }
    wakes.flush(*segment());
    sched().procs().wake_monitor(proc());
    monitor_.join();
    workers_.stop_all();
    member_.leave();
    // Threads still attached now (the program never detached them) show
    // their kernel affinity from here on.
    affinity_.clear();
}

Runtime::~Runtime() = default;

} // namespace coexec::core
