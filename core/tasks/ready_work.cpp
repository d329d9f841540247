// Ready work: queueing ready tasks, claiming CPUs for them, and handing them
// out to the threads that run them.
#include "core/tasks/ready_work.hpp"

#include "core/cpu/worker_pool.hpp"

#include "shm/clock.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <new>
#include <utility>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::Placement;
using scheduler::WakeList;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
} // namespace

void ReadyWork::open() {
    queue_ =
        std::make_unique<ReadyQueue>(*segment(), proc(), member_.cpu_count(), member_.numa_count());
}

nosv_task* ReadyWork::new_task(nosv_task_type* type, size_t metadata_size) {
    void* mem = task_pool_.allocate(sizeof(nosv_task) + metadata_size);
    if (!mem) return nullptr;
    auto* t = new (mem) nosv_task;
    t->type = type;
    t->metadata_size = static_cast<uint16_t>(metadata_size);
    if (metadata_size) std::memset(t->metadata(), 0, metadata_size);
    t->magic = kTaskMagic;
    return t;
}

void ReadyWork::delete_task(nosv_task* t) {
    size_t bytes = sizeof(nosv_task) + t->metadata_size;
    t->magic = 0;
    t->~nosv_task();
    task_pool_.release(t, bytes);
}

scheduler::Placement ReadyWork::placement_of(const nosv_affinity_t& a) const {
    if (a.level == NOSV_AFFINITY_LEVEL_NONE) return {};
    Placement p;
    p.strict = a.type == NOSV_AFFINITY_TYPE_STRICT;
    if (a.level == NOSV_AFFINITY_LEVEL_CPU) {
        int c = member_.logical_cpu(int(a.index));
        if (c >= 0) p = {Placement::Kind::Cpu, c, p.strict};
    } else if (a.level == NOSV_AFFINITY_LEVEL_NUMA) {
        int n = member_.logical_numa(int(a.index));
        if (n >= 0) p = {Placement::Kind::Numa, n, p.strict};
    }
    if (p.kind == Placement::Kind::Any) p.strict = false;
    return p;
}

nosv_task* ReadyWork::pop_own(int cpu) {
    if (segment()->procs[proc()].ready_total.load(rlx) <= 0) return nullptr;
    std::lock_guard guard(queue_lock_);
    for (;;) {
        nosv_task* t = queue_->pop(cpu, member_.numa_of_cpu(cpu));
        if (!t || claimed_by_us(t)) return t;
    }
}

bool ReadyWork::claimed_by_us(nosv_task* t) {
    // Under queue_lock_, so the task's thread cannot be taking it out
    // meanwhile (withdraw_if_granted()).
    return !t->thread || !sched().procs().close_receiver(t->thread->slot);
}

void ReadyWork::queue_own_task(nosv_task* task, const Placement& where, bool front) {
    queue_->push(task, where, front);
    // Still under queue_lock_: the task cannot be popped, run and freed yet.
    if (where.kind == Placement::Kind::Numa) return; // the pool thread sorts these
    // Not the only item: claim_receiver() would pass the thread over (queue
    // order); spare the stores to the segment.
    if (segment()->procs[proc()].ready_total.load(rlx) != 1) return;
    sched().procs().open_receiver(proc(), task->thread->slot,
                                  where.kind == Placement::Kind::Cpu ? where.index : kNone);
}

void ReadyWork::withdraw_if_granted(ThreadContext& self) {
    // Not claimed: the grant came from a popper, or a popper took the task
    // after a direct grant and closed the word (receive_claimed() orders us
    // after that popper's reads).
    if (!self.work.current || !sched().procs().receive_claimed(self.slot)) return;
    std::lock_guard guard(queue_lock_);
    // Under queue_lock_: a popper that took the task first closed the word.
    if (sched().procs().close_receiver(self.slot)) {
        [[maybe_unused]] const bool removed =
            queue_->remove(self.work.current, placement_of(self.work.current->affinity));
        assert(removed);
    }
}

nosv_task* ReadyWork::next_for_worker(ThreadContext& self) {
    // A task handed over with the CPU comes first, whichever path the grant
    // reached us on (a pool wait, or an idle hold we were just evicted from).
    if (self.held.assigned) return self.held.take_assigned();
    if (self.has_batch()) return self.pending.batch[self.pending.batch_next++];
    if (segment()->procs[proc()].ready_total.load(rlx) <= 0) return nullptr;
    std::lock_guard guard(queue_lock_);
    size_t n;
    do { // a task on its own thread comes alone (pop_batch)
        n = queue_->pop_batch(self.held.cpu, member_.numa_of_cpu(self.held.cpu), self.pending.batch,
                              ThreadContext::Pending::kBatch);
    } while (n == 1 && !claimed_by_us(self.pending.batch[0]));
    self.pending.batch_next = n ? 1 : 0;
    self.pending.batch_end = n;
    return n ? self.pending.batch[0] : nullptr;
}

void ReadyWork::return_batch(ThreadContext& self) {
    if (!self.has_batch()) return;
    {
        std::lock_guard guard(queue_lock_);
        queue_->unpop(self.pending.batch + self.pending.batch_next,
                      self.pending.batch_end - self.pending.batch_next);
    }
    self.pending.batch_next = self.pending.batch_end = 0;
}

