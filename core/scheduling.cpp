// Scheduling points: how a thread leaves its CPU, and how it gets one.
#include "runtime.hpp"

#include "shm/clock.hpp"
#include "shm/futex.hpp"

#include <pthread.h>
#include <sched.h>

#include <cassert>
#include <utility>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::Placement;
using scheduler::SharedScheduler;
using scheduler::WakeList;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
constexpr uint64_t kWaitSliceNs = 50'000'000; // bounded sleeps, so stop is seen
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
    if (segment()->procs[proc_].ready_total.load(rlx) <= 0) return nullptr;
    std::lock_guard guard(queue_mutex_);
    return queue_->pop(cpu, numa_of_cpu(cpu));
}

bool Runtime::holds(const ThreadContext& self, int32_t cpu) const {
    const CpuSlot& slot = segment()->cpus[cpu];
    return cpu != kNone && slot.owner_thread.load(rlx) == self.slot &&
           slot.state.load(rlx) == CpuState::Running;
}

nosv_task* Runtime::next_for_worker(ThreadContext& self) {
    // A task handed over with the CPU comes first, whichever path the grant
    // reached us on (a pool wait, or an idle hold we were just evicted from).
    if (self.assigned) return std::exchange(self.assigned, nullptr);
    if (self.has_batch()) return self.batch[self.batch_next++];
    if (segment()->procs[proc_].ready_total.load(rlx) <= 0) return nullptr;
    std::lock_guard guard(queue_mutex_);
    size_t n =
        queue_->pop_batch(self.cpu, numa_of_cpu(self.cpu), self.batch, ThreadContext::kBatch);
    self.batch_next = n ? 1 : 0;
    self.batch_end = n;
    return n ? self.batch[0] : nullptr;
}

void Runtime::return_batch(ThreadContext& self) {
    if (!self.has_batch()) return;
    {
        std::lock_guard guard(queue_mutex_);
        queue_->unpop(self.batch + self.batch_next, self.batch_end - self.batch_next);
    }
    self.batch_next = self.batch_end = 0;
}

void Runtime::make_ready(nosv_task* task, bool front) {
    // A task on its own thread becomes ready only once the thread left its CPU.
    assert(!task->thread || !sched_->runs_elsewhere(task->thread->slot, kNone));
    Placement where = placement_of(task->affinity);
    // Another process hands us a CPU through a pool thread, even for a task
    // that lives on its own thread: keep one.
    ensure_receiver();
    // A task on its own thread takes an unheld CPU directly, decided before
    // it is queued: once queued it may run, end and be freed at any time.
    if (task->thread && give_directly(task, where, front)) return;
    if (!task->thread && !front && where.kind == Placement::Kind::Any) {
        queue_->push_unplaced(task); // lock-free: workers popping never delay a submit
    } else {
        std::lock_guard guard(queue_mutex_);
        queue_->push(task, where, front);
    }
    kick(where);
}

