// nosv/compat.h on the real runtime: the primitives block the task, not its
// thread (on one CPU, with preemption off, a blocked thread would hold the
// CPU that the task it waits for needs: those tests would hang and their
// forked child be killed); mutual exclusion, condition signals and timeouts,
// barriers, read-write locks, nosv_pthread_create and the POSIX errors.
#include "support.hpp"

#include <nosv.h>
#include <nosv/compat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

using namespace coexec;
using namespace std::chrono_literals;

namespace {

using test::Instance;
using test::yield_until;

// ---- tasks that run a closure ------------------------------------------------

struct Closure {
    std::function<void()> body;
    std::atomic<int>* finished;
};

void run_closure(nosv_task_t t) {
    (*static_cast<Closure**>(nosv_get_task_metadata(t)))->body();
}
void completed_closure(nosv_task_t t) {
    Closure* c = *static_cast<Closure**>(nosv_get_task_metadata(t));
    std::atomic<int>* finished = c->finished;
    delete c;
    nosv_destroy(t, NOSV_DESTROY_NONE);
    finished->fetch_add(1);
}

// A task type whose tasks run closures and count themselves in `finished`
// when complete (then free themselves).
class Spawner {
  public:
    Spawner() {
        EXPECT_EQ(nosv_type_init(&type_, run_closure, nullptr, completed_closure, "compat", nullptr,
                                 nullptr, NOSV_TYPE_INIT_NONE),
                  NOSV_SUCCESS);
    }
    ~Spawner() { nosv_type_destroy(type_, NOSV_TYPE_DESTROY_NONE); }
    int spawn(std::function<void()> body) {
        nosv_task_t t;
        if (nosv_create(&t, type_, sizeof(Closure*), NOSV_CREATE_NONE) != NOSV_SUCCESS) return -1;
        *static_cast<Closure**>(nosv_get_task_metadata(t)) =
            new Closure{std::move(body), &finished};
        return nosv_submit(t, NOSV_SUBMIT_NONE);
    }
    std::atomic<int> finished{0};

  private:
    nosv_task_type_t type_ = nullptr;
};

// A few scheduling rounds for whatever is ready on this CPU.
void let_others_run() {
    for (int i = 0; i < 20; ++i)
        nosv_yield(NOSV_YIELD_NONE);
}

// A deadline for nosv_cond_timedwait, which reads CLOCK_MONOTONIC as nOS-V does.
timespec monotonic_in(std::chrono::nanoseconds d) {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const int64_t ns = int64_t(now.tv_nsec) + d.count();
    return timespec{now.tv_sec + time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
}

// For the forked children of on_one_cpu: reports and ends the child with
// status 1 at once (tasks may still wait on objects in the caller's frame).
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond);                \
            std::_Exit(1);                                                                         \
        }                                                                                          \
    } while (0)

// Runs `body` in a forked child that joined an instance managing only CPU
// 0, with preemption off, as an attached task (it holds that CPU). Returns
// the child's status: 0 when body returned 0, -1 when it hung.
int on_one_cpu(const std::function<int()>& body) {
    test::ScopedSegment seg("topology.binding=0,scheduler.preempt_after_ns=0");
    pid_t pid = test::fork_child([&] {
        nosv_task_t main;
        if (nosv_init() != NOSV_SUCCESS) return 90;
        if (nosv_attach(&main, nullptr, "main", NOSV_ATTACH_NONE) != NOSV_SUCCESS) return 91;
        const int rc = body();
        if (nosv_detach(NOSV_DETACH_NONE) != NOSV_SUCCESS) return 92;
        if (nosv_shutdown() != NOSV_SUCCESS) return 93;
        return rc;
    });
    return test::wait_child(pid, 30s);
}

void one_cpu_case(const std::function<int()>& body) {
    EXPECT_EQ(on_one_cpu(body), 0) << "-1: it hung (a wait blocked the thread, not the task?)";
}

// ---- one CPU: a waiting task gives its CPU away ---------------------------

TEST(CompatOneCpu, ATaskBlockedInMutexLockLetsTheHolderRunAndRelease) {
    one_cpu_case([] {
        Spawner sp;
        nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
        std::atomic<int> entered{0}, got{0};
        REQUIRE(nosv_mutex_lock(&m) == 0);
        REQUIRE(sp.spawn([&] {
            entered = 1;
            nosv_mutex_lock(&m); // held by main, which needs this CPU
            got = 1;
            nosv_mutex_unlock(&m);
        }) == NOSV_SUCCESS);
        // The task runs, blocks, and the CPU comes back to us.
        REQUIRE(yield_until([&] { return entered.load() == 1; }));
        let_others_run();
        REQUIRE(got.load() == 0);
        REQUIRE(nosv_mutex_trylock(&m) == EBUSY);
        REQUIRE(nosv_mutex_unlock(&m) == 0); // hands it to the task
        REQUIRE(yield_until([&] { return sp.finished.load() == 1; }));
        REQUIRE(got.load() == 1);
        REQUIRE(nosv_mutex_destroy(&m) == 0);
        return 0;
    });
}

