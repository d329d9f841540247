// CondWaiters, the PoCL adapter's condition-variable waits as paused tasks,
// on a real coexec instance: wake-ups are never lost, signal and broadcast
// wake whom they should, and submits that other code banked for the task
// survive the wait.
#include "adapters/pocl/src/cond_waiters.hpp"
#include "core/tasks/task.hpp"
#include "tests/substrate/support.hpp"

#include <gtest/gtest.h>
#include <nosv.h>
#include <pthread.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace {

using coexec::pocl::CondWaiters;
using coexec::test::Instance;
using coexec::test::wait_until;
using coexec::test::wait_while_moving;

// What the interposed pthread_cond_signal / _broadcast do (interpose.cpp).
void signal_one(pthread_cond_t* cond) {
    if (CondWaiters::instance().wake(cond, false) == 0) pthread_cond_signal(cond);
}
void signal_all(pthread_cond_t* cond) {
    CondWaiters::instance().wake(cond, true);
    pthread_cond_broadcast(cond);
}

// Whether `task` is paused in nosv_pause with no submit banked for it, so
// that only a submit can resume it. The public API has no such query; the
// task's status word (core/tasks/task_status.hpp) tells.
bool parked(nosv_task_t task) {
    return task != nullptr && task->status.state() == coexec::core::TaskState::Paused;
}

// A counter guarded by a mutex, with a condition variable, as PoCL keeps
// its queues and events.
struct Gate {
    pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    int tickets = 0;
    int waiting = 0; // takers inside a wait, which they entered holding `mutex`

    // Waits for a ticket and takes it; `coexec` picks CondWaiters, else the
    // real condvar.
    void take(bool coexec) {
        pthread_mutex_lock(&mutex);
        ++waiting;
        while (tickets == 0) {
            if (coexec)
                CondWaiters::instance().wait(&cond, &mutex);
            else
                pthread_cond_wait(&cond, &mutex);
        }
        --waiting;
        --tickets;
        pthread_mutex_unlock(&mutex);
    }
    // How many takers wait. Seen under `mutex`, a count includes only those
    // that let go of it inside their wait: registered with CondWaiters, or
    // queued in the real condvar, so that a signal from now on reaches them.
    int waiters() {
        pthread_mutex_lock(&mutex);
        const int n = waiting;
        pthread_mutex_unlock(&mutex);
        return n;
    }
    void give(int n, bool all) {
        pthread_mutex_lock(&mutex);
        tickets += n;
        pthread_mutex_unlock(&mutex);
        if (all)
            signal_all(&cond);
        else
            for (int i = 0; i < n; ++i)
                signal_one(&cond);
    }
};

// A thread attached to coexec for its lifetime.
class CoexecThread {
  public:
    template <class Body>
    explicit CoexecThread(Body body)
        : thread_([this, body] {
              nosv_task_t task = nullptr;
              EXPECT_EQ(nosv_attach(&task, nullptr, "waiter", NOSV_ATTACH_NONE), NOSV_SUCCESS);
              task_.store(task);
              body();
              EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
              done_.store(true);
          }) {}
    ~CoexecThread() { thread_.join(); }
    bool done() const { return done_.load(); }
    nosv_task_t task() const { return task_.load(); }

  private:
    std::atomic<nosv_task_t> task_{nullptr};
    std::atomic<bool> done_{false};
    std::thread thread_;
};

// Two coexec threads hand a token back and forth through two gates many
// times; a single lost wake-up stops the exchange. (On a loaded machine the
// whole exchange may take longer than the test's patience; it must not
// stand still that long.)
TEST(CondWaiters, APingPongLosesNoWakeUp) {
    Instance instance("", /*attach=*/false);
    constexpr int kRounds = 20000;
    Gate ping, pong;
    std::atomic<int> rounds{0};
    {
        CoexecThread a([&] {
            for (int i = 0; i < kRounds; ++i) {
                ping.give(1, false);
                pong.take(true);
                rounds.store(i + 1, std::memory_order_relaxed);
            }
        });
        CoexecThread b([&] {
            for (int i = 0; i < kRounds; ++i) {
                ping.take(true);
                pong.give(1, i % 2 == 0);
            }
        });
        ASSERT_TRUE(wait_while_moving([&] { return a.done() && b.done(); },
                                      [&] { return rounds.load(std::memory_order_relaxed); }))
            << "the exchange stopped after " << rounds.load() << " rounds: ping " << ping.tickets
            << ", pong " << pong.tickets;
    }
}

// A signal lets one waiter through, a broadcast all of them; waiters in the
// real condvar (threads outside coexec) share the same condition variable.
// Every one of them waits before the first signal.
TEST(CondWaiters, SignalAndBroadcastReachEveryKindOfWaiter) {
    Instance instance("", /*attach=*/false);
    Gate gate;
    std::atomic<int> through{0};
    std::vector<std::unique_ptr<CoexecThread>> coexec;
    std::vector<std::thread> plain;
    for (int i = 0; i < 3; ++i) {
        coexec.push_back(std::make_unique<CoexecThread>([&] {
            gate.take(true);
            through.fetch_add(1);
        }));
        plain.emplace_back([&] {
            gate.take(false);
            through.fetch_add(1);
        });
    }
    EXPECT_TRUE(wait_until([&] { return gate.waiters() == 6; })) << gate.waiters() << " waiting";
    gate.give(1, false);
    EXPECT_TRUE(wait_until([&] { return through.load() == 1; }));
    gate.give(2, false);
    EXPECT_TRUE(wait_until([&] { return through.load() == 3; }));
    gate.give(3, true);
    EXPECT_TRUE(wait_until([&] { return through.load() == 6; })) << through.load() << " through";
    // After a failure above, let everyone through so that the threads end.
    if (through.load() != 6) gate.give(6, true);
    for (auto& t : plain)
        t.join();
    coexec.clear();
}

