#include "core/tasks/ready_queue.hpp"

#include "core/runtime/thread_context.hpp"

#include <algorithm>
#include <cassert>
#include <climits>

namespace coexec::core {

using scheduler::Placement;

void ReadyQueue::Fifo::push(nosv_task* t, bool front) {
    auto it = by_priority_.begin();
    while (it != by_priority_.end() && it->first > t->priority)
        ++it;
    if (it == by_priority_.end() || it->first != t->priority)
        it = by_priority_.insert(it, {t->priority, std::deque<nosv_task*>{}});
    if (front)
        it->second.push_front(t);
    else
        it->second.push_back(t);
    ++size_;
}

nosv_task* ReadyQueue::Fifo::pop() {
    // Empty buckets are kept (their deque storage is reused); skip them.
    for (auto& [priority, q] : by_priority_) {
        if (q.empty()) continue;
        nosv_task* t = q.front();
        q.pop_front();
        --size_;
        return t;
    }
    return nullptr;
}

nosv_task* ReadyQueue::Fifo::pop_warm(int cpu) {
    // A thread that runs again where it ran last finds its cache warm and
    // needs no migration. Looking only a few places past the head bounds
    // how far FIFO order bends, and passing the same head over only a few
    // times bounds how long it waits: threads that yield to each other
    // would otherwise keep finding one of their own within reach.
    constexpr size_t kLookahead = 4;
    constexpr unsigned kMaxPasses = 4;
    for (auto& [priority, q] : by_priority_) {
        if (q.empty()) continue;
        nosv_task* head = q.front();
        auto warm = [cpu](const nosv_task* t) { return t->thread && t->thread->held.last == cpu; };
        if (!warm(head) && (head != passed_head_ || passes_ < kMaxPasses)) {
            const size_t n = std::min(q.size(), kLookahead);
            for (size_t i = 1; i < n; ++i) {
                nosv_task* t = q[i];
                if (!warm(t)) continue;
                passes_ = head == passed_head_ ? passes_ + 1 : 1;
                passed_head_ = head;
                q.erase(q.begin() + std::ptrdiff_t(i));
                --size_;
                return t;
            }
        }
        q.pop_front();
        --size_;
        passed_head_ = nullptr;
        return head;
    }
    return nullptr;
}

nosv_task* ReadyQueue::Fifo::head() const {
    for (auto& [prio, q] : by_priority_)
        if (!q.empty()) return q.front();
    return nullptr;
}

nosv_task* ReadyQueue::Fifo::pop_at(int priority) {
    for (auto& [prio, q] : by_priority_) {
        if (q.empty()) continue;
        // A parallel task is never batched: its executions go to many CPUs.
        if (prio != priority || q.front()->par.active()) return nullptr;
        nosv_task* t = q.front();
        q.pop_front();
        --size_;
        return t;
    }
    return nullptr;
}

bool ReadyQueue::Fifo::erase(const nosv_task* t) {
    for (auto& [prio, q] : by_priority_)
        for (auto it = q.begin(); it != q.end(); ++it)
            if (*it == t) {
                q.erase(it);
                --size_;
                return true;
            }
    return false;
}

int ReadyQueue::Fifo::top_priority() const {
    for (auto& [priority, q] : by_priority_)
        if (!q.empty()) return priority;
    return INT_MIN;
}

ReadyQueue::ReadyQueue(shm::Segment& segment, int32_t proc, int cpus, int numa_nodes)
    : demand_(segment, proc), strict_cpu_(size_t(cpus)), preferred_cpu_(size_t(cpus)),
      strict_numa_(size_t(numa_nodes)), preferred_numa_(size_t(numa_nodes)), cpus_(cpus) {}

ReadyQueue::Fifo& ReadyQueue::fifo_for(const nosv_task* task, const Placement& w) {
    switch (w.kind) {
    case Placement::Kind::Cpu:
        return w.strict ? strict_cpu_[size_t(w.index)] : preferred_cpu_[size_t(w.index)];
    case Placement::Kind::Numa:
        return w.strict ? strict_numa_[size_t(w.index)] : preferred_numa_[size_t(w.index)];
    case Placement::Kind::Any:
        break;
    }
    return task->thread ? any_bound_ : any_;
}

void ReadyQueue::count(const Placement& w, int delta) {
    demand_.add(w, delta);
    if (!w.strict && w.kind != Placement::Kind::Any) preferred_count_ += delta;
}

void ReadyQueue::count_external(const Placement& where, int delta) {
    count(where, delta);
}

void ReadyQueue::place(nosv_task* task, const Placement& where, bool front) {
    task->ready_seq = front ? front_seq_-- : back_seq_++;
    fifo_for(task, where).push(task, front);
}

void ReadyQueue::push(nosv_task* task, const Placement& where, bool front) {
    if (task->par.active()) return push_parallel(task, where, 1, front); // given back
    drain_intake(); // earlier submits keep their place
    place(task, where, front);
    count(where, +1);
}

void ReadyQueue::push_parallel(nosv_task* task, const Placement& where, uint32_t executions,
                               bool front) {
    drain_intake();
    const uint32_t before = task->par.queued();
    task->par.set_queued(before + executions);
    if (before == 0)
        place(task, where, front);
    else
        // The queue's count is held, so this never completes the task.
        task->events.fetch_sub(1, std::memory_order_relaxed);
    count(where, int(executions));
}

uint32_t ReadyQueue::withdraw(nosv_task* task, const Placement& where) {
    drain_intake();
    const uint32_t n = task->par.queued();
    if (n == 0) return 0;
    const bool found = fifo_for(task, where).erase(task);
    assert(found);
    (void)found;
    task->par.set_queued(0);
    count(where, -int(n));
    return n;
}

void ReadyQueue::take_execution(Fifo& fifo, nosv_task* task) {
    const uint32_t left = task->par.queued() - 1;
    task->par.set_queued(left);
    if (left == 0) return; // the queue's event count passes to this execution
    // Relaxed: the queue's count is held, so the events cannot reach zero
    // meanwhile; the execution's thread gets the task through the lock or a
    // grant, which order this for it.
    task->events.fetch_add(1, std::memory_order_relaxed);
    fifo.push(task, true); // back at the head: the next CPU takes the next one
}

void ReadyQueue::push_unplaced(nosv_task* task) {
    // Counted before it is linked: a reader may see the count a moment before
    // the task (it retries), never a task that is not counted yet.
    count({}, +1);
    link(intake_, task);
}

void ReadyQueue::push_preempted(nosv_task* task, int cpu) {
    task->preempted_cpu = cpu;
    // Counted as demand for any CPU (ready_any), as count() counts preferred
    // work; preferred_count_, which only the queue lock's holder may touch,
    // follows in drain_intake().
    demand_.add({Placement::Kind::Cpu, cpu, false}, +1);
    link(preempted_, task);
}

void ReadyQueue::link(std::atomic<nosv_task*>& stack, nosv_task* task) {
    nosv_task* head = stack.load(std::memory_order_relaxed);
    do {
        task->intake_next = head;
        // Release: the lock holder that takes the stack (acquire) sees the
        // task's fields and its link.
    } while (!stack.compare_exchange_weak(head, task, std::memory_order_release,
                                          std::memory_order_relaxed));
}

nosv_task* ReadyQueue::take_oldest_first(std::atomic<nosv_task*>& stack) {
    if (stack.load(std::memory_order_relaxed) == nullptr) return nullptr;
    nosv_task* t = stack.exchange(nullptr, std::memory_order_acquire);
    nosv_task* oldest = nullptr; // reverse the stack into arrival order
    while (t) {
        nosv_task* next = std::exchange(t->intake_next, oldest);
        oldest = t;
        t = next;
    }
    return oldest;
}

void ReadyQueue::drain_intake() {
    // Already counted, both.
    for (nosv_task* t = take_oldest_first(preempted_); t;) {
        nosv_task* next = std::exchange(t->intake_next, nullptr);
        place(t, {Placement::Kind::Cpu, t->preempted_cpu, false}, true);
        ++preferred_count_; // its demand was counted by push_preempted()
        t = next;
    }
    for (nosv_task* t = take_oldest_first(intake_); t;) {
        nosv_task* next = std::exchange(t->intake_next, nullptr);
        place(t, {}, false);
        t = next;
    }
}

int ReadyQueue::top_priority(int cpu, int numa) {
    drain_intake();
    int best = std::max(any_.top_priority(), any_bound_.top_priority());
    for (const Fifo* f : {&strict_cpu_[size_t(cpu)], &preferred_cpu_[size_t(cpu)],
                          &strict_numa_[size_t(numa)], &preferred_numa_[size_t(numa)]})
        best = std::max(best, f->top_priority());
    return best;
}

nosv_task* ReadyQueue::pop(int cpu, int numa) {
    drain_intake();
    const Slot local[] = {
        {&strict_cpu_[size_t(cpu)], {Placement::Kind::Cpu, cpu, true}},
        {&preferred_cpu_[size_t(cpu)], {Placement::Kind::Cpu, cpu, false}},
        {&strict_numa_[size_t(numa)], {Placement::Kind::Numa, numa, true}},
        {&preferred_numa_[size_t(numa)], {Placement::Kind::Numa, numa, false}},
        {&any_, {}},
        {&any_bound_, {}},
    };
    const Slot* best = nullptr;
    for (const Slot& s : local)
        if (!s.fifo->empty() && (!best || s.fifo->top_priority() > best->fifo->top_priority()))
            best = &s;
    // Between the two unplaced queues, equal priority goes by arrival.
    if (best == &local[4] && !any_bound_.empty() &&
        any_bound_.top_priority() == any_.top_priority() &&
        any_bound_.head()->ready_seq < any_.head()->ready_seq)
        best = &local[5];
    Slot stolen{};
    if (!best && preferred_count_ > 0) {
        // Preferred work elsewhere may run here rather than wait.
        for (size_t i = 0; i < preferred_cpu_.size(); ++i)
            if (!preferred_cpu_[i].empty() &&
                (!best || preferred_cpu_[i].top_priority() > best->fifo->top_priority())) {
                stolen = {&preferred_cpu_[i], {Placement::Kind::Cpu, int(i), false}};
                best = &stolen;
            }
        for (size_t i = 0; i < preferred_numa_.size(); ++i)
            if (!preferred_numa_[i].empty() &&
                (!best || preferred_numa_[i].top_priority() > best->fifo->top_priority())) {
                stolen = {&preferred_numa_[i], {Placement::Kind::Numa, int(i), false}};
                best = &stolen;
            }
    }
    if (!best) return nullptr;
    nosv_task* t = best == &local[5] ? any_bound_.pop_warm(cpu) : best->fifo->pop();
    count(best->where, -1);
    if (t->par.active()) take_execution(*best->fifo, t);
    return t;
}

size_t ReadyQueue::pop_batch(int cpu, int numa, nosv_task** out, size_t max) {
    if (max == 0 || !(out[0] = pop(cpu, numa))) return 0;
    size_t n = 1;
    if (out[0]->thread || out[0]->affinity.level != NOSV_AFFINITY_LEVEL_NONE) return n;
    // Leave at least half of the queue per CPU for the others.
    size_t extra = std::min(max - 1, any_.size() / size_t(2 * cpus_));
    while (n <= extra) {
        nosv_task* t = any_.pop_at(out[0]->priority);
        if (!t) break;
        out[n++] = t;
    }
    if (n > 1) count({}, -int(n - 1));
    return n;
}

bool ReadyQueue::remove(nosv_task* task, const Placement& where) {
    if (!fifo_for(task, where).erase(task)) return false;
    count(where, -1);
    return true;
}

void ReadyQueue::unpop(nosv_task* const* tasks, size_t n) {
    for (size_t i = n; i-- > 0;)
        push(tasks[i], {}, true);
}

} // namespace coexec::core
