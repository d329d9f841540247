// How a thread leaves its CPU and gets one (CpuHandover).
#include "core/cpu/cpu_handover.hpp"

#include "core/cpu/worker_pool.hpp"
#include "core/tasks/ready_work.hpp"

#include "shm/clock.hpp"
#include "shm/futex.hpp"

#include <coexec/ext.h>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cassert>
#include <utility>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::Placement;
using scheduler::Policy;
using scheduler::WakeList;

namespace {
constexpr uint64_t kWaitSliceNs = 50'000'000; // bounded sleeps, so stop is seen
// A wait after a hand-off yields this long before it sleeps. It counts as a
// hit for HandBackGuess when the CPU came back without a sleep and within
// kHandBackNs: a waiter whose taker runs on is picked again late, and may
// find its grant before it ever looked past the window.
constexpr uint64_t kWaitYieldNs = 20'000;
constexpr uint64_t kHandBackNs = 200'000;
} // namespace

bool CpuHandover::holds(const ThreadContext& self, int32_t cpu) const {
    return cpu != kNone && sched().cpus().holds(self.slot, cpu);
}

int32_t CpuHandover::wait_for_cpu(ThreadContext& self) {
    const ThreadSlot& th = segment()->threads[self.slot];
    // After we gave our CPU away while we wait (to a teammate in hand_to(),
    // or to another process in leave_cpu()), we may yield for a while before
    // we sleep (HandBackGuess says when that pays): when the CPU comes back
    // meanwhile, the switch costs one sched_yield instead of the granter's
    // futex_wake and our futex_wait (ThreadWord tells the granter that we do
    // not sleep). Under SCHED_BATCH (CpuBinding::adopt) the thread we woke
    // runs once we yield. A grant of another CPU re-binds a thread whose
    // affinity coexec sets or pins (CpuBinding::bind_to), which moves it
    // there at once; one that keeps a wider mask of its own is pulled by
    // that CPU when it goes idle.
    const bool yields =
        std::exchange(self.held.handed_off, false) && self.held.hand_back.worth_yielding();
    const uint64_t start = yields ? now_ns() : 0;
    bool slept = !yields;
    bool waited = false; // on the word: only a wake-up can come late (CpuBinding::woken)
    for (;;) {
        // The word first: a grant published after this load moves it, and
        // the wait below then returns at once.
        uint32_t seq = th.word.load(std::memory_order_acquire);
        if (int32_t cpu = sched().cpus().take_grant(self.slot); cpu != kNone) {
            assert(holds(self, cpu));
            if (yields) self.held.hand_back.learn(!slept && now_ns() - start < kHandBackNs);
            ready_.withdraw_if_granted(self);
            binding_->bind_to(self, cpu);
            if (waited) binding_->woken(self, cpu);
            return cpu;
        }
        if (stopping()) return kNone;
        if (!slept && now_ns() - start < kWaitYieldNs) {
            // The raw system call: the OpenMP and TBB adapters interpose
            // sched_yield() as a spin of their own, and mostly return from
            // it without yielding, which would turn this window into a busy
            // spin that keeps the taker off the CPU.
            ::syscall(SYS_sched_yield);
            continue;
        }
        slept = true; // the window ended: we sleep from now on
        sched().procs().wait_word(self.slot, seq, kWaitSliceNs);
        waited = true;
    }
}

CpuHandover::AfterLeaving CpuHandover::leave_cpu(ThreadContext& self, LeaveReason why,
                                                 WakeList& wakes, nosv_task** next) {
    const bool can_run = why == LeaveReason::Done;
    if (next) *next = nullptr;
    const int32_t c = self.held.cpu;
    assert(holds(self, c));
    if (!can_run) ready_.return_batch(self); // a blocking thread must not sit on work
    if (nosv_task* t = self.work.take_immediate()) {
        ready_.count_successor(c, -1);
        return hand_to(self, t, can_run, wakes, next);
    }
    if (sched().policy().foreign_work(proc(), c)) {
        Policy::Next decision;
        {
            scheduler::SchedulerLock lock(sched(), wakes);
            decision = sched().policy().decide(c, proc(), why == LeaveReason::Yield, wakes);
        }
        if (decision == Policy::Next::Other) {
            ready_.return_batch(self);
            self.held.cpu = kNone;
            self.held.handed_off = !can_run; // as in hand_to()
            return AfterLeaving::Gone;
        }
    }
    if (nosv_task* t = can_run ? ready_.next_for_worker(self) : ready_.pop_own(c))
        return hand_to(self, t, can_run, wakes, next);
    // A yielding task is the last of its process's work for this CPU.
    if (why == LeaveReason::Yield) return AfterLeaving::Continue;
    return go_unheld(self, can_run, wakes);
}

