// The preemption safety net. coexec schedules cooperatively: a thread gives
// its CPU away only at a scheduling point. A thread that spins in user code
// (`while (!flag);`) until a thread of its own process runs would keep its
// CPU forever; two such processes sharing the CPUs deadlock, where the
// kernel would have time-shared them. So a process that waits for a CPU
// which another process has held past its quantum plus
// SegmentConfig::preempt_after_ns, without reaching a scheduling point,
// signals the holder; the holder's handler gives the CPU to the next
// process in round-robin order and waits to get that same CPU back.
//
// Only other processes take the CPU, and the task resumes on the same CPU,
// so a task never sees another task of its own process take its place (its
// per-CPU data stays its own), exactly as if the kernel had preempted it.
#include "runtime.hpp"

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
constexpr auto rlx = std::memory_order_relaxed;
// Ignored by default: a process that never installed the handler (or has
// just left) is not hurt by a late signal.
constexpr int kPreemptSignal = SIGURG;
} // namespace

int& runtime_depth() {
    // Initial-exec: the handler reads it, and must not allocate TLS lazily.
    static thread_local int depth __attribute__((tls_model("initial-exec"))) = 0;
    return depth;
}

bool Runtime::install_preemption() {
    if (segment()->header.config.preempt_after_ns == 0) return false;
    struct sigaction old {};
    if (sigaction(kPreemptSignal, nullptr, &old) != 0) return false;
    const bool ours = !(old.sa_flags & SA_SIGINFO) && old.sa_handler == &on_preempt_signal;
    if (!ours) {
        // A handler of the program's own is left alone: no preemption then.
        if ((old.sa_flags & SA_SIGINFO) || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN))
            return false;
        struct sigaction sa {};
        sa.sa_handler = &on_preempt_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(kPreemptSignal, &sa, nullptr) != 0) return false;
    }
    segment()->procs[proc_].preemptible.store(1, rlx);
    return true;
}

void Runtime::on_preempt_signal(int) {
    const int saved_errno = errno;
    // Inside coexec the thread may hold the segment lock or be halfway
    // through changing its own state: it reaches a scheduling point soon
    // anyway. Only user code (depth 0) gives way here.
    Runtime* rt = get();
    ThreadContext* self = rt ? this_thread_context() : nullptr;
    if (self && runtime_depth() == 0) {
        RuntimeSection section;
        rt->give_way(*self);
    }
    errno = saved_errno;
}

void Runtime::give_way(ThreadContext& self) {
    // Async-signal context: no allocation and no lock but the segment's
    // (which a depth-0 thread cannot hold). The task stays Running: to a
    // resume that races with this, it is a running task.
    const int32_t c = self.cpu;
    nosv_task* t = self.current;
    if (c == kNone || !t || self.immediate || !holds(self, c)) return;
    Segment& s = *segment();
    WakeList wakes;
    bool gave = false;
    {
        auto lock = sched_->lock(wakes);
        gave = sched_->give_way(c, proc_, wakes);
        if (gave) {
            // Queued under the lock that granted the CPU away: whoever
            // leaves it next decides with this demand in view.
            queue_->push_preempted(t, c);
            s.threads[self.slot].state.store(ThreadState::Waiting, rlx);
            self.cpu = kNone;
        }
    }
    wakes.flush(s);
    if (!gave) return;
    s.procs[proc_].preemptions.fetch_add(1, rlx);
    if (self.worker) unblocked_workers_.fetch_sub(1, rlx);
    if (wait_for_cpu(self) == kNone) self.cpu = kNone;
    if (self.worker) unblocked_workers_.fetch_add(1, rlx);
}

void Runtime::ask_overdue_holders() {
    Segment& s = *segment();
    const uint64_t now = now_ns();
    for (int32_t c = 0; c < s.header.cpu_count; ++c) {
        int32_t t = sched_->overdue_holder(c, proc_, now);
        if (t == kNone) continue;
        const ThreadSlot& th = s.threads[t];
        pid_t pid = s.procs[th.proc].pid;
        // A holder asleep in a system call is not spinning: a signal would
        // only cut its sleep short (sleep() does not resume).
        if (th.tid <= 0 || !thread_on_cpu(pid, th.tid)) continue;
        ::syscall(SYS_tgkill, pid, th.tid, kPreemptSignal);
    }
}

} // namespace coexec::core
