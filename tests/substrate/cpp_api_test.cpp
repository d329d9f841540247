// The C++ API (include/coexec/coexec.hpp): tasks, task groups, waits from
// inside and outside a task, and errors thrown as coexec::error.
#include "support.hpp"

#include <coexec/coexec.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

namespace {

using coexec::test::ScopedSegment;

TEST(CppApi, TaskRunsAndMayBeSubmittedAgain) {
    ScopedSegment seg;
    coexec::runtime rt;
    coexec::attach_guard main_thread("main");
    coexec::task_type type("once");
    int runs = 0;
    coexec::task t(type, [&] { ++runs; });
    for (int i = 1; i <= 3; ++i) {
        t.submit();
        t.wait();
        EXPECT_EQ(runs, i);
    }
}

TEST(CppApi, TaskGroupRunsEveryTask) {
    ScopedSegment seg;
    coexec::runtime rt;
    coexec::attach_guard main_thread("main");
    coexec::task_type type("sum");
    std::vector<long> partial(500, 0);
    coexec::task_group group(type);
    for (size_t i = 0; i < partial.size(); ++i)
        group.run([&partial, i] { partial[i] = long(i); });
    group.wait();
    EXPECT_EQ(std::accumulate(partial.begin(), partial.end(), 0L), 499L * 500 / 2);
    // The group may be used again after a wait.
    std::atomic<int> more{0};
    for (int i = 0; i < 10; ++i)
        group.run([&more] { more.fetch_add(1, std::memory_order_relaxed); });
    group.wait();
    EXPECT_EQ(more.load(), 10);
}

TEST(CppApi, WaitsInsideATaskPauseIt) {
    ScopedSegment seg;
    coexec::runtime rt;
    coexec::attach_guard main_thread("main");
    coexec::task_type type("nested");
    std::atomic<int> inner{0};
    coexec::task outer(type, [&] {
        coexec::task_group group(type);
        for (int i = 0; i < 50; ++i)
            group.run([&inner] { inner.fetch_add(1, std::memory_order_relaxed); });
        group.wait(); // pauses the outer task; its CPU runs the inner ones
    });
    outer.submit();
    outer.wait();
    EXPECT_EQ(inner.load(), 50);
}

TEST(CppApi, SeveralTasksMayWaitForOneGroup) {
    ScopedSegment seg;
    coexec::runtime rt; // main is not attached: the tasks get both CPUs
    coexec::task_type type("waiters");
    std::atomic<bool> release{false};
    std::atomic<int> waiting{0};
    coexec::task_group group(type);
    group.run([&] {
        while (!release.load(std::memory_order_acquire))
            coexec::this_task::yield();
    });
    auto wait_for_group = [&] {
        waiting.fetch_add(1, std::memory_order_acq_rel);
        group.wait(); // pauses this task
    };
    coexec::task first(type, wait_for_group), second(type, wait_for_group);
    first.submit();
    second.submit();
    ASSERT_TRUE(coexec::test::wait_until([&] { return waiting.load() == 2; }));
    release.store(true, std::memory_order_release);
    first.wait(); // hangs if the group resumed only one of its waiters
    second.wait();
}

// A waiter may destroy the group (or task) as soon as its wait returns,
// while the thread that completed the last task is still on its way out.
// Until the countdown, that thread touched the group after the count had
// reached zero: a use after scope, or a hang on a mutex whose memory was
// reused. It needs that thread to be preempted in a window a few
// instructions wide (example-parallel-sum hung once in ~4,000 runs), so
// this stress loop finds it rarely, and only under ASan.
void destroy_right_after_wait(int rounds) {
    coexec::task_type type("short-lived");
    for (int i = 0; i < rounds; ++i) {
        {
            coexec::task_group group(type);
            group.run([] {});
            group.run([] {});
        } // ~task_group waits, then its memory is gone
        auto t = std::make_unique<coexec::task>(type, [] {});
        t->submit();
        t->wait();
        t.reset(); // frees the task's countdown
    }
}

TEST(CppApi, ObjectsMayBeFreedRightAfterTheirWaitFromATask) {
    ScopedSegment seg;
    coexec::runtime rt;
    coexec::attach_guard main_thread("main"); // waits pause the main task
    destroy_right_after_wait(3000);
}

TEST(CppApi, ObjectsMayBeFreedRightAfterTheirWaitFromAPlainThread) {
    ScopedSegment seg;
    coexec::runtime rt; // not attached: waits block on a condition variable
    destroy_right_after_wait(3000);
}

TEST(CppApi, ErrorsAreThrownWithTheirNosvCode) {
    ScopedSegment seg;
    coexec::runtime rt;
    try {
        coexec::this_task::pause(); // not inside a task
        FAIL() << "pause() outside a task returned";
    } catch (const coexec::error& e) {
        EXPECT_EQ(e.code().category(), coexec::nosv_category());
        EXPECT_EQ(e.code().value(), NOSV_ERR_OUTSIDE_TASK);
    }
}

// An execution of a parallel task may not pause: a wait with tasks
// outstanding throws, and lists nothing that a later arrive() would submit
// (the parallel task would get a stray submit). Execution 1 ends at once and
// frees its CPU for the inner task, which execution 0 then sees done. The
// inner task holds off until the first wait is over, so that wait always
// finds it outstanding.
struct ParallelWaits {
    coexec::task_type* inner = nullptr;
    std::atomic<bool> first_wait_over{false};
    std::atomic<int> executions{0}, ran{0}, threw{0}, other_errors{0};
};

void parallel_execution(nosv_task_t task) {
    auto& w = **static_cast<ParallelWaits**>(nosv_get_task_metadata(task));
    w.executions.fetch_add(1);
    if (nosv_get_execution_id() != 0) return;
    coexec::task_group group(*w.inner);
    group.run([&w] {
        while (!w.first_wait_over.load()) {
        }
        w.ran.fetch_add(1);
    });
    try {
        group.wait();
    } catch (const coexec::error& e) {
        (e.code().value() == NOSV_ERR_INVALID_OPERATION ? w.threw : w.other_errors).fetch_add(1);
    }
    w.first_wait_over.store(true);
    // Until the inner task has completed, a wait throws; then it returns,
    // even here, since nothing is outstanding.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    for (;;) {
        try {
            group.wait();
            return;
        } catch (const coexec::error&) {
        }
        // The group cannot go away with its task outstanding: end the test
        // binary rather than hang it.
        if (std::chrono::steady_clock::now() > deadline) std::abort();
    }
}