CpuHandover::AfterLeaving CpuHandover::hand_to(ThreadContext& self, nosv_task* t, bool can_run,
                                               WakeList& wakes, nosv_task** next) {
    const int32_t c = self.held.cpu;
    assert(holds(self, c));
    // Our own task is made ready only after we leave (step_off_cpu).
    assert(t->thread != &self);
    if (t->thread) {
        // A started task lives on its thread: hand the CPU over directly.
        // A teammate that takes our CPU while we wait often hands it back
        // within microseconds (we wait at the barrier it is about to
        // reach): wait_for_cpu() may yield before it sleeps.
        self.held.cpu = kNone;
        self.held.handed_off = !can_run;
        sched().cpus().handoff_within_process(c, t->thread->slot, wakes);
        return AfterLeaving::Gone;
    }
    if (can_run) {
        *next = t;
        return AfterLeaving::Continue;
    }
    // A fresh task while we block: a pool worker of ours runs it.
    ThreadContext* worker = nullptr;
    for (;;) {
        {
            scheduler::SchedulerLock lock(sched(), wakes);
            if (int32_t w = sched().procs().take_pool_thread(proc()); w != kNone)
                worker = workers_.worker_at(w);
        }
        if (worker || !workers_.spawn()) break;
    }
    if (!worker) {
        // No thread can be had (segment full): put the task back.
        ready_.put_back(t);
        return go_unheld(self, false, wakes);
    }
    assert(!worker->held.assigned); // a pool worker has run what it was handed
    worker->held.assigned = t;
    self.held.cpu = kNone;
    // The release store of the grant publishes `assigned` to the worker.
    sched().cpus().handoff_within_process(c, worker->slot, wakes);
    return AfterLeaving::Gone;
}

CpuHandover::AfterLeaving CpuHandover::go_unheld(ThreadContext& self, bool can_run,
                                                 WakeList& wakes) {
    const int32_t c = self.held.cpu;
    assert(holds(self, c));
    int32_t taker;
    {
        scheduler::SchedulerLock lock(sched(), wakes);
        taker = can_run ? sched().policy().hold_idle(c, /*sleeping=*/false, wakes)
                        : sched().policy().release(c, wakes);
    }
    if (taker == self.slot) {
        // Our own work arrived: we keep the CPU (and drop its grant).
        sched().cpus().take_grant(self.slot);
        return AfterLeaving::Continue;
    }
    if (!can_run) {
        self.held.cpu = kNone;
        return AfterLeaving::Gone;
    }
    if (taker != kNone) {
        self.held.cpu = kNone;
        return AfterLeaving::Pooled; // another process took it and evicted us
    }
    return AfterLeaving::Holding;
}

bool CpuHandover::step_off_cpu(ThreadContext& self, LeaveReason why, WakeList& wakes) {
    assert(why != LeaveReason::Done);
    workers_.blocked(self);
    if (leave_cpu(self, why, wakes) == AfterLeaving::Continue) {
        workers_.unblocked(self);
        return false;
    }
    assert(!sched().cpus().runs_elsewhere(self.slot, kNone));
    return true;
}

void CpuHandover::step_on_cpu(ThreadContext& self, WakeList& wakes) {
    wakes.flush(*segment(), self.slot);
    if (wait_for_cpu(self) == kNone) self.held.cpu = kNone;
    workers_.unblocked(self);
}

bool CpuHandover::park(ThreadContext& self) {
    const int32_t c = self.held.cpu;
    // A successor or a batch of ours must run: the usual way hands them the CPU.
    if (c == kNone || self.work.immediate || self.has_batch()) return false;
    const auto& policy = sched().policy();
    auto wanted = [&] { return policy.has_work(proc(), c) || policy.foreign_work(proc(), c); };
    if (wanted()) return false;
    self.park.word = sched().cpus().park(c, self.slot);
    // The Dekker pair of a submitter's kick() (CpuTable::park()): work
    // submitted from here on takes the CPU from the park itself.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (wanted() && sched().cpus().unpark(c, self.slot, self.park.word)) return false;
    // Parked (or already taken by work that came meanwhile: unpark() says).
    workers_.blocked(self);
    return true;
}

void CpuHandover::sleep_parked(ThreadContext& self) {
    const ThreadSlot& th = segment()->threads[self.slot];
    self.park.slept = false;
    for (;;) {
        // The word first: a resume after this load moves it (ThreadWord).
        const uint32_t seq = th.word.load(std::memory_order_acquire);
        if (self.park.state.load(std::memory_order_acquire) == ThreadContext::Park::Resumed ||
            stopping())
            return;
        sched().procs().wait_word(self.slot, seq, kWaitSliceNs);
        self.park.slept = true;
    }
}

