// Scheduling points: how a thread leaves its CPU, and how it gets one.
#include "core/runtime/runtime.hpp"

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
constexpr auto rlx = std::memory_order_relaxed;
constexpr uint64_t kWaitSliceNs = 50'000'000; // bounded sleeps, so stop is seen
// A wait after a hand-off yields this long before it sleeps. It counts as a
// hit for HandBackGuess when the CPU came back without a sleep and within
// kHandBackNs: a waiter whose taker runs on is picked again late, and may
// find its grant before it ever looked past the window.
constexpr uint64_t kWaitYieldNs = 20'000;
constexpr uint64_t kHandBackNs = 200'000;
} // namespace

scheduler::Placement Runtime::placement_of(const nosv_affinity_t& a) const {
    if (a.level == NOSV_AFFINITY_LEVEL_NONE) return {};
    Placement p;
    p.strict = a.type == NOSV_AFFINITY_TYPE_STRICT;
    if (a.level == NOSV_AFFINITY_LEVEL_CPU) {
        int c = logical_cpu(int(a.index));
        if (c >= 0) p = {Placement::Kind::Cpu, c, p.strict};
    } else if (a.level == NOSV_AFFINITY_LEVEL_NUMA) {
        int n = logical_numa(int(a.index));
        if (n >= 0) p = {Placement::Kind::Numa, n, p.strict};
    }
    if (p.kind == Placement::Kind::Any) p.strict = false;
    return p;
}

nosv_task* Runtime::pop_own(int cpu) {
    if (segment()->procs[proc()].ready_total.load(rlx) <= 0) return nullptr;
    std::lock_guard guard(queue_lock_);
    for (;;) {
        nosv_task* t = queue_->pop(cpu, numa_of_cpu(cpu));
        if (!t || claimed_by_us(t)) return t;
    }
}

bool Runtime::claimed_by_us(nosv_task* t) {
    // Under queue_lock_, so the task's thread cannot be taking it out
    // meanwhile (withdraw_if_granted()).
    return !t->thread || !sched().procs().close_receiver(t->thread->slot);
}

void Runtime::queue_own_task(nosv_task* task, const Placement& where, bool front) {
    queue_->push(task, where, front);
    // Still under queue_lock_: the task cannot be popped, run and freed yet.
    if (where.kind == Placement::Kind::Numa) return; // the pool thread sorts these
    // Not the only item: claim_receiver() would pass the thread over (queue
    // order); spare the stores to the segment.
    if (segment()->procs[proc()].ready_total.load(rlx) != 1) return;
    sched().procs().open_receiver(proc(), task->thread->slot,
                                  where.kind == Placement::Kind::Cpu ? where.index : kNone);
}

void Runtime::withdraw_if_granted(ThreadContext& self) {
    // Not claimed: the grant came from a popper, or a popper took the task
    // after a direct grant and closed the word (receive_claimed() orders us
    // after that popper's reads).
    if (!self.current || !sched().procs().receive_claimed(self.slot)) return;
    std::lock_guard guard(queue_lock_);
    // Under queue_lock_: a popper that took the task first closed the word.
    if (sched().procs().close_receiver(self.slot)) {
        [[maybe_unused]] const bool removed =
            queue_->remove(self.current, placement_of(self.current->affinity));
        assert(removed);
    }
}

bool Runtime::holds(const ThreadContext& self, int32_t cpu) const {
    return cpu != kNone && sched().cpus().holds(self.slot, cpu);
}

nosv_task* Runtime::next_for_worker(ThreadContext& self) {
    // A task handed over with the CPU comes first, whichever path the grant
    // reached us on (a pool wait, or an idle hold we were just evicted from).
    if (self.assigned) return std::exchange(self.assigned, nullptr);
    if (self.has_batch()) return self.batch[self.batch_next++];
    if (segment()->procs[proc()].ready_total.load(rlx) <= 0) return nullptr;
    std::lock_guard guard(queue_lock_);
    size_t n;
    do { // a task on its own thread comes alone (pop_batch)
        n = queue_->pop_batch(self.cpu, numa_of_cpu(self.cpu), self.batch, ThreadContext::kBatch);
    } while (n == 1 && !claimed_by_us(self.batch[0]));
    self.batch_next = n ? 1 : 0;
    self.batch_end = n;
    return n ? self.batch[0] : nullptr;
}

