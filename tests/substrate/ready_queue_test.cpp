// The private ready queue: priorities, FIFO order, placement, stealing and
// the shared counters that mirror it.
#include "core/runtime/spin_lock.hpp"
#include "core/runtime/thread_context.hpp"
#include "core/tasks/ready_queue.hpp"
#include "shm/segment.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <sys/syscall.h>
#include <unistd.h>

using namespace coexec::core;
using coexec::scheduler::Placement;

namespace {
// A process-private segment with 2 CPU slots: the queue's counters are
// process slot 0's.
coexec::shm::SegmentMapping two_cpu_segment() {
    coexec::shm::SegmentOptions o;
    o.isolation = coexec::shm::Isolation::Process;
    o.cpu_slots = 2;
    coexec::shm::SegmentError e;
    return coexec::shm::SegmentMapping::open(o, e);
}

struct QueueTest : ::testing::Test {
    coexec::shm::SegmentMapping segment = two_cpu_segment();
    coexec::shm::ProcSlot* slot = &segment->procs[0];
    std::atomic<int64_t>* ready_cpu = coexec::shm::ready_cpu_row(*segment.get(), 0);
    ReadyQueue q{*segment.get(), 0, 2, 1};
    nosv_task tasks[6];
    nosv_task* t(int i, int prio = 0) {
        tasks[i].priority = prio;
        return &tasks[i];
    }
};
} // namespace

TEST_F(QueueTest, HigherPriorityFirstThenFifo) {
    q.push(t(0), {}, false);
    q.push(t(1, 5), {}, false);
    q.push(t(2), {}, false);
    q.push(t(3, 5), {}, false);
    EXPECT_EQ(slot->ready_total.load(), 4);
    EXPECT_EQ(q.pop(0, 0), &tasks[1]);
    EXPECT_EQ(q.pop(0, 0), &tasks[3]);
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
    EXPECT_EQ(q.pop(0, 0), &tasks[2]);
    EXPECT_EQ(q.pop(0, 0), nullptr);
    EXPECT_EQ(slot->ready_total.load(), 0);
    EXPECT_EQ(slot->ready_any.load(), 0);
}

// A thread granted a CPU directly takes its own task out (direct grants).
TEST_F(QueueTest, RemoveTakesOneTaskOutAndUncountsIt) {
    Placement on1{Placement::Kind::Cpu, 1, true};
    q.push(t(0), {}, false);
    q.push(t(1, 5), on1, false);
    q.push(t(2), {}, false);
    tasks[1].priority = 3; // changed while queued: still found
    EXPECT_TRUE(q.remove(&tasks[1], on1));
    EXPECT_EQ(ready_cpu[1].load(), 0);
    EXPECT_EQ(slot->ready_total.load(), 2);
    EXPECT_TRUE(q.remove(&tasks[2], {}));
    EXPECT_FALSE(q.remove(&tasks[2], {}));
    EXPECT_EQ(q.pop(1, 0), &tasks[0]);
    EXPECT_EQ(q.pop(1, 0), nullptr);
    EXPECT_EQ(slot->ready_total.load(), 0);
}

TEST_F(QueueTest, UnlockedGoesFirstAmongEqualPriority) {
    q.push(t(0), {}, false);
    q.push(t(1), {}, true);
    EXPECT_EQ(q.pop(1, 0), &tasks[1]);
}

TEST_F(QueueTest, StrictCpuWorkStaysOnItsCpu) {
    Placement on1{Placement::Kind::Cpu, 1, true};
    q.push(t(0), on1, false);
    EXPECT_EQ(ready_cpu[1].load(), 1);
    EXPECT_EQ(slot->ready_any.load(), 0);
    EXPECT_EQ(q.pop(0, 0), nullptr);
    EXPECT_EQ(q.pop(1, 0), &tasks[0]);
    EXPECT_EQ(ready_cpu[1].load(), 0);
}

TEST_F(QueueTest, PreferredWorkIsStolenByAnIdleCpu) {
    Placement pref1{Placement::Kind::Cpu, 1, false};
    q.push(t(0), pref1, false);
    EXPECT_EQ(slot->ready_any.load(), 1); // runnable anywhere
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
}