TEST(CompatOneCpu, ATaskBlockedInCondWaitLetsTheSignallerRun) {
    one_cpu_case([] {
        Spawner sp;
        nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
        nosv_cond_t c = NOSV_COND_INITIALIZER;
        bool ready = false; // guarded by m
        std::atomic<int> waiting{0};
        REQUIRE(sp.spawn([&] {
            nosv_mutex_lock(&m);
            waiting = 1;
            while (!ready)
                nosv_cond_wait(&c, &m);
            nosv_mutex_unlock(&m);
        }) == NOSV_SUCCESS);
        REQUIRE(yield_until([&] { return waiting.load() == 1; }));
        // The waiter released the mutex while it waits.
        REQUIRE(nosv_mutex_lock(&m) == 0);
        ready = true;
        REQUIRE(nosv_cond_signal(&c) == 0);
        REQUIRE(nosv_mutex_unlock(&m) == 0);
        REQUIRE(yield_until([&] { return sp.finished.load() == 1; }));
        REQUIRE(nosv_cond_destroy(&c) == 0);
        return 0;
    });
}

// A task in a timed wait gives its CPU away too: the main task keeps
// running meanwhile (its deadline ends one wait, its signal the other).
TEST(CompatOneCpu, ATaskInATimedWaitLetsOthersRun) {
    one_cpu_case([] {
        Spawner sp;
        nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
        nosv_cond_t c = NOSV_COND_INITIALIZER;
        bool ready = false; // guarded by m
        std::atomic<int> waiting{0}, first_rc{-1}, second_rc{-1};
        REQUIRE(sp.spawn([&] {
            nosv_mutex_lock(&m);
            waiting = 1;
            timespec soon = monotonic_in(30ms);
            first_rc = nosv_cond_timedwait(&c, &m, &soon);
            waiting = 2;
            timespec late = monotonic_in(20s);
            const uint64_t late_ns = test::now_ns() + 20'000'000'000u;
            while (!ready && test::now_ns() < late_ns)
                second_rc = nosv_cond_timedwait(&c, &m, &late);
            nosv_mutex_unlock(&m);
        }) == NOSV_SUCCESS);
        REQUIRE(yield_until([&] { return waiting.load() == 2; }));
        REQUIRE(first_rc.load() == 0); // its deadline ended it (nOS-V returns 0)
        const uint64_t start = test::now_ns();
        REQUIRE(nosv_mutex_lock(&m) == 0);
        ready = true;
        REQUIRE(nosv_cond_signal(&c) == 0);
        REQUIRE(nosv_mutex_unlock(&m) == 0);
        REQUIRE(yield_until([&] { return sp.finished.load() == 1; }));
        REQUIRE(second_rc.load() == 0);
        REQUIRE(test::now_ns() - start < 10'000'000'000u);
        return 0;
    });
}

// The race between a deadline and a signal, made deterministic: a timed
// waiter's deadline passes while we hold the only CPU, so it cannot run
// and withdraw; our signal then picks it. The signal counts as its wake-up:
// the untimed waiter behind it must stay asleep (the signal is not
// delivered twice), and the waiter's next nosv_waitfor must sleep in full
// (the signal's early wake-up is not left behind).
TEST(CompatOneCpu, ASignalAfterTheDeadlineBeforeTheWaiterRanCountsAsAWakeUp) {
    one_cpu_case([] {
        Spawner sp;
        nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
        nosv_cond_t c = NOSV_COND_INITIALIZER;
        bool release_untimed = false; // guarded by m
        std::atomic<int> waiting{0}, timed_rc{-1};
        std::atomic<uint64_t> slept_after{0}, deadline_ns{0};
        REQUIRE(sp.spawn([&] {
            nosv_mutex_lock(&m);
            waiting.fetch_add(1);
            timespec soon = monotonic_in(20ms);
            deadline_ns = uint64_t(soon.tv_sec) * 1'000'000'000u + uint64_t(soon.tv_nsec);
            timed_rc = nosv_cond_timedwait(&c, &m, &soon);
            nosv_mutex_unlock(&m);
            uint64_t slept = 0;
            nosv_waitfor(30'000'000, &slept);
            slept_after = slept;
        }) == NOSV_SUCCESS);
        REQUIRE(sp.spawn([&] {
            nosv_mutex_lock(&m);
            waiting.fetch_add(1);
            while (!release_untimed)
                nosv_cond_wait(&c, &m);
            nosv_mutex_unlock(&m);
        }) == NOSV_SUCCESS);
        // Both wait: the untimed one took the mutex once the timed one, in
        // its wait, let go of it.
        REQUIRE(yield_until([&] { return waiting.load() == 2; }));
        // A sleep in the OS keeps the CPU: the deadline passes meanwhile.
        while (test::now_ns() <= deadline_ns.load())
            std::this_thread::sleep_for(1ms);
        REQUIRE(nosv_mutex_lock(&m) == 0);
        REQUIRE(nosv_cond_signal(&c) == 0);
        REQUIRE(nosv_mutex_unlock(&m) == 0);
        REQUIRE(yield_until([&] { return sp.finished.load() == 1; }));
        REQUIRE(timed_rc.load() == 0);
        REQUIRE(slept_after.load() >= 30'000'000u);
        let_others_run();
        REQUIRE(sp.finished.load() == 1); // the untimed one still waits
        REQUIRE(nosv_mutex_lock(&m) == 0);
        release_untimed = true;
        REQUIRE(nosv_cond_broadcast(&c) == 0);
        REQUIRE(nosv_mutex_unlock(&m) == 0);
        REQUIRE(yield_until([&] { return sp.finished.load() == 2; }));
        return 0;
    });
}

TEST(CompatOneCpu, SignalWakesOneWaiterAndBroadcastTheRest) {
    one_cpu_case([] {
        Spawner sp;
        constexpr int n = 5;
        nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
        nosv_cond_t c = NOSV_COND_INITIALIZER;
        int tickets = 0; // guarded by m
        std::atomic<int> waiting{0};
        for (int i = 0; i < n; ++i)
            REQUIRE(sp.spawn([&] {
                nosv_mutex_lock(&m);
                waiting.fetch_add(1);
                while (tickets == 0)
                    nosv_cond_wait(&c, &m);
                --tickets;
                nosv_mutex_unlock(&m);
            }) == NOSV_SUCCESS);
        REQUIRE(yield_until([&] { return waiting.load() == n; }));
        REQUIRE(nosv_cond_destroy(&c) == EBUSY); // waiters are queued
        nosv_mutex_lock(&m);
        tickets = 1;
        nosv_cond_signal(&c);
        nosv_mutex_unlock(&m);
        REQUIRE(yield_until([&] { return sp.finished.load() == 1; }));
        let_others_run();
        REQUIRE(sp.finished.load() == 1); // only one woke
        nosv_mutex_lock(&m);
        tickets = n - 1;
        nosv_cond_broadcast(&c);
        nosv_mutex_unlock(&m);
        REQUIRE(yield_until([&] { return sp.finished.load() == n; }));
        REQUIRE(nosv_cond_destroy(&c) == 0);
        return 0;
    });
}

TEST(CompatOneCpu, BarrierReleasesAllEachRound) {
    one_cpu_case([] {
        Spawner sp;
        constexpr int tasks = 6, rounds = 3;
        nosv_barrier_t b;
        REQUIRE(nosv_barrier_init(&b, nullptr, tasks + 1) == 0);
        std::atomic<int> zero{0}, other{0};
        std::atomic<int> arrivals[rounds] = {};
        auto meet = [&](int r) {
            arrivals[r]++;
            (nosv_barrier_wait(&b) == 0 ? zero : other)++;
            REQUIRE(arrivals[r].load() == tasks + 1); // nobody left early
        };
        for (int i = 0; i < tasks; ++i)
            REQUIRE(sp.spawn([&] {
                for (int r = 0; r < rounds; ++r)
                    meet(r);
            }) == NOSV_SUCCESS);
        for (int r = 0; r < rounds; ++r)
            meet(r); // pauses us too: the tasks run
        REQUIRE(yield_until([&] { return sp.finished.load() == tasks; }));
        REQUIRE(zero.load() == rounds * (tasks + 1));
        REQUIRE(other.load() == 0);
        REQUIRE(nosv_barrier_destroy(&b) == 0);
        return 0;
    });
}

// Writers first, as in nOS-V: a writer waits for the readers that hold the
// lock without holding the CPU, and readers that come after it wait too,
// until it has been in.
TEST(CompatOneCpu, AWaitingWriterGoesBeforeLaterReaders) {
    one_cpu_case([] {
        Spawner sp;
        nosv_rwlock_t l = NOSV_RWLOCK_INITIALIZER;
        std::atomic<int> order{0}, writer_in{0}, reader_in{0}, writer_waits{0};
        REQUIRE(nosv_rwlock_rdlock(&l) == 0);
        REQUIRE(sp.spawn([&] {
            writer_waits = 1;
            nosv_rwlock_wrlock(&l);
            writer_in = ++order;
            nosv_rwlock_unlock(&l);
        }) == NOSV_SUCCESS);
        REQUIRE(yield_until([&] { return writer_waits.load() == 1; }));
        let_others_run();                            // the writer queues
        REQUIRE(nosv_rwlock_tryrdlock(&l) == EBUSY); // a writer waits
        REQUIRE(sp.spawn([&] {
            nosv_rwlock_rdlock(&l);
            reader_in = ++order;
            nosv_rwlock_unlock(&l);
        }) == NOSV_SUCCESS);
        let_others_run();
        REQUIRE(writer_in.load() == 0);
        REQUIRE(reader_in.load() == 0); // behind the waiting writer
        REQUIRE(nosv_rwlock_trywrlock(&l) == EBUSY);
        REQUIRE(nosv_rwlock_destroy(&l) == EBUSY);
        REQUIRE(nosv_rwlock_unlock(&l) == 0); // the writer goes in, then the reader
        REQUIRE(yield_until([&] { return sp.finished.load() == 2; }));
        REQUIRE(writer_in.load() == 1);
        REQUIRE(reader_in.load() == 2);
        REQUIRE(nosv_rwlock_destroy(&l) == 0);
        return 0;
    });
}

// ---- every CPU -------------------------------------------------------------

// Runs `body` on a new thread attached to coexec (a task context, as the
// locking calls need), and joins it.
template <class Body>
void on_attached_thread(Body body) {
    std::thread([&] {
        nosv_task_t self = nullptr;
        ASSERT_EQ(nosv_attach(&self, nullptr, "thread", NOSV_ATTACH_NONE), NOSV_SUCCESS);
        body();
        EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
    }).join();
}

TEST(Compat, MutexExcludesUnderContentionFromTasksAndAThread) {
    Instance in;
    Spawner sp;
    constexpr int tasks = 16, per_task = 1000, per_thread = 5000;
    nosv_mutex_t m;
    ASSERT_EQ(nosv_mutex_init(&m, nullptr), 0);
    long counter = 0; // guarded by m
    std::atomic<int> inside{0}, overlaps{0};
    auto critical = [&] {
        if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
        ++counter;
        inside.fetch_sub(1);
    };
    for (int i = 0; i < tasks; ++i)
        ASSERT_EQ(sp.spawn([&] {
            for (int k = 0; k < per_task; ++k) {
                nosv_mutex_lock(&m);
                critical();
                nosv_mutex_unlock(&m);
            }
        }),
                  NOSV_SUCCESS);
    // An attached thread shares the mutex with the tasks. It holds a CPU, so
    // it yields to coexec while it retries a trylock: a yield to the OS
    // would keep the CPU from the tasks, which hold the mutex in turn.
    std::thread plain([&] {
        nosv_task_t self = nullptr;
        ASSERT_EQ(nosv_attach(&self, nullptr, "thread", NOSV_ATTACH_NONE), NOSV_SUCCESS);
        for (int k = 0; k < per_thread; ++k) {
            if (k % 2 == 0)
                nosv_mutex_lock(&m);
            else
                while (nosv_mutex_trylock(&m) == EBUSY)
                    EXPECT_EQ(nosv_yield(NOSV_YIELD_NONE), NOSV_SUCCESS);
            critical();
            nosv_mutex_unlock(&m);
        }
        EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
    });
    for (int k = 0; k < per_task; ++k) {
        nosv_mutex_lock(&m);
        critical();
        nosv_mutex_unlock(&m);
    }
    EXPECT_TRUE(yield_until([&] { return sp.finished.load() == tasks; }));
    plain.join();
    EXPECT_EQ(overlaps.load(), 0);
    EXPECT_EQ(counter, long(tasks + 1) * per_task + per_thread);
    EXPECT_EQ(nosv_mutex_destroy(&m), 0);
}

TEST(Compat, TrylockIsBusyWhileHeldAndFreeAfter) {
    Instance in;
    nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
    EXPECT_EQ(nosv_mutex_trylock(&m), 0);
    EXPECT_EQ(nosv_mutex_trylock(&m), EBUSY);
    on_attached_thread([&] { EXPECT_EQ(nosv_mutex_trylock(&m), EBUSY); });
    EXPECT_EQ(nosv_mutex_destroy(&m), EBUSY);
    EXPECT_EQ(nosv_mutex_unlock(&m), 0);
    EXPECT_EQ(nosv_mutex_unlock(&m), EPERM);
    on_attached_thread([&] {
        EXPECT_EQ(nosv_mutex_trylock(&m), 0);
        EXPECT_EQ(nosv_mutex_unlock(&m), 0);
    });
    EXPECT_EQ(nosv_mutex_destroy(&m), 0);
}

// As nOS-V reads it, a deadline is tv_sec seconds plus tv_nsec nanoseconds,
// even unnormalised (nOS-V's own tests add to tv_nsec without carrying);
// a deadline at the end of time waits for the signal, with no overflow.
TEST(Compat, CondTimedwaitReadsAnUnnormalisedDeadlineAsNosvDoes) {
    Instance in;
    nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
    nosv_cond_t c = NOSV_COND_INITIALIZER;
    ASSERT_EQ(nosv_mutex_lock(&m), 0);
    timespec soon = monotonic_in(0ms);
    soon.tv_sec -= 1;
    soon.tv_nsec += 1'050'000'000; // 50 ms from now
    uint64_t start = test::now_ns();
    EXPECT_EQ(nosv_cond_timedwait(&c, &m, &soon), 0);
    EXPECT_GE(test::now_ns() - start, 49'000'000u);
    timespec past = monotonic_in(0ms);
    past.tv_nsec -= 100'000'000'000; // 100 s ago
    start = test::now_ns();
    EXPECT_EQ(nosv_cond_timedwait(&c, &m, &past), 0);
    EXPECT_LT(test::now_ns() - start, 5'000'000'000u); // at once, not 100 s late
    EXPECT_EQ(nosv_mutex_unlock(&m), 0);

    std::atomic<bool> waiting{false}, woken{false};
    Spawner sp;
    ASSERT_EQ(sp.spawn([&] {
        nosv_mutex_lock(&m);
        waiting = true;
        timespec never{std::numeric_limits<time_t>::max(), 999'999'999};
        while (!woken)
            nosv_cond_timedwait(&c, &m, &never);
        nosv_mutex_unlock(&m);
    }),
              NOSV_SUCCESS);
    ASSERT_TRUE(yield_until([&] { return waiting.load(); }));
    ASSERT_EQ(nosv_mutex_lock(&m), 0);
    woken = true;
    EXPECT_EQ(nosv_cond_signal(&c), 0);
    EXPECT_EQ(nosv_mutex_unlock(&m), 0);
    EXPECT_TRUE(yield_until([&] { return sp.finished.load() == 1; }));
    EXPECT_EQ(nosv_cond_destroy(&c), 0);
}

// The timed wait, from a task and from an attached thread: the deadline ends
// it, no sooner, with 0 (as in nOS-V) and the mutex held; a signal long
// before it ends it at once; and no wake-up is left over for the task's
// next nosv_waitfor.
TEST(Compat, CondTimedwaitTimesOutOrEndsEarlyOnASignal) {
    Instance in;
    nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
    nosv_cond_t c = NOSV_COND_INITIALIZER;
    auto timed_out = [&] {
        nosv_mutex_lock(&m);
        const uint64_t start = test::now_ns();
        timespec deadline = monotonic_in(50ms);
        EXPECT_EQ(nosv_cond_timedwait(&c, &m, &deadline), 0);
        EXPECT_GE(test::now_ns() - start, 49'000'000u);
        EXPECT_EQ(nosv_mutex_trylock(&m), EBUSY); // relocked
        nosv_mutex_unlock(&m);
    };
    timed_out();                   // a task
    on_attached_thread(timed_out); // an attached thread

    auto signalled = [&](bool pthread_variant) {
        std::atomic<bool> waiting{false};
        pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
        // A plain thread: signalling needs no task context; with the nosv
        // mutex it attaches to lock it.
        std::thread signaller([&, waiter_tid = ::gettid()] {
            nosv_task_t self = nullptr;
            if (!pthread_variant) {
                ASSERT_EQ(nosv_attach(&self, nullptr, "signaller", NOSV_ATTACH_NONE), NOSV_SUCCESS);
            }
            while (!waiting.load())
                std::this_thread::sleep_for(1ms);
            // Signalled while it sleeps (the mutex alone would order the
            // signal after the wait began, asleep or not).
            EXPECT_TRUE(test::wait_until_asleep(waiter_tid));
            if (pthread_variant)
                pthread_mutex_lock(&pm);
            else
                nosv_mutex_lock(&m);
            EXPECT_EQ(nosv_cond_signal(&c), 0);
            if (pthread_variant)
                pthread_mutex_unlock(&pm);
            else
                nosv_mutex_unlock(&m);
            if (!pthread_variant) {
                EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
            }
        });
        if (pthread_variant)
            pthread_mutex_lock(&pm);
        else
            nosv_mutex_lock(&m);
        waiting = true;
        const uint64_t start = test::now_ns();
        timespec deadline = monotonic_in(10s);
        EXPECT_EQ(pthread_variant ? nosv_cond_timedwait_pthread(&c, &pm, &deadline)
                                  : nosv_cond_timedwait(&c, &m, &deadline),
                  0);
        EXPECT_LT(test::now_ns() - start, 5'000'000'000u);
        if (pthread_variant)
            pthread_mutex_unlock(&pm);
        else
            nosv_mutex_unlock(&m);
        signaller.join();
    };
    signalled(false);
    signalled(true);
    // Nothing left over: a plain nosv_waitfor sleeps its full time.
    uint64_t slept = 0;
    ASSERT_EQ(nosv_waitfor(20'000'000, &slept), NOSV_SUCCESS);
    EXPECT_GE(slept, 20'000'000u);
    EXPECT_EQ(nosv_cond_destroy(&c), 0);
}

// Timeouts racing with signals: consumers wait with deadlines of a
// millisecond or so while producers signal; every item is consumed (no
// signal lost to a waiter that timed out), and afterwards each consumer's
// nosv_waitfor sleeps its full time (no wake-up delivered twice or left).
TEST(Compat, TimeoutsRacingWithSignalsLoseNothingAndLeaveNothing) {
    Instance in;
    Spawner sp;
    constexpr int consumers = 6, producers = 2, items = 1500;
    nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
    nosv_cond_t c = NOSV_COND_INITIALIZER;
    int available = 0, produced = 0, consumed = 0; // guarded by m
    std::atomic<int> short_sleeps{0}, bad_rc{0};
    for (int i = 0; i < consumers; ++i)
        ASSERT_EQ(sp.spawn([&, i] {
            nosv_mutex_lock(&m);
            while (consumed < items) {
                if (available > 0) {
                    --available;
                    ++consumed;
                    if (consumed == items) nosv_cond_broadcast(&c);
                    continue;
                }
                timespec deadline = monotonic_in(std::chrono::microseconds(200 + 700 * (i % 3)));
                const int rc = nosv_cond_timedwait(&c, &m, &deadline);
                if (rc != 0) bad_rc.fetch_add(1);
            }
            nosv_mutex_unlock(&m);
            uint64_t slept = 0;
            nosv_waitfor(2'000'000, &slept);
            if (slept < 2'000'000) short_sleeps.fetch_add(1);
        }),
                  NOSV_SUCCESS);
    for (int p = 0; p < producers; ++p)
        ASSERT_EQ(sp.spawn([&] {
            for (;;) {
                nosv_mutex_lock(&m);
                const bool done = produced == items;
                if (!done) {
                    ++produced;
                    ++available;
                    nosv_cond_signal(&c);
                }
                nosv_mutex_unlock(&m);
                if (done) return;
                if (produced % 7 == 0) nosv_yield(NOSV_YIELD_NONE);
            }
        }),
                  NOSV_SUCCESS);
    ASSERT_TRUE(yield_until([&] { return sp.finished.load() == consumers + producers; }));
    EXPECT_EQ(consumed, items);
    EXPECT_EQ(bad_rc.load(), 0);
    EXPECT_EQ(short_sleeps.load(), 0);
}

TEST(Compat, BarrierOnEveryCpuLetsNobodyLeaveARoundEarly) {
    Instance in;
    Spawner sp;
    constexpr int tasks = 8, rounds = 50;
    nosv_barrier_t b;
    ASSERT_EQ(nosv_barrier_init(&b, nullptr, tasks), 0);
    std::atomic<int> passed{0}, other{0}, early{0};
    std::atomic<int> arrivals[rounds] = {};
    for (int i = 0; i < tasks; ++i)
        ASSERT_EQ(sp.spawn([&] {
            for (int r = 0; r < rounds; ++r) {
                arrivals[r].fetch_add(1);
                const int rc = nosv_barrier_wait(&b);
                // Nobody leaves a round before all arrived.
                if (arrivals[r].load() != tasks) early.fetch_add(1);
                (rc == 0 ? passed : other).fetch_add(1);
            }
        }),
                  NOSV_SUCCESS);
    ASSERT_TRUE(yield_until([&] { return sp.finished.load() == tasks; }));
    EXPECT_EQ(passed.load(), rounds * tasks);
    EXPECT_EQ(other.load(), 0);
    EXPECT_EQ(early.load(), 0);
    EXPECT_EQ(nosv_barrier_destroy(&b), 0);
}

// A task, an attached thread and the main task meet at one barrier.
TEST(Compat, BarrierMixesTasksAndAnAttachedThread) {
    Instance in;
    Spawner sp;
    constexpr int rounds = 30;
    nosv_barrier_t b;
    ASSERT_EQ(nosv_barrier_init(&b, nullptr, 3), 0);
    std::atomic<int> passed{0}, other{0};
    auto meet = [&] {
        for (int r = 0; r < rounds; ++r)
            (nosv_barrier_wait(&b) == 0 ? passed : other).fetch_add(1);
    };
    ASSERT_EQ(sp.spawn(meet), NOSV_SUCCESS);
    std::thread attached([&] {
        nosv_task_t self = nullptr;
        ASSERT_EQ(nosv_attach(&self, nullptr, "thread", NOSV_ATTACH_NONE), NOSV_SUCCESS);
        meet();
        EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
    });
    meet(); // the attached main task
    attached.join();
    ASSERT_TRUE(yield_until([&] { return sp.finished.load() == 1; }));
    EXPECT_EQ(passed.load(), 3 * rounds);
    EXPECT_EQ(other.load(), 0);
    EXPECT_EQ(nosv_barrier_destroy(&b), 0);
}

// As in nOS-V, whose compat.h lists 0, EINVAL and ESRCH as the only
// results: no participant is told it was the serial one (pthreads' -1),
// not even the last to arrive, which does not wait.
TEST(Compat, BarrierWaitReturnsZeroToEveryParticipant) {
    Instance in;
    Spawner sp;
    constexpr int tasks = 3, rounds = 20;
    nosv_barrier_t b;
    ASSERT_EQ(nosv_barrier_init(&b, nullptr, tasks + 1), 0);
    // Every answer, by participant and round; the main task is the last
    // participant.
    std::vector<std::vector<int>> answers(tasks + 1, std::vector<int>(rounds, 1));
    for (int i = 0; i < tasks; ++i)
        ASSERT_EQ(sp.spawn([&, i] {
            for (int r = 0; r < rounds; ++r)
                answers[i][r] = nosv_barrier_wait(&b);
        }),
                  NOSV_SUCCESS);
    for (int r = 0; r < rounds; ++r)
        answers[tasks][r] = nosv_barrier_wait(&b);
    ASSERT_TRUE(yield_until([&] { return sp.finished.load() == tasks; }));
    for (int p = 0; p <= tasks; ++p)
        for (int r = 0; r < rounds; ++r)
            EXPECT_EQ(answers[p][r], 0) << "participant " << p << ", round " << r;
    EXPECT_EQ(nosv_barrier_destroy(&b), 0);
    // Alone at a barrier of one, the caller is always the last to arrive.
    ASSERT_EQ(nosv_barrier_init(&b, nullptr, 1), 0);
    for (int r = 0; r < 3; ++r)
        EXPECT_EQ(nosv_barrier_wait(&b), 0);
    EXPECT_EQ(nosv_barrier_destroy(&b), 0);
}

TEST(Compat, RwlockReadersShareAndWritersExclude) {
    Instance in;
    Spawner sp;
    constexpr int readers = 8, writers = 4, iterations = 1000;
    nosv_rwlock_t l;
    ASSERT_EQ(nosv_rwlock_init(&l, nullptr), 0);
    long a = 0, b = 0; // a writer changes both; readers must see them equal
    std::atomic<int> readers_in{0}, writers_in{0}, torn{0}, bad{0};
    for (int i = 0; i < readers; ++i)
        ASSERT_EQ(sp.spawn([&] {
            for (int k = 0; k < iterations; ++k) {
                nosv_rwlock_rdlock(&l);
                readers_in.fetch_add(1);
                if (writers_in.load() != 0) bad.fetch_add(1);
                if (a != b) torn.fetch_add(1);
                if (k % 50 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
                readers_in.fetch_sub(1);
                nosv_rwlock_unlock(&l);
            }
        }),
                  NOSV_SUCCESS);
    for (int i = 0; i < writers; ++i)
        ASSERT_EQ(sp.spawn([&] {
            for (int k = 0; k < iterations; ++k) {
                nosv_rwlock_wrlock(&l);
                if (writers_in.fetch_add(1) != 0 || readers_in.load() != 0) bad.fetch_add(1);
                ++a;
                ++b;
                writers_in.fetch_sub(1);
                nosv_rwlock_unlock(&l);
            }
        }),
                  NOSV_SUCCESS);
    ASSERT_TRUE(yield_until([&] { return sp.finished.load() == readers + writers; }));
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(torn.load(), 0);
    EXPECT_EQ(a, long(writers) * iterations);
    // Trylocks: shared read, exclusive write.
    ASSERT_EQ(nosv_rwlock_tryrdlock(&l), 0);
    EXPECT_EQ(nosv_rwlock_tryrdlock(&l), 0);
    EXPECT_EQ(nosv_rwlock_trywrlock(&l), EBUSY);
    EXPECT_EQ(nosv_rwlock_unlock(&l), 0);
    EXPECT_EQ(nosv_rwlock_unlock(&l), 0);
    EXPECT_EQ(nosv_rwlock_unlock(&l), EPERM);
    ASSERT_EQ(nosv_rwlock_trywrlock(&l), 0);
    EXPECT_EQ(nosv_rwlock_tryrdlock(&l), EBUSY);
    EXPECT_EQ(nosv_rwlock_unlock(&l), 0);
    EXPECT_EQ(nosv_rwlock_destroy(&l), 0);
}

// ---- nosv_pthread_create -------------------------------------------------------

void* report_task(void* arg) {
    // Attached while it runs: it is a task, and the compat calls block it.
    *static_cast<bool*>(arg) = nosv_self() != nullptr;
    return arg;
}

void* exit_early(void* arg) {
    nosv_mutex_t* m = static_cast<nosv_mutex_t*>(arg);
    nosv_mutex_lock(m);
    nosv_mutex_unlock(m);
    pthread_exit(arg); // still detached on the way out
}

TEST(Compat, PthreadCreateRunsAnAttachedThreadThatJoins) {
    Instance in("", /*attach=*/false);
    for (int i = 0; i < 3; ++i) {
        bool was_task = false;
        pthread_t th;
        ASSERT_EQ(nosv_pthread_create(&th, nullptr, report_task, &was_task), 0);
        void* out = nullptr;
        ASSERT_EQ(pthread_join(th, &out), 0);
        EXPECT_EQ(out, &was_task);
        EXPECT_TRUE(was_task);
    }
    nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
    pthread_t th;
    ASSERT_EQ(nosv_pthread_create(&th, nullptr, exit_early, &m), 0);
    void* out = nullptr;
    ASSERT_EQ(pthread_join(th, &out), 0);
    EXPECT_EQ(out, &m);
    EXPECT_EQ(nosv_self(), nullptr); // the creator is not attached by it
}

// ---- bad arguments -----------------------------------------------------------

TEST(CompatErrors, NullObjectsAndBadArgumentsGiveEinval) {
    EXPECT_EQ(nosv_mutexattr_init(nullptr), EINVAL);
    EXPECT_EQ(nosv_mutexattr_destroy(nullptr), EINVAL);
    EXPECT_EQ(nosv_condattr_init(nullptr), EINVAL);
    EXPECT_EQ(nosv_condattr_destroy(nullptr), EINVAL);
    EXPECT_EQ(nosv_barrierattr_init(nullptr), EINVAL);
    EXPECT_EQ(nosv_barrierattr_destroy(nullptr), EINVAL);
    EXPECT_EQ(nosv_rwlockattr_init(nullptr), EINVAL);
    EXPECT_EQ(nosv_rwlockattr_destroy(nullptr), EINVAL);
    EXPECT_EQ(nosv_mutex_init(nullptr, nullptr), EINVAL);
    EXPECT_EQ(nosv_mutex_destroy(nullptr), EINVAL);
    EXPECT_EQ(nosv_mutex_lock(nullptr), EINVAL);
    EXPECT_EQ(nosv_mutex_trylock(nullptr), EINVAL);
    EXPECT_EQ(nosv_mutex_unlock(nullptr), EINVAL);
    EXPECT_EQ(nosv_cond_init(nullptr, nullptr), EINVAL);
    EXPECT_EQ(nosv_cond_destroy(nullptr), EINVAL);
    EXPECT_EQ(nosv_cond_signal(nullptr), EINVAL);
    EXPECT_EQ(nosv_cond_broadcast(nullptr), EINVAL);
    Instance in; // the rest locks and waits: from a task context
    nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
    nosv_cond_t c = NOSV_COND_INITIALIZER;
    pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
    timespec ok = monotonic_in(1s);
    EXPECT_EQ(nosv_cond_wait(nullptr, &m), EINVAL);
    EXPECT_EQ(nosv_cond_wait(&c, nullptr), EINVAL);
    EXPECT_EQ(nosv_cond_timedwait(nullptr, &m, &ok), EINVAL);
    EXPECT_EQ(nosv_cond_wait_pthread(&c, nullptr), EINVAL);
    EXPECT_EQ(nosv_cond_timedwait_pthread(nullptr, &pm, &ok), EINVAL);
    // A timed wait needs a deadline; the mutex must be held.
    ASSERT_EQ(nosv_mutex_lock(&m), 0);
    EXPECT_EQ(nosv_cond_timedwait(&c, &m, nullptr), EINVAL);
    ASSERT_EQ(pthread_mutex_lock(&pm), 0);
    EXPECT_EQ(nosv_cond_timedwait_pthread(&c, &pm, nullptr), EINVAL);
    pthread_mutex_unlock(&pm);
    EXPECT_EQ(nosv_mutex_unlock(&m), 0);
    EXPECT_EQ(nosv_cond_wait(&c, &m), EPERM);
    EXPECT_EQ(nosv_cond_timedwait(&c, &m, &ok), EPERM);
    // An error-checking pthread mutex the caller does not hold: its unlock
    // fails, and the wait returns that error without waiting.
    pthread_mutex_t checked;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&checked, &attr);
    EXPECT_EQ(nosv_cond_wait_pthread(&c, &checked), EPERM);
    pthread_mutex_destroy(&checked);
    pthread_mutexattr_destroy(&attr);
    EXPECT_EQ(nosv_cond_destroy(&c), 0);

    nosv_barrier_t b;
    EXPECT_EQ(nosv_barrier_init(nullptr, nullptr, 2), EINVAL);
    EXPECT_EQ(nosv_barrier_init(&b, nullptr, 0), EINVAL);
    EXPECT_EQ(nosv_barrier_destroy(nullptr), EINVAL);
    EXPECT_EQ(nosv_barrier_wait(nullptr), EINVAL);
    ASSERT_EQ(nosv_barrier_init(&b, nullptr, 1), 0);
    EXPECT_EQ(nosv_barrier_wait(&b), 0); // one participant: it never waits
    EXPECT_EQ(nosv_barrier_destroy(&b), 0);
    EXPECT_EQ(nosv_barrier_wait(&b), EINVAL); // destroyed
    EXPECT_EQ(nosv_barrier_destroy(&b), EINVAL);

    EXPECT_EQ(nosv_rwlock_init(nullptr, nullptr), EINVAL);
    EXPECT_EQ(nosv_rwlock_destroy(nullptr), EINVAL);
    EXPECT_EQ(nosv_rwlock_rdlock(nullptr), EINVAL);
    EXPECT_EQ(nosv_rwlock_wrlock(nullptr), EINVAL);
    EXPECT_EQ(nosv_rwlock_tryrdlock(nullptr), EINVAL);
    EXPECT_EQ(nosv_rwlock_trywrlock(nullptr), EINVAL);
    EXPECT_EQ(nosv_rwlock_unlock(nullptr), EINVAL);
    nosv_rwlock_t l = NOSV_RWLOCK_INITIALIZER;
    EXPECT_EQ(nosv_rwlock_unlock(&l), EPERM);

    pthread_t th;
    EXPECT_EQ(nosv_pthread_create(nullptr, nullptr, report_task, nullptr), EINVAL);
    EXPECT_EQ(nosv_pthread_create(&th, nullptr, nullptr, nullptr), EINVAL);
}

TEST(CompatErrors, NosvPthreadCreateNeedsNosvInit) {
    pthread_t th;
    EXPECT_EQ(nosv_pthread_create(&th, nullptr, report_task, nullptr), EINVAL);
}

// As nOS-V documents: locking, unlocking and waiting need a task context
// (ESRCH outside one, before nosv_init too); signalling does not.
TEST(CompatErrors, OutsideATaskLockingAndWaitingGiveEsrch) {
    nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
    nosv_cond_t c = NOSV_COND_INITIALIZER;
    nosv_rwlock_t l = NOSV_RWLOCK_INITIALIZER;
    nosv_barrier_t b;
    ASSERT_EQ(nosv_barrier_init(&b, nullptr, 2), 0);
    pthread_mutex_t pm = PTHREAD_MUTEX_INITIALIZER;
    timespec deadline = monotonic_in(1s);
    auto expect_esrch = [&] {
        EXPECT_EQ(nosv_mutex_lock(&m), ESRCH);
        EXPECT_EQ(nosv_mutex_trylock(&m), ESRCH);
        EXPECT_EQ(nosv_mutex_unlock(&m), ESRCH);
        EXPECT_EQ(nosv_cond_wait(&c, &m), ESRCH);
        EXPECT_EQ(nosv_cond_timedwait(&c, &m, &deadline), ESRCH);
        EXPECT_EQ(nosv_cond_wait_pthread(&c, &pm), ESRCH);
        EXPECT_EQ(nosv_cond_timedwait_pthread(&c, &pm, &deadline), ESRCH);
        EXPECT_EQ(nosv_barrier_wait(&b), ESRCH);
        EXPECT_EQ(nosv_rwlock_rdlock(&l), ESRCH);
        EXPECT_EQ(nosv_rwlock_wrlock(&l), ESRCH);
        EXPECT_EQ(nosv_rwlock_tryrdlock(&l), ESRCH);
        EXPECT_EQ(nosv_rwlock_trywrlock(&l), ESRCH);
        EXPECT_EQ(nosv_rwlock_unlock(&l), ESRCH);
        EXPECT_EQ(nosv_cond_signal(&c), 0);
        EXPECT_EQ(nosv_cond_broadcast(&c), 0);
    };
    expect_esrch(); // before nosv_init
    {
        Instance in("", /*attach=*/false);
        expect_esrch(); // initialised, but this thread is not attached
    }
    EXPECT_EQ(nosv_barrier_destroy(&b), 0); // nobody arrived
    EXPECT_EQ(nosv_mutex_destroy(&m), 0);
}

// Attribute objects exist for source compatibility and change nothing.
TEST(CompatErrors, AttributesInitAndDestroy) {
    nosv_mutexattr_t ma;
    nosv_condattr_t ca;
    nosv_barrierattr_t ba;
    nosv_rwlockattr_t ra;
    EXPECT_EQ(nosv_mutexattr_init(&ma), 0);
    EXPECT_EQ(nosv_condattr_init(&ca), 0);
    EXPECT_EQ(nosv_barrierattr_init(&ba), 0);
    EXPECT_EQ(nosv_rwlockattr_init(&ra), 0);
    nosv_mutex_t m;
    nosv_cond_t c;
    nosv_barrier_t b;
    nosv_rwlock_t l;
    EXPECT_EQ(nosv_mutex_init(&m, &ma), 0);
    EXPECT_EQ(nosv_cond_init(&c, &ca), 0);
    EXPECT_EQ(nosv_barrier_init(&b, &ba, 3), 0);
    EXPECT_EQ(nosv_rwlock_init(&l, &ra), 0);
    EXPECT_EQ(nosv_mutex_destroy(&m), 0);
    EXPECT_EQ(nosv_cond_destroy(&c), 0);
    EXPECT_EQ(nosv_barrier_destroy(&b), 0);
    EXPECT_EQ(nosv_rwlock_destroy(&l), 0);
    EXPECT_EQ(nosv_mutexattr_destroy(&ma), 0);
    EXPECT_EQ(nosv_condattr_destroy(&ca), 0);
    EXPECT_EQ(nosv_barrierattr_destroy(&ba), 0);
    EXPECT_EQ(nosv_rwlockattr_destroy(&ra), 0);
}

} // namespace