void Runtime::return_batch(ThreadContext& self) {
    if (!self.has_batch()) return;
    {
        std::lock_guard guard(queue_lock_);
        queue_->unpop(self.batch + self.batch_next, self.batch_end - self.batch_next);
    }
    self.batch_next = self.batch_end = 0;
}

void Runtime::make_ready(nosv_task* task, bool front) {
    // A task on its own thread becomes ready only once the thread left its CPU.
    assert(!task->thread || !sched().cpus().runs_elsewhere(task->thread->slot, kNone));
    Placement where = placement_of(task->affinity);
    // Another process hands us a CPU through a pool thread, even for a task
    // that lives on its own thread: keep one.
    workers_.ensure_receiver();
    // A task on its own thread takes an unheld CPU directly, decided before
    // it is queued: once queued it may run, end and be freed at any time.
    if (task->thread && give_directly(task, where, front)) return;
    if (!task->thread && !front && where.kind == Placement::Kind::Any) {
        queue_->push_unplaced(task); // lock-free: workers popping never delay a submit
    } else {
        std::lock_guard guard(queue_lock_);
        if (task->thread)
            queue_own_task(task, where, front);
        else
            queue_->push(task, where, front);
    }
    kick(where);
}

bool Runtime::give_directly(nosv_task* task, const Placement& where, bool front) {
    Segment& s = *segment();
    if (s.header.unheld_cpus.load(std::memory_order_seq_cst) == 0) return false;
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched(), wakes);
        if (sched().policy().grant_unheld_cpu(task->thread->slot, where, wakes) == kNone) {
            // Queued under the segment lock: a CPU going idle (which takes
            // that lock) sees this work.
            std::lock_guard guard(queue_lock_);
            queue_own_task(task, where, front);
        }
    }
    ThreadContext* self = this_thread_context();
    wakes.flush(s, self ? self->slot : kNone);
    return true;
}

void Runtime::kick(const Placement& where) {
    Segment& s = *segment();
    // seq_cst: our ready-counter increment (in push) comes before this load;
    // a CPU that becomes Free or Sleeping counts itself here before it
    // re-checks the ready counters (set_state, then offer_released()). One
    // of us sees the other. Spinning (Idle) holders are not counted: they
    // poll the ready counters and claim the work themselves, so a submit
    // that finds only spinners takes no lock and wakes nobody.
    if (s.header.wakeable_cpus.load(std::memory_order_seq_cst) == 0) return;
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched(), wakes);
        sched().policy().claim_unheld_cpu(proc(), where, wakes);
    }
    wakes.flush(s);
}