// A preempted task goes ahead of the work that prefers its CPU, but another
// CPU may run it: its thread may hold a lock that whoever runs on its old
// CPU next blocks on, holding that CPU (a joblib pool deadlocked so).
TEST_F(QueueTest, APreemptedTaskPrefersItsCpuAndMayRunOnAnother) {
    q.push(t(0), {Placement::Kind::Cpu, 0, true}, false);
    q.push_preempted(t(1), 0);
    EXPECT_EQ(slot->ready_any.load(), 1); // demand for any CPU
    EXPECT_EQ(ready_cpu[0].load(), 1);
    EXPECT_EQ(q.pop(1, 0), &tasks[1]); // CPU 1 has nothing of its own
    EXPECT_EQ(q.pop(1, 0), nullptr);   // the strict task stays on CPU 0
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
    q.push(t(2), {Placement::Kind::Cpu, 0, false}, false);
    q.push_preempted(t(3), 0);
    EXPECT_EQ(q.pop(0, 0), &tasks[3]); // ahead of its CPU's preferred work
    EXPECT_EQ(q.pop(0, 0), &tasks[2]);
    EXPECT_EQ(slot->ready_total.load(), 0);
    EXPECT_EQ(slot->ready_any.load(), 0);
}

TEST_F(QueueTest, LocalWorkBeatsStealingAndPriorityAcrossQueues) {
    q.push(t(0), {Placement::Kind::Cpu, 1, false}, false);
    q.push(t(1, 1), {Placement::Kind::Cpu, 0, true}, false);
    q.push(t(2, 9), {}, false);
    EXPECT_EQ(q.top_priority(0, 0), 9);
    EXPECT_EQ(q.pop(0, 0), &tasks[2]);
    EXPECT_EQ(q.pop(0, 0), &tasks[1]);
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
}

TEST_F(QueueTest, TasksOnThreadsAndFreshTasksKeepArrivalOrder) {
    coexec::core::ThreadContext thread;
    coexec::core::ThreadContext* some_thread = &thread;
    tasks[0].thread = some_thread; // a resumed task
    q.push(t(0), {}, false);
    q.push(t(1), {}, false);
    tasks[2].thread = some_thread;
    q.push(t(2), {}, false);
    q.push(t(3), {}, true); // UNLOCKED: ahead of everyone of its priority
    EXPECT_EQ(q.pop(0, 0), &tasks[3]);
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
    EXPECT_EQ(q.pop(0, 0), &tasks[1]);
    EXPECT_EQ(q.pop(0, 0), &tasks[2]);
}

// Among the first few tasks that live on threads, a CPU takes the one whose
// thread ran there last (warm cache, no migration); other CPUs and tasks
// further back keep arrival order.
TEST_F(QueueTest, ACpuPrefersATaskWhoseThreadRanThereLast) {
    coexec::core::ThreadContext threads[6];
    for (int i = 0; i < 6; ++i) {
        threads[i].held.last = i == 2 || i == 5 ? 1 : 0;
        tasks[i].thread = &threads[i];
        q.push(t(i), {}, false);
    }
    EXPECT_EQ(q.pop(1, 0), &tasks[2]) << "the first of the first four that ran on CPU 1";
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
    EXPECT_EQ(q.pop(1, 0), &tasks[5]) << "within four of the head now";
    EXPECT_EQ(q.pop(1, 0), &tasks[1]) << "none ran on CPU 1: the head";
    EXPECT_EQ(q.pop(0, 0), &tasks[3]);
    EXPECT_EQ(q.pop(0, 0), &tasks[4]);
    EXPECT_EQ(q.pop(0, 0), nullptr);
    EXPECT_EQ(slot->ready_total.load(), 0);
}

TEST_F(QueueTest, ATaskFourPlacesBackIsNotTakenOutOfOrder) {
    coexec::core::ThreadContext threads[5];
    for (int i = 0; i < 5; ++i) {
        threads[i].held.last = i == 4 ? 1 : 0;
        tasks[i].thread = &threads[i];
        q.push(t(i), {}, false);
    }
    EXPECT_EQ(q.pop(1, 0), &tasks[0]);
}

// Threads that yield to each other on CPU 0 are always within reach of its
// warm pop; the head, whose thread ran elsewhere, must still come out.
TEST_F(QueueTest, AHeadIsPassedOverAtMostFourTimesInARow) {
    coexec::core::ThreadContext threads[4];
    for (int i = 0; i < 4; ++i) {
        threads[i].held.last = i == 0 ? 1 : 0;
        tasks[i].thread = &threads[i];
        q.push(t(i), {}, false);
    }
    int pops = 0;
    for (nosv_task* got = nullptr; got != &tasks[0] && pops < 100; ++pops) {
        got = q.pop(0, 0);
        ASSERT_NE(got, nullptr);
        if (got != &tasks[0]) q.push(got, {}, false); // it yields again at once
    }
    EXPECT_EQ(pops, 5) << "four passes, then the head";
    EXPECT_EQ(q.pop(1, 0), &tasks[2]) << "then FIFO order for a CPU none of them ran on";
}

