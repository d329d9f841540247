// Joinable tasks: the joiner's wait and the completion's wake-up.
//
// A joiner that is a task leaves its CPU while it waits, like nosv_waitfor,
// and sleeps on its thread slot's word; the completion bumps that word. A
// joiner outside coexec (a plain thread, or a task between
// coexec_block_enter and _exit) sleeps on a process-wide condition
// variable. Either way the completion finds the waiter in the task's join
// word in the same atomic step that counts the run as complete (see
// JoinState), so a run that completes between the joiner's check and its
// sleep is never missed.
#include "core/tasks/task_ops.hpp"

#include "shm/clock.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace coexec::core {

using namespace coexec::shm;
using scheduler::WakeList;
using LeaveReason = CpuHandover::LeaveReason;

namespace {

// Where joiners outside coexec sleep. One for the process: such joins are
// rare, and a completion must not touch the task after counting the run
// (the joiner may destroy it), so it cannot wake something inside it.
struct ThreadJoiners {
    std::mutex mutex;
    std::condition_variable cv;
};
ThreadJoiners& thread_joiners() {
    // Never destroyed: a completion may run while the process exits.
    static auto* joiners = new ThreadJoiners;
    return *joiners;
}

constexpr uint64_t kForever = UINT64_MAX;

// The calling thread's number as a joiner outside coexec.
uint32_t thread_waiter() {
    static std::atomic<uint32_t> next{0};
    // Relaxed: only uniqueness matters. Numbers wrap after 2^31 threads.
    thread_local const uint32_t me =
        JoinState::kThreadWaiter |
        (next.fetch_add(1, std::memory_order_relaxed) & ~JoinState::kThreadWaiter);
    return me;
}

} // namespace

void TaskOps::finish_join(JoinState& join) {
    const uint32_t waiter = join.complete();
    // From here on the task (and `join`) may be gone.
    if (waiter == JoinState::kNobody) return;
    if (!JoinState::is_thread(waiter)) {
        sched().procs().wake_thread(JoinState::slot_of(waiter));
    } else {
        ThreadJoiners& j = thread_joiners();
        // Taking the mutex orders the wake after the joiner's check: it is
        // either before its check (and sees the count) or in wait().
        { std::lock_guard guard(j.mutex); }
        j.cv.notify_all();
    }
}

int TaskOps::join_wait(nosv_task* const* tasks, size_t n, uint64_t timeout_ns) {
    ThreadContext* self = this_thread_context();
    nosv_task* caller = self ? self->work.current : nullptr;
    const bool holds_cpu = self && self->held.cpu != kNone;
    // A task on its CPU waits without it. A coexec thread holding a CPU
    // with no task (a completed callback on a worker) cannot give the CPU
    // away, and sleeping on it could starve the very task it waits for.
    const bool as_task = holds_cpu && caller && caller->status.state() != TaskState::Blocked;
    if (holds_cpu && !caller && timeout_ns != 0) return NOSV_ERR_INVALID_OPERATION;

    std::vector<uint32_t> targets(n);
    for (size_t i = 0; i < n; ++i) {
        if (tasks[i] == caller) return NOSV_ERR_INVALID_OPERATION; // would wait forever
        targets[i] = tasks[i]->join->runs();
        if (targets[i] == 0) return NOSV_ERR_INVALID_OPERATION; // never submitted
    }

    if (timeout_ns == 0) {
        bool all_done = true;
        for (size_t i = 0; i < n; ++i) {
            switch (tasks[i]->join->peek(targets[i])) {
            case JoinState::Claim::Busy:
                return NOSV_ERR_INVALID_PARAMETER; // another joiner owns it
            case JoinState::Claim::Claimed:
                all_done = false;
                break;
            case JoinState::Claim::Done:
                break;
            }
        }
        return all_done ? NOSV_SUCCESS : NOSV_ERR_TIMEOUT;
    }

    const uint64_t start = now_ns();
    const uint64_t deadline =
        timeout_ns == kForever || timeout_ns > kForever - start ? kForever : start + timeout_ns;
    const uint32_t me = as_task ? JoinState::slot_waiter(self->slot) : thread_waiter();

    // Claims every run not complete yet. `claimed` lists them.
    std::vector<size_t> claimed;
    for (size_t i = 0; i < n; ++i) {
        switch (tasks[i]->join->claim(targets[i], me)) {
        case JoinState::Claim::Claimed:
            claimed.push_back(i);
            break;
        case JoinState::Claim::Done:
            break;
        case JoinState::Claim::Busy:
            // Another joiner: nOS-V rejects a second joiner of a task
            // with NOSV_ERR_INVALID_PARAMETER.
            for (size_t k : claimed)
                tasks[k]->join->withdraw(me);
            return NOSV_ERR_INVALID_PARAMETER;
        }
    }
    // Done once every claimed run completed. Claims again on the way, in
    // case a completion of an earlier run took us (see JoinState::claim).
    auto all_done = [&] {
        for (size_t k : claimed)
            if (tasks[k]->join->claim(targets[k], me) != JoinState::Claim::Done) return false;
        return true;
    };

    if (!claimed.empty()) {
        if (as_task) {
            // As nosv_waitfor: the task leaves its CPU, sleeps on its slot's
            // word, and makes itself ready again once done or timed out.
            caller->status.relabel(TaskState::Waiting);
            WakeList wakes;
            handover_.step_off_cpu(*self, LeaveReason::Block, wakes);
            wakes.flush(*segment(), self->slot);
            const ThreadSlot& th = segment()->threads[self->slot];
            for (;;) {
                // The word first: a completion after this load moves it.
                const uint32_t seq = th.word.load(std::memory_order_acquire);
                if (all_done()) break;
                const uint64_t now = now_ns();
                if (now >= deadline) break;
                sched().procs().wait_word(self->slot, seq,
                                          deadline == kForever ? 0 : deadline - now);
            }
            caller->status.relabel(TaskState::Ready);
            ready_.make_ready(caller, true);
            handover_.step_on_cpu(*self, wakes); // nothing left to wake
            caller->status.relabel(TaskState::Running);
        } else {
            ThreadJoiners& j = thread_joiners();
            std::unique_lock lock(j.mutex);
            while (!all_done()) {
                if (deadline == kForever) {
                    j.cv.wait(lock);
                    continue;
                }
                const uint64_t now = now_ns();
                if (now >= deadline) break;
                j.cv.wait_for(lock, std::chrono::nanoseconds(deadline - now));
            }
        }
    }

    // Withdraw, then judge: a run whose completion took us meanwhile counts
    // as complete (its wake-up, if still coming, is harmless: a slot's
    // word is only ever waited on in loops that check why they woke).
    bool complete = true;
    for (size_t k : claimed) {
        tasks[k]->join->withdraw(me);
        complete = complete && tasks[k]->join->done(targets[k]);
    }
    return complete ? NOSV_SUCCESS : NOSV_ERR_TIMEOUT;
}

} // namespace coexec::core
