// The C++ API (include/coexec/coexec.hpp): tasks, task groups, waits from
// inside and outside a task, and errors thrown as coexec::error.
#include "support.hpp"

#include <coexec/coexec.hpp>

#include <atomic>
#include <memory>
#include <numeric>
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

} // namespace