TEST_F(QueueTest, BatchesTakeOnlyFreshUnplacedTasksAndLeaveAShare) {
    nosv_task many[40];
    for (auto& m : many)
        q.push(&m, {}, false);
    nosv_task* out[16];
    size_t n = q.pop_batch(0, 0, out, 16);
    EXPECT_EQ(n, 10u); // 1 + 39 / (2 CPUs * 2)
    EXPECT_EQ(out[0], &many[0]);
    EXPECT_EQ(out[9], &many[9]);
    EXPECT_EQ(slot->ready_total.load(), 30);
    q.unpop(out + 1, n - 1);
    EXPECT_EQ(slot->ready_total.load(), 39);
    EXPECT_EQ(q.pop(0, 0), &many[1]);
}

// A task on its own thread may have been granted a CPU directly by another
// process while queued: it must reach its popper alone, never as the extra
// of a batch, so the popper can check that claim (ReadyWork::claimed_by_us).
TEST_F(QueueTest, ATaskOnItsOwnThreadIsNeverPoppedInABatch) {
    coexec::core::ThreadContext thread;
    std::vector<nosv_task> many(40);
    many[3].thread = &thread;
    for (auto& m : many)
        q.push(&m, {}, false);
    nosv_task* out[16];
    for (size_t popped = 0; popped < many.size();) {
        const size_t n = q.pop_batch(0, 0, out, 16);
        ASSERT_GT(n, 0u);
        for (size_t i = 0; i < n; ++i)
            EXPECT_TRUE(n == 1 || out[i] != &many[3]) << "batch of " << n;
        popped += n;
    }
    EXPECT_EQ(slot->ready_total.load(), 0);
}

TEST_F(QueueTest, UnplacedPushesKeepOrderAndPriorityWithLockedPushes) {
    q.push_unplaced(t(0));
    q.push(t(1), {}, false); // after the lock-free push, so behind it
    q.push_unplaced(t(2, 3));
    q.push_unplaced(t(3));
    EXPECT_EQ(slot->ready_total.load(), 4);
    EXPECT_EQ(slot->ready_any.load(), 4);
    EXPECT_EQ(q.top_priority(0, 0), 3);
    EXPECT_EQ(q.pop(0, 0), &tasks[2]);
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
    EXPECT_EQ(q.pop(0, 0), &tasks[1]);
    EXPECT_EQ(q.pop(0, 0), &tasks[3]);
    EXPECT_EQ(q.pop(0, 0), nullptr);
    EXPECT_EQ(slot->ready_total.load(), 0);
}

// Several submitters push lock-free while a consumer pops under a lock, as
// the runtime does: every task comes out exactly once, each submitter's in
// its own order, and the counters end at zero.
TEST(ReadyQueueConcurrency, LockFreeSubmittersLoseNothing) {
    coexec::shm::SegmentMapping segment = two_cpu_segment();
    coexec::shm::ProcSlot* slot = &segment->procs[0];
    ReadyQueue q{*segment.get(), 0, 2, 1};
    constexpr int kProducers = 3, kPerProducer = 20000;
    std::vector<nosv_task> tasks(size_t(kProducers * kPerProducer));
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p)
        producers.emplace_back([&, p] {
            for (int i = 0; i < kPerProducer; ++i)
                q.push_unplaced(&tasks[size_t(p * kPerProducer + i)]);
        });
    std::mutex lock;
    std::vector<int> last(kProducers, -1);
    int popped = 0, out_of_order = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (popped < kProducers * kPerProducer && std::chrono::steady_clock::now() < deadline) {
        nosv_task* batch[16];
        size_t n;
        {
            std::lock_guard guard(lock);
            n = q.pop_batch(popped % 2, 0, batch, 16);
        }
        for (size_t k = 0; k < n; ++k) {
            const int index = int(batch[k] - tasks.data());
            const int p = index / kPerProducer, i = index % kPerProducer;
            out_of_order += i <= last[size_t(p)];
            last[size_t(p)] = i;
        }
        popped += int(n);
    }
    for (auto& t : producers)
        t.join();
    EXPECT_EQ(popped, kProducers * kPerProducer) << "tasks lost";
    EXPECT_EQ(out_of_order, 0);
    EXPECT_EQ(slot->ready_total.load(), 0);
    EXPECT_EQ(slot->ready_any.load(), 0);
    std::lock_guard guard(lock);
    EXPECT_EQ(q.pop(0, 0), nullptr);
}