bool Runtime::give_directly(nosv_task* task, const Placement& where, bool front) {
    Segment& s = *segment();
    if (s.header.unheld_cpus.load(std::memory_order_seq_cst) == 0) return false;
    const int32_t slot = task->thread->slot;
    WakeList wakes;
    {
        auto lock = sched_->lock(wakes);
        int32_t c = sched_->find_unheld_cpu(proc_, where, s.threads[slot].bound_cpu.load(rlx));
        if (c != kNone) {
            sched_->give_unheld_cpu(c, slot, wakes);
        } else {
            // Queued under the segment lock: a CPU going idle (which takes
            // that lock) sees this work.
            std::lock_guard guard(queue_mutex_);
            queue_->push(task, where, front);
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
        auto lock = sched_->lock(wakes);
        sched_->claim_unheld_cpu(proc_, where, wakes);
    }
    wakes.flush(s);
}

void Runtime::ensure_receiver() {
    const ProcSlot& me = segment()->procs[proc_];
    if (me.pool_size.load(rlx) > 0 || stopping_.load(rlx)) return;
    // At most one running worker per CPU plus one spare to receive CPUs.
    if (unblocked_workers_.load(rlx) > cpu_count()) return;
    spawn_worker();
}

void Runtime::bind_to(ThreadContext& self, int32_t cpu) {
    self.cpu = cpu;
    if (!self.keeps_affinity) {
        sched_->bind_thread(self.slot, cpu); // usually the granter bound us already
        return;
    }
    // Usually the kernel keeps the thread where it last held this CPU, and
    // sched_getcpu() (a vDSO call) costs far less than two affinity changes
    // per grant. When the kernel has put it elsewhere, pin it: left alone it
    // may share a CPU with another coexec thread for milliseconds.
    const int32_t system_cpu = segment()->cpus[cpu].system_id;
    if (sched_getcpu() == system_cpu) return;
    if (!self.pinned)
        self.pinned =
            pthread_getaffinity_np(pthread_self(), sizeof self.own_mask, &self.own_mask) == 0;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(system_cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

void Runtime::unpin(ThreadContext& self) {
    if (!std::exchange(self.pinned, false)) return;
    pthread_setaffinity_np(pthread_self(), sizeof self.own_mask, &self.own_mask);
}

void Runtime::forget_binding(ThreadContext& self) {
    segment()->threads[self.slot].bound_cpu.store(kNone, rlx);
}

int32_t Runtime::wait_for_cpu(ThreadContext& self) {
    ThreadSlot& th = segment()->threads[self.slot];
    for (;;) {
        uint32_t seq = th.word.load(std::memory_order_acquire);
        // Acquire pairs with the granter's release store of `grant`.
        int32_t cpu = th.grant.exchange(kNone, std::memory_order_acquire);
        if (cpu != kNone) {
            assert(holds(self, cpu));
            bind_to(self, cpu);
            return cpu;
        }
        if (stopping_.load(std::memory_order_acquire)) return kNone;
        futex_wait(th.word, seq, kWaitSliceNs);
    }
}

Runtime::Leave Runtime::leave_cpu(ThreadContext& self, Leaving why, WakeList& wakes,
                                  nosv_task** next) {
    const bool can_run = why == Leaving::Done;
    if (next) *next = nullptr;
    const int32_t c = self.cpu;
    assert(holds(self, c));
    if (!can_run) return_batch(self); // a blocking thread must not sit on work
    if (nosv_task* t = self.immediate) {
        self.immediate = nullptr;
        {
            std::lock_guard guard(queue_mutex_);
            queue_->count_external({Placement::Kind::Cpu, c, true}, -1);
        }
        return hand_to(self, t, can_run, wakes, next);
    }
    if (sched_->foreign_work(proc_, c)) {
        SharedScheduler::Next decision;
        {
            auto lock = sched_->lock(wakes);
            decision = sched_->decide(c, proc_, why == Leaving::Yield, wakes);
        }
        if (decision == SharedScheduler::Next::Other) {
            return_batch(self);
            self.cpu = kNone;
            return Leave::Gone;
        }
    }
    if (nosv_task* t = can_run ? next_for_worker(self) : pop_own(c))
        return hand_to(self, t, can_run, wakes, next);
    // A yielding task is the last of its process's work for this CPU.
    if (why == Leaving::Yield) return Leave::Continue;
    return go_unheld(self, can_run, wakes);
}

Runtime::Leave Runtime::hand_to(ThreadContext& self, nosv_task* t, bool can_run, WakeList& wakes,
                                nosv_task** next) {
    const int32_t c = self.cpu;
    assert(holds(self, c));
    // Our own task is made ready only after we leave (step_off_cpu).
    assert(t->thread != &self);
    if (t->thread) {
        // A started task lives on its thread: hand the CPU over directly.
        self.cpu = kNone;
        sched_->handoff_within_process(c, t->thread->slot, wakes);
        return Leave::Gone;
    }
    if (can_run) {
        *next = t;
        return Leave::Continue;
    }
    // A fresh task while we block: a pool worker of ours runs it.
    ThreadContext* worker = nullptr;
    for (;;) {
        {
            auto lock = sched_->lock(wakes);
            ProcSlot& me = segment()->procs[proc_];
            int32_t w = me.pool_head;
            if (w != kNone) {
                me.pool_head = segment()->threads[w].next;
                me.pool_size.fetch_sub(1, rlx);
                worker = by_slot_[size_t(w)];
            }
        }
        if (worker || !spawn_worker()) break;
    }
    if (!worker) {
        // No thread can be had (segment full): put the task back.
        std::lock_guard guard(queue_mutex_);
        queue_->push(t, placement_of(t->affinity), true);
        return go_unheld(self, false, wakes);
    }
    worker->assigned = t;
    self.cpu = kNone;
    // The release store of the grant publishes `assigned` to the worker.
    sched_->handoff_within_process(c, worker->slot, wakes);
    return Leave::Gone;
}

Runtime::Leave Runtime::go_unheld(ThreadContext& self, bool can_run, WakeList& wakes) {
    const int32_t c = self.cpu;
    assert(holds(self, c));
    int32_t taker;
    {
        auto lock = sched_->lock(wakes);
        if (can_run)
            sched_->set_holding(c, false);
        else
            sched_->set_free(c);
        taker = sched_->offer_released(c, wakes);
    }
    if (taker == self.slot) {
        // Our own work arrived: we keep the CPU.
        segment()->threads[self.slot].grant.store(kNone, rlx);
        return Leave::Continue;
    }
    if (!can_run) {
        self.cpu = kNone;
        return Leave::Gone;
    }
    if (taker != kNone) {
        self.cpu = kNone;
        return Leave::Pooled; // another process took it and evicted us
    }
    return Leave::Holding;
}

bool Runtime::step_off_cpu(ThreadContext& self, Leaving why, WakeList& wakes) {
    assert(why != Leaving::Done);
    if (self.worker) unblocked_workers_.fetch_sub(1, rlx);
    if (leave_cpu(self, why, wakes) == Leave::Continue) {
        if (self.worker) unblocked_workers_.fetch_add(1, rlx);
        return false;
    }
    assert(!sched_->runs_elsewhere(self.slot, kNone));
    return true;
}

void Runtime::step_on_cpu(ThreadContext& self, WakeList& wakes) {
    wakes.flush(*segment(), self.slot);
    if (wait_for_cpu(self) == kNone) self.cpu = kNone;
    if (self.worker) unblocked_workers_.fetch_add(1, rlx);
}

bool Runtime::cpu_wanted(const ThreadContext& self) const {
    if (self.cpu == kNone) return false;
    return sched_->has_work(proc_, self.cpu) || sched_->foreign_work(proc_, self.cpu);
}

int Runtime::spare_cpus() const {
    return sched_->spare_cpus();
}

} // namespace coexec::core