bool CpuHandover::unpark(ThreadContext& self) {
    if (!sched().end_park(self.slot, self.held.cpu, self.park.word)) {
        // Still blocked (park() counted it so): step_on_cpu() counts the
        // worker unblocked once it has a CPU again.
        self.held.lost();
        self.park.slept = false;
        return false;
    }
    workers_.unblocked(self);
    // Woken on our own CPU: a late wake-up there waited behind a program
    // outside coexec, as after a grant (CpuBinding::woken()).
    if (std::exchange(self.park.slept, false)) {
        const uint64_t resumed = self.park.resumed_ns.load(std::memory_order_relaxed);
        const uint64_t now = now_ns();
        binding_->woken_after(self, now > resumed ? now - resumed : 0);
    }
    return true;
}

int CpuHandover::cpu_wanted(const ThreadContext& self) const {
    if (self.held.cpu == kNone) return 0;
    // Foreign work is looked for either way: a caller may keep its CPU from
    // its own process's work a little longer, never from another process's.
    const int here = sched().policy().has_work(proc(), self.held.cpu) ? COEXEC_CPU_WANTED_HERE : 0;
    return here |
           (sched().policy().foreign_work(proc(), self.held.cpu) ? COEXEC_CPU_WANTED_ELSEWHERE : 0);
}

int CpuHandover::spare_cpus() const {
    return sched().policy().spare_cpus();
}

uint64_t CpuHandover::quantum_ns() const {
    return sched().quantum_ns();
}

int CpuHandover::block_enter(ThreadContext& self) {
    if (self.held.cpu == kNone) return NOSV_ERR_INVALID_OPERATION;
    step_out(self);
    // Outside coexec a mask the thread sets itself goes to the kernel
    // (block_exit then forgets the binding). Until it does, the thread stays
    // bound to this CPU, so a grant of the same CPU needs no system call,
    // and the CPU is the one it asks for first when it comes back.
    binding_->go_outside(self);
    WakeList wakes;
    leave_cpu(self, LeaveReason::Block, wakes);
    wakes.flush(*segment(), self.slot);
    self.held.cpu = kNone;
    return NOSV_SUCCESS;
}

int CpuHandover::lend_cpu(ThreadContext& self) {
    if (self.held.cpu == kNone) return NOSV_ERR_INVALID_OPERATION;
    // Work already waiting for this CPU (or a successor of ours) gets it now.
    if (self.work.immediate || self.has_batch() || cpu_wanted(self)) return block_enter(self);
    step_out(self);
    binding_->lend(self);
    return NOSV_SUCCESS;
}

int CpuHandover::keep_cpu(ThreadContext& self) {
    if (self.held.cpu == kNone) return NOSV_ERR_INVALID_OPERATION;
    // A successor or a batch of ours must not wait behind code of the user.
    if (self.work.immediate || self.has_batch()) return block_enter(self);
    step_out(self);
    binding_->keep(self);
    return NOSV_SUCCESS;
}

int CpuHandover::lend_kept_cpu(ThreadContext& self) {
    if (self.held.cpu != kNone || self.work.current->status.state() != TaskState::Blocked)
        return NOSV_ERR_INVALID_OPERATION;
    // Lent, blocked, or a keep already taken: nothing is held back.
    if (self.binding.kept_cpu != kNone) binding_->lend_kept(self);
    return NOSV_SUCCESS;
}

void CpuHandover::step_out(ThreadContext& self) {
    self.work.current->status.relabel(TaskState::Blocked);
    workers_.blocked(self);
}

bool CpuHandover::reclaim_cpu(ThreadContext& self) {
    nosv_task* t = self.work.current;
    if (t->status.state() != TaskState::Blocked) return false;
    // Before the reclaim, whose binding the forget would undo; a thread
    // whose reclaim fails goes on to block_exit() and no affinity call in
    // between.
    binding_->come_back(self);
    // The cheap way back: no hand-off, no wake-up. A failed reclaim leaves
    // nothing to reclaim, so block_exit() then goes the slow way.
    if (!binding_->reclaim(self)) return false;
    workers_.unblocked(self);
    t->status.relabel(TaskState::Running);
    return true;
}

int CpuHandover::block_exit(ThreadContext& self) {
    nosv_task* t = self.work.current;
    if (t->status.state() != TaskState::Blocked) return NOSV_ERR_INVALID_OPERATION;
    if (reclaim_cpu(self)) return NOSV_SUCCESS;
    if (!t->status.transition(TaskState::Blocked, TaskState::Ready))
        return NOSV_ERR_INVALID_OPERATION;
    ready_.make_ready(t, true);
    if (wait_for_cpu(self) == kNone) self.held.cpu = kNone;
    workers_.unblocked(self);
    t->status.relabel(TaskState::Running);
    return NOSV_SUCCESS;
}

} // namespace coexec::core