int32_t Runtime::wait_for_cpu(ThreadContext& self) {
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
    const bool yields = std::exchange(self.handed_off, false) && self.hand_back.worth_yielding();
    const uint64_t start = yields ? now_ns() : 0;
    bool slept = !yields;
    bool waited = false; // on the word: only a wake-up can come late (CpuBinding::woken)
    for (;;) {
        // The word first: a grant published after this load moves it, and
        // the wait below then returns at once.
        uint32_t seq = th.word.load(std::memory_order_acquire);
        if (int32_t cpu = sched().cpus().take_grant(self.slot); cpu != kNone) {
            assert(holds(self, cpu));
            if (yields) self.hand_back.learn(!slept && now_ns() - start < kHandBackNs);
            withdraw_if_granted(self);
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

Runtime::AfterLeaving Runtime::leave_cpu(ThreadContext& self, LeaveReason why, WakeList& wakes,
                                         nosv_task** next) {
    const bool can_run = why == LeaveReason::Done;
    if (next) *next = nullptr;
    const int32_t c = self.cpu;
    assert(holds(self, c));
    if (!can_run) return_batch(self); // a blocking thread must not sit on work
    if (nosv_task* t = self.immediate) {
        self.immediate = nullptr;
        {
            std::lock_guard guard(queue_lock_);
            queue_->count_external({Placement::Kind::Cpu, c, true}, -1);
        }
        return hand_to(self, t, can_run, wakes, next);
    }
    if (sched().policy().foreign_work(proc(), c)) {
        Policy::Next decision;
        {
            scheduler::SchedulerLock lock(sched(), wakes);
            decision = sched().policy().decide(c, proc(), why == LeaveReason::Yield, wakes);
        }
        if (decision == Policy::Next::Other) {
            return_batch(self);
            self.cpu = kNone;
            self.handed_off = !can_run; // as in hand_to()
            return AfterLeaving::Gone;
        }
    }
    if (nosv_task* t = can_run ? next_for_worker(self) : pop_own(c))
        return hand_to(self, t, can_run, wakes, next);
    // A yielding task is the last of its process's work for this CPU.
    if (why == LeaveReason::Yield) return AfterLeaving::Continue;
    return go_unheld(self, can_run, wakes);
}

Runtime::AfterLeaving Runtime::hand_to(ThreadContext& self, nosv_task* t, bool can_run,
                                       WakeList& wakes, nosv_task** next) {
    const int32_t c = self.cpu;
    assert(holds(self, c));
    // Our own task is made ready only after we leave (step_off_cpu).
    assert(t->thread != &self);
    if (t->thread) {
        // A started task lives on its thread: hand the CPU over directly.
        // A teammate that takes our CPU while we wait often hands it back
        // within microseconds (we wait at the barrier it is about to
        // reach): wait_for_cpu() may yield before it sleeps.
        self.cpu = kNone;
        self.handed_off = !can_run;
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
        std::lock_guard guard(queue_lock_);
        queue_->push(t, placement_of(t->affinity), true);
        return go_unheld(self, false, wakes);
    }
    assert(!worker->assigned); // a pool worker has run what it was handed
    worker->assigned = t;
    self.cpu = kNone;
    // The release store of the grant publishes `assigned` to the worker.
    sched().cpus().handoff_within_process(c, worker->slot, wakes);
    return AfterLeaving::Gone;
}

Runtime::AfterLeaving Runtime::go_unheld(ThreadContext& self, bool can_run, WakeList& wakes) {
    const int32_t c = self.cpu;
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
        self.cpu = kNone;
        return AfterLeaving::Gone;
    }
    if (taker != kNone) {
        self.cpu = kNone;
        return AfterLeaving::Pooled; // another process took it and evicted us
    }
    return AfterLeaving::Holding;
}

bool Runtime::step_off_cpu(ThreadContext& self, LeaveReason why, WakeList& wakes) {
    assert(why != LeaveReason::Done);
    workers_.blocked(self);
    if (leave_cpu(self, why, wakes) == AfterLeaving::Continue) {
        workers_.unblocked(self);
        return false;
    }
    assert(!sched().cpus().runs_elsewhere(self.slot, kNone));
    return true;
}

void Runtime::step_on_cpu(ThreadContext& self, WakeList& wakes) {
    wakes.flush(*segment(), self.slot);
    if (wait_for_cpu(self) == kNone) self.cpu = kNone;
    workers_.unblocked(self);
}

int Runtime::cpu_wanted(const ThreadContext& self) const {
    if (self.cpu == kNone) return 0;
    // Foreign work is looked for either way: a caller may keep its CPU from
    // its own process's work a little longer, never from another process's.
    const int here = sched().policy().has_work(proc(), self.cpu) ? COEXEC_CPU_WANTED_HERE : 0;
    return here |
           (sched().policy().foreign_work(proc(), self.cpu) ? COEXEC_CPU_WANTED_ELSEWHERE : 0);
}

int Runtime::spare_cpus() const {
    return sched().policy().spare_cpus();
}

uint64_t Runtime::quantum_ns() const {
    return sched().quantum_ns();
}

} // namespace coexec::core
