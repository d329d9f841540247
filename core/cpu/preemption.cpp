#include "core/cpu/preemption.hpp"

#include "core/cpu/cpu_handover.hpp"
#include "core/cpu/worker_pool.hpp"
#include "core/interpose/program_threads.hpp"
#include "core/runtime/runtime.hpp"
#include "core/tasks/ready_work.hpp"

#include "shm/clock.hpp"
#include "shm/liveness.hpp"

#include <cerrno>
#include <csignal>
#include <sys/syscall.h>
#include <unistd.h>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::WakeList;

namespace {
// Ignored by default: a process that never installed the handler (or has
// just left) is not hurt by a late signal.
constexpr int kPreemptSignal = SIGURG;
} // namespace

namespace {
// Inside fork() (Preemption::fork_begins()). Initial-exec: the handler reads it.
thread_local bool t_forking __attribute__((tls_model("initial-exec"))) = false;
} // namespace

void Preemption::fork_begins() {
    t_forking = true;
    // The handler runs on this thread: ordered for it, not for others.
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

void Preemption::fork_ends() {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_forking = false;
}

int& runtime_depth() {
    // Initial-exec: the handler reads it, and must not allocate TLS lazily.
    static thread_local int depth __attribute__((tls_model("initial-exec"))) = 0;
    return depth;
}

bool Preemption::install() {
    if (segment()->header.config.preempt_after_ns == 0) return false;
    struct sigaction old {};
    if (sigaction(kPreemptSignal, nullptr, &old) != 0) return false;
    const bool ours = !(old.sa_flags & SA_SIGINFO) && old.sa_handler == &on_signal;
    if (!ours) {
        // A handler of the program's own is left alone: no preemption then.
        if ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN))
            return false;
        struct sigaction sa {};
        sa.sa_handler = &on_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(kPreemptSignal, &sa, nullptr) != 0) return false;
    }
    sched().procs().set_preemptible(proc(), true);
    installed_.store(true, std::memory_order_relaxed);
    return true;
}

void Preemption::uninstall() {
    installed_.store(false, std::memory_order_relaxed);
    sched().procs().set_preemptible(proc(), false);
}

void Preemption::on_signal(int) {
    const int saved_errno = errno;
    // Inside coexec the thread may hold the segment lock or be halfway
    // through changing its own state: it reaches a scheduling point soon
    // anyway. Only user code (depth 0) gives way here.
    Runtime* rt = Runtime::get();
    ThreadContext* self = rt ? this_thread_context() : nullptr;
    if (self && runtime_depth() == 0 && !t_forking) {
        RuntimeSection section;
        // The monitor found the program thread asleep on its CPU: lend it
        // and return to the sleep (program_threads.hpp).
        Preemption& p = rt->preemption();
        if (self->program &&
            p.program_[size_t(self->slot)].lend_asked.exchange(false, std::memory_order_acquire))
            p.lend_while_asleep(*self);
        else
            p.give_way(*self);
    }
    errno = saved_errno;
}

void Preemption::lend_while_asleep(ThreadContext& self) {
    nosv_task* t = self.work.current;
    if (self.held.cpu == kNone || !t || self.work.immediate || self.has_batch() ||
        t->par.active() || !handover_.holds(self, self.held.cpu))
        return;
    // CpuHandover::lend_cpu() without its hand-off to waiting work, which may
    // start a thread: async-signal context allows only the segment's lock.
    handover_.step_out(self);
    binding_->lend(self);
    program_thread_lent_asleep();
}

void Preemption::give_way(ThreadContext& self) {
    // Async-signal context: no allocation and no lock but the segment's
    // (which a depth-0 thread cannot hold). The task stays Running: to a
    // resume that races with this, it is a running task.
    const int32_t c = self.held.cpu;
    nosv_task* t = self.work.current;
    // A parallel execution has no thread of its own to resume on: it runs
    // to its end (other processes get the CPU between executions).
    if (c == kNone || !t || self.work.immediate || t->par.active() || !handover_.holds(self, c))
        return;
    auto& sched = member_.scheduler();
    WakeList wakes;
    bool gave = false;
    {
        scheduler::SchedulerLock lock(sched, wakes);
        // Queued under the lock that granted the CPU away: whoever leaves it
        // next decides with this demand in view.
        if (sched.policy().give_way(c, proc(), self.slot, wakes)) {
            gave = true;
            ready_.push_preempted(t, c);
        } else if (self.program && sched.policy().give_way_within(c, proc(), self.slot, wakes)) {
            // A program thread also gives way to its own process's work,
            // which it may be spinning for: behind that work, on any CPU.
            gave = true;
            ready_.push_unplaced(t);
        }
        if (gave) self.held.lost();
    }
    wakes.flush(sched.segment());
    if (!gave) return;
    sched.procs().count_preemption(proc());
    workers_.blocked(self);
    if (handover_.wait_for_cpu(self) == kNone) self.held.lost();
    workers_.unblocked(self);
}