// The adapters interpose sched_yield() to give coexec CPUs away; the queue
// lock's backoff must not go through it, or a thread that contends for the
// lock in the middle of a scheduling operation re-enters the scheduler (it
// hung HPCCG under the OpenMP and PoCL adapters). This binary interposes
// sched_yield itself and counts the calls.
namespace {
std::atomic<int> interposed_yields{0};
}
extern "C" int sched_yield() noexcept {
    interposed_yields.fetch_add(1, std::memory_order_relaxed);
    return int(::syscall(SYS_sched_yield));
}

TEST(QueueLock, BackoffNeverCallsAnInterposableSchedYield) {
    SpinLock lock;
    long counter = 0;
    auto hammer = [&] {
        for (int i = 0; i < 200000; ++i) {
            std::lock_guard guard(lock);
            ++counter;
        }
    };
    std::thread a(hammer), b(hammer);
    a.join();
    b.join();
    EXPECT_EQ(counter, 400000);
    EXPECT_EQ(interposed_yields.load(), 0);
}

// ---- parallel tasks: one queue entry, one pop per execution ------------

namespace {
// Arms tasks[i] as a parallel task of `degree`, as a submit does.
nosv_task* parallel(nosv_task& task, int32_t degree) {
    task.par.make_parallel();
    EXPECT_TRUE(task.par.set_degree(degree));
    EXPECT_TRUE(task.par.arm());
    task.events.store(1); // the queue's count
    return &task;
}
} // namespace

TEST_F(QueueTest, ParallelTaskIsPoppedOncePerExecution) {
    q.push_parallel(parallel(tasks[0], 3), {}, 3, false);
    q.push(t(1), {}, false);
    EXPECT_EQ(slot->ready_total.load(), 4); // each execution is ready work
    // The task stays at the head until its last execution is handed out,
    // each one adding a count of its own but the last (it takes the queue's).
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
    EXPECT_EQ(tasks[0].events.load(), 2u);
    EXPECT_EQ(q.pop(1, 0), &tasks[0]);
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
    EXPECT_EQ(tasks[0].events.load(), 3u);
    EXPECT_EQ(tasks[0].par.queued(), 0u);
    EXPECT_EQ(q.pop(0, 0), &tasks[1]);
    EXPECT_EQ(q.pop(0, 0), nullptr);
    EXPECT_EQ(slot->ready_total.load(), 0);
}

TEST_F(QueueTest, ParallelTaskIsNeverBatched) {
    // Long queues are popped in batches; a parallel task's executions must
    // still go one per pop, so that other CPUs get the rest.
    std::vector<nosv_task> many(64);
    q.push_parallel(parallel(tasks[0], 8), {}, 8, false);
    for (auto& task : many)
        q.push(&task, {}, false);
    nosv_task* out[16];
    EXPECT_EQ(q.pop_batch(0, 0, out, 16), 1u);
    EXPECT_EQ(out[0], &tasks[0]);
    EXPECT_EQ(tasks[0].par.queued(), 7u);
}

TEST_F(QueueTest, WithdrawTakesTheQueuedExecutions) {
    Placement on1{Placement::Kind::Cpu, 1, false};
    q.push_parallel(parallel(tasks[0], 4), on1, 4, false);
    EXPECT_EQ(q.pop(1, 0), &tasks[0]);
    EXPECT_EQ(q.withdraw(&tasks[0], on1), 3u);
    EXPECT_EQ(q.withdraw(&tasks[0], on1), 0u); // nothing left
    EXPECT_EQ(q.pop(1, 0), nullptr);
    EXPECT_EQ(slot->ready_total.load(), 0);
    EXPECT_EQ(slot->ready_any.load(), 0);
    EXPECT_EQ(tasks[0].events.load(), 2u); // the popped one's and the queue's
}

TEST_F(QueueTest, GivenBackExecutionIsQueuedAgain) {
    q.push_parallel(parallel(tasks[0], 2), {}, 2, false);
    EXPECT_EQ(q.pop(0, 0), &tasks[0]); // one left in the queue
    q.push(&tasks[0], {}, true);       // given back: two again, one count dropped
    EXPECT_EQ(tasks[0].par.queued(), 2u);
    EXPECT_EQ(tasks[0].events.load(), 1u);
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
    EXPECT_EQ(q.pop(0, 0), &tasks[0]);
    EXPECT_EQ(q.pop(0, 0), nullptr);
    // The last one out was given back too: the task is queued anew with it.
    q.push(&tasks[0], {}, false);
    EXPECT_EQ(tasks[0].par.queued(), 1u);
    EXPECT_EQ(tasks[0].events.load(), 2u);
    EXPECT_EQ(q.pop(1, 0), &tasks[0]);
    EXPECT_EQ(slot->ready_total.load(), 0);
}