// A submit banked for the task before the wait (libomp's or oneTBB's sleep
// protocol, or the application's own nosv_submit) still pays for the task's
// next pause after the wait: the wait neither eats it nor adds one.
TEST(CondWaiters, ASubmitBankedBeforeTheWaitSurvivesIt) {
    Instance instance("", /*attach=*/false);
    Gate gate, release;
    std::atomic<bool> paused_once{false}, paused_twice{false};
    CoexecThread waiter([&] {
        ASSERT_EQ(nosv_submit(nosv_self(), NOSV_SUBMIT_NONE), NOSV_SUCCESS); // banked
        gate.take(true);
        // The banked submit pays for this pause...
        ASSERT_EQ(nosv_pause(NOSV_PAUSE_NONE), NOSV_SUCCESS);
        paused_once.store(true);
        // ...and nothing else is banked: this one waits for the test's submit.
        ASSERT_EQ(nosv_pause(NOSV_PAUSE_NONE), NOSV_SUCCESS);
        paused_twice.store(true);
        // Keeps the task alive until the test has looked at it (a wait here
        // ends only when woken, whatever is banked).
        release.take(true);
    });
    // The wait's first pause spent the banked submit, its second one parked.
    EXPECT_TRUE(wait_until([&] { return parked(waiter.task()); })) << "the wait never paused";
    gate.give(1, false);
    // A pause that the banked submit no longer pays for would park here.
    const bool first_returned = wait_until([&] { return paused_once.load(); });
    EXPECT_TRUE(first_returned) << "the wait ate the banked submit";
    if (!first_returned) nosv_submit(waiter.task(), NOSV_SUBMIT_NONE);
    // The wake made the task ready, so it parks next in the second pause;
    // an extra submit that the wait left banked would pay for that one, and
    // the task would park in the release wait instead.
    EXPECT_TRUE(wait_until([&] { return parked(waiter.task()); }));
    EXPECT_FALSE(paused_twice.load()) << "the wait left an extra submit banked";
    if (!paused_twice.load()) nosv_submit(waiter.task(), NOSV_SUBMIT_NONE);
    release.give(1, false);
    ASSERT_TRUE(wait_until([&] { return waiter.done(); }));
}

// Stray submits that arrive during the wait (not the signaller's) do not end
// it; they stay banked for later pauses, one each.
TEST(CondWaiters, StraySubmitsDuringTheWaitStayBanked) {
    Instance instance("", /*attach=*/false);
    Gate gate, release;
    std::atomic<bool> through{false};
    std::atomic<int> later_pauses{0};
    CoexecThread waiter([&] {
        // One wait, without the usual loop on a predicate: only a wake-up
        // may end it.
        pthread_mutex_lock(&gate.mutex);
        CondWaiters::instance().wait(&gate.cond, &gate.mutex);
        pthread_mutex_unlock(&gate.mutex);
        through.store(true);
        for (int i = 0; i < 2; ++i) {
            ASSERT_EQ(nosv_pause(NOSV_PAUSE_NONE), NOSV_SUCCESS);
            later_pauses.fetch_add(1);
        }
        // Keeps the task alive until the test has looked at it.
        release.take(true);
    });
    // Parked in the wait: its only pause before `through`.
    EXPECT_TRUE(wait_until([&] { return parked(waiter.task()); })) << "the wait never paused";
    ASSERT_EQ(nosv_submit(waiter.task(), NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(waiter.task(), NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    // The first stray made the task ready and the second is banked: the task
    // parks again only once both are spent, in the wait unless one ended it.
    EXPECT_TRUE(wait_until([&] { return through.load() || parked(waiter.task()); }))
        << "the task never parked again";
    EXPECT_FALSE(through.load()) << "a stray submit ended the wait";
    // A signal finds it registered still.
    EXPECT_EQ(CondWaiters::instance().wake(&gate.cond, false), 1);
    // The wake made the task ready; the two strays, banked again, pay for
    // the two later pauses, and it parks next in the release wait. A stray
    // the wait lost would leave it parked in a later pause.
    EXPECT_TRUE(wait_until([&] { return parked(waiter.task()); }));
    EXPECT_EQ(later_pauses.load(), 2) << "the strays were not banked";
    // After that failure, end the waiter's pauses so that the test ends.
    for (int i = later_pauses.load(); i < 2; ++i)
        nosv_submit(waiter.task(), NOSV_SUBMIT_NONE);
    release.give(1, false);
    ASSERT_TRUE(wait_until([&] { return waiter.done(); }));
}

// A process forked while a waiter is registered (Python's multiprocessing
// does that) has no waiters: its signals find none, and take no lock that a
// thread of the parent held at the fork.
TEST(CondWaiters, AForkedChildHasNoWaiters) {
    Instance instance("", /*attach=*/false);
    Gate gate;
    CoexecThread waiter([&] { gate.take(true); });
    // Registered with CondWaiters: it let go of the gate's mutex in the wait.
    ASSERT_TRUE(wait_until([&] { return gate.waiters() == 1; }));
    // Its exit code is how many waiters the child woke.
    const pid_t child =
        coexec::test::fork_child([&] { return CondWaiters::instance().wake(&gate.cond, true); });
    EXPECT_NE(child, -1);
    if (child != -1) {
        EXPECT_EQ(coexec::test::wait_child(child), 0) << "the child woke waiters of its parent";
    }
    gate.give(1, false);
    ASSERT_TRUE(wait_until([&] { return waiter.done(); }));
}

} // namespace