TEST(CppApi, AWaitInAParallelExecutionThrowsAndLeavesNoStraySubmit) {
    ScopedSegment seg;
    coexec::runtime rt;
    coexec::attach_guard main_thread("main");
    coexec::task_type inner("inner");
    ParallelWaits w;
    w.inner = &inner;
    nosv_task_type_t type = nullptr;
    ASSERT_EQ(nosv_type_init(&type, parallel_execution, nullptr, nullptr, "parallel", nullptr,
                             nullptr, NOSV_TYPE_INIT_NONE),
              NOSV_SUCCESS);
    nosv_task_t t = nullptr;
    ASSERT_EQ(nosv_create(&t, type, sizeof(ParallelWaits*), NOSV_CREATE_PARALLEL), NOSV_SUCCESS);
    *static_cast<ParallelWaits**>(nosv_get_task_metadata(t)) = &w;
    nosv_set_task_degree(t, 2);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    // A stray submit would run the task again, on its own: it came before
    // these plain tasks, which run one after the other, so it is taken
    // before them.
    coexec::task_type turn("turn");
    for (int i = 0; i < 2; ++i) {
        coexec::task later(turn, [] {});
        later.submit();
        later.wait();
    }
    EXPECT_EQ(w.executions.load(), 2);
    EXPECT_EQ(w.threw.load(), 1);
    EXPECT_EQ(w.other_errors.load(), 0);
    EXPECT_EQ(w.ran.load(), 1);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), NOSV_SUCCESS);
}

} // namespace