bool ReadyWork::resume_parked(nosv_task* task) {
    ThreadContext* thread = task->thread;
    // The task's thread set Asleep before its status said Paused, which a
    // resuming submit read (acquire): a thread that parked is seen Asleep
    // here. Any other caller (a task made ready by its own thread, a thread
    // that did not park) reads None, and pays one load, no clock read and
    // no read-modify-write.
    if (!thread ||
        thread->park.state.load(std::memory_order_acquire) != ThreadContext::Park::Asleep)
        return false;
    // Read by the thread only after the resume (the release below).
    thread->park.resumed_ns.store(now_ns(), std::memory_order_relaxed);
    // Release: the thread reads the resume, and what we wrote before it,
    // after its wake-up (CpuHandover::sleep_parked()).
    uint32_t asleep = ThreadContext::Park::Asleep;
    if (!thread->park.state.compare_exchange_strong(asleep, ThreadContext::Park::Resumed,
                                                    std::memory_order_acq_rel,
                                                    std::memory_order_acquire))
        return false;
    sched().procs().wake_thread(thread->slot);
    return true;
}

void ReadyWork::make_ready(nosv_task* task, bool front) {
    // A paused task whose thread kept its CPU parked runs on it again: no
    // queue, no CPU to find.
    if (resume_parked(task)) return;
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

bool ReadyWork::give_directly(nosv_task* task, const Placement& where, bool front) {
    Segment& s = *segment();
    if (s.header.unheld_cpus.load(std::memory_order_seq_cst) == 0) return false;
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched(), wakes);
        if (sched().policy().grant_unheld_cpu(task->thread->slot, where, wakes) == kNone) {
            // Queued under the segment lock: a CPU going idle (which takes
            // that lock) sees this work.
            {
                std::lock_guard guard(queue_lock_);
                queue_own_task(task, where, front);
            }
            // None that the task may use is unheld: a parked one is, in
            // effect (work bound to a parked CPU would wait for its parker,
            // which may be waiting for this very task).
            sched().policy().take_parked_cpu(proc(), where, wakes);
        }
    }
    ThreadContext* self = this_thread_context();
    wakes.flush(s, self ? self->slot : kNone);
    return true;
}

void ReadyWork::kick(const Placement& where) {
    Segment& s = *segment();
    // seq_cst: our ready-counter increment (in push) comes before these
    // loads; a CPU that becomes Free or Sleeping counts itself here before
    // it re-checks the ready counters (set_state, then offer_released()),
    // and so does a CPU that its holder parks (CpuTable::park()). One of us
    // sees the other. Spinning (Idle) holders are not counted: they poll
    // the ready counters and claim the work themselves, so a submit that
    // finds only spinners takes no lock and wakes nobody. A parked CPU is
    // taken when none that the work may use is unheld (claim_unheld_cpu()).
    if (s.header.wakeable_cpus.load(std::memory_order_seq_cst) == 0 &&
        s.header.parked_cpus.load(std::memory_order_seq_cst) == 0)
        return;
    WakeList wakes;
    {
        scheduler::SchedulerLock lock(sched(), wakes);
        sched().policy().claim_unheld_cpu(proc(), where, wakes);
    }
    wakes.flush(s);
}

void ReadyWork::ready_submitted(nosv_task* task, bool front) {
    if (task->par.active())
        make_ready_parallel(task);
    else
        make_ready(task, front);
}

void ReadyWork::make_ready_parallel(nosv_task* task) {
    const Placement where = placement_of(task->affinity);
    const auto executions = uint32_t(task->par.degree()); // > 0: armed at submit
    {
        std::lock_guard guard(queue_lock_);
        queue_->push_parallel(task, where, executions, false);
    }
    // From here the task may run, complete and be freed: only copies below.
    // One CPU per execution at most: each kick claims one unheld CPU (and
    // returns at once when none is), and each needs a receiving thread.
    const uint32_t cpus = std::min(executions, uint32_t(member_.cpu_count()));
    for (uint32_t i = 0; i < cpus; ++i) {
        workers_.ensure_receiver();
        kick(where);
    }
}

void ReadyWork::set_submit_window(ThreadContext& self, size_t size) {
    self.pending.window_size = uint32_t(std::min<size_t>(size, UINT32_MAX));
    // As in nOS-V, a window of one submits at once: what it held goes now.
    if (size == 1) flush_window(self);
}

void ReadyWork::end_window(ThreadContext& self) {
    flush_window(self);
    self.pending.window_size = 1;
}

void ReadyWork::flush_held(ThreadContext& self) {
    // make_ready() never submits, so the window does not grow meanwhile.
    for (auto& [task, front] : self.pending.window)
        ready_submitted(task, front);
    self.pending.window.clear(); // keeps its capacity for the next batch
}

void ReadyWork::put_back(nosv_task* t) {
    std::lock_guard guard(queue_lock_);
    queue_->push(t, placement_of(t->affinity), true);
}

void ReadyWork::count_successor(int32_t cpu, int delta) {
    std::lock_guard guard(queue_lock_);
    queue_->count_external({Placement::Kind::Cpu, cpu, true}, delta);
}

uint32_t ReadyWork::withdraw(nosv_task* t) {
    std::lock_guard guard(queue_lock_);
    return queue_->withdraw(t, placement_of(t->affinity));
}

int ReadyWork::top_priority(int32_t cpu) {
    std::lock_guard guard(queue_lock_);
    return queue_->top_priority(cpu, member_.numa_of_cpu(cpu));
}

} // namespace coexec::core