void Preemption::ask_overdue_holders() {
    Segment& s = *segment();
    const uint64_t now = now_ns();
    for (int32_t c = 0; c < s.header.cpu_count; ++c) {
        int32_t t = sched().policy().overdue_holder(c, proc(), now);
        if (t == kNone) continue;
        const ThreadSlot& th = s.threads[t];
        pid_t pid = s.procs[th.proc].pid;
        // A holder asleep in a system call is not spinning: a signal would
        // only cut its sleep short (sleep() does not resume).
        const pid_t tid = th.tid.load(std::memory_order_relaxed);
        if (tid <= 0 || !thread_on_cpu(pid, tid)) continue;
        ::syscall(SYS_tgkill, pid, tid, kPreemptSignal);
    }
    ask_overdue_program_threads(now);
}

void Preemption::ask_sleeping_program_threads() {
    // Without our handler the signal would reach the program's, or nobody.
    if (!installed_.load(std::memory_order_relaxed)) return;
    Segment& s = *segment();
    const auto cpus = size_t(s.header.cpu_count);
    if (programs_.load(std::memory_order_relaxed) == 0) {
        asleep_seen_.assign(cpus, Sighting{});
        return;
    }
    asleep_seen_.resize(cpus);
    // Bounded by the node's CPUs, outside any lock, in the monitor only;
    // the /proc look is made for CPUs a program thread holds.
    for (size_t c = 0; c < cpus; ++c) {
        const CpuSlot& cpu = s.cpus[c];
        Sighting& seen = asleep_seen_[c];
        const int32_t t = cpu.owner_thread.load(std::memory_order_relaxed);
        if (cpu.owner_proc.load(std::memory_order_relaxed) != proc() ||
            cpu.state.load(std::memory_order_relaxed) != CpuState::Running || !is_program(t)) {
            seen = {};
            continue;
        }
        const pid_t tid = s.threads[t].tid.load(std::memory_order_relaxed);
        const uint64_t since = cpu.since_ns.load(std::memory_order_relaxed);
        const int64_t ran = tid > 0 ? thread_run_ns(::getpid(), tid) : -1;
        const Sighting now{t, since, ran};
        // Asleep for the whole period: the same grant to the same thread, no
        // run time since the last look, and not running now.
        const bool asleep = ran >= 0 && seen.thread == t && seen.since_ns == since &&
                            seen.run_ns == ran && !thread_on_cpu(::getpid(), tid);
        seen = asleep ? Sighting{} : now;
        if (!asleep) continue;
        program_[size_t(t)].lend_asked.store(true, std::memory_order_release);
        ::syscall(SYS_tgkill, ::getpid(), tid, kPreemptSignal);
    }
}

void Preemption::ask_overdue_program_threads(uint64_t now) {
    if (programs_.load(std::memory_order_relaxed) == 0 ||
        !installed_.load(std::memory_order_relaxed))
        return;
    Segment& s = *segment();
    for (int32_t c = 0; c < s.header.cpu_count; ++c) {
        const int32_t t = s.cpus[c].owner_thread.load(std::memory_order_relaxed);
        if (!is_program(t) || !sched().policy().overdue_within(c, proc(), t, now)) continue;
        // Asleep in a system call it holds no CPU in practice; see above.
        const pid_t tid = s.threads[t].tid.load(std::memory_order_relaxed);
        if (tid > 0 && thread_on_cpu(::getpid(), tid))
            ::syscall(SYS_tgkill, ::getpid(), tid, kPreemptSignal);
    }
}

void Preemption::host_program_thread(ThreadContext& self) {
    if (self.program) return;
    self.program = true;
    program_[size_t(self.slot)].lend_asked.store(false, std::memory_order_relaxed);
    program_[size_t(self.slot)].hosted.store(true, std::memory_order_relaxed);
    programs_.fetch_add(1, std::memory_order_relaxed);
}

void Preemption::unhost_program_thread(ThreadContext& self) {
    if (!self.program) return;
    program_[size_t(self.slot)].hosted.store(false, std::memory_order_relaxed);
    program_[size_t(self.slot)].lend_asked.store(false, std::memory_order_relaxed);
    programs_.fetch_sub(1, std::memory_order_relaxed);
    self.program = false;
}

} // namespace coexec::core
