// nOS-V's documented semantics where a first reading of the API could
// differ (issue 16): repeated submits, a deadline wake before the task
// sleeps, reuse after completion, the immediate successor of a completed
// callback, the quantum between tasks of one process, and shutdown from a
// thread that did not init. One test per behaviour.
#include "support.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

using namespace coexec;

namespace {

using test::Instance;
using test::wait_until;
using test::yield_until;

nosv_task_type_t make_type(nosv_task_run_callback_t run, nosv_task_completed_callback_t completed,
                           const char* label) {
    nosv_task_type_t type = nullptr;
    EXPECT_EQ(nosv_type_init(&type, run, nullptr, completed, label, nullptr, nullptr, 0),
              NOSV_SUCCESS);
    return type;
}

// nosv_get_available_cpus(), copied; the array is the caller's to free.
std::vector<int> available_cpus() {
    int* array = nosv_get_available_cpus();
    if (!array) return {};
    std::vector<int> out(array, array + nosv_get_num_cpus());
    std::free(array);
    return out;
}

// ---- 1. repeated submits -------------------------------------------------

struct PauseCounts {
    std::atomic<int> started{0};
    std::atomic<int> pauses_done{0};
    std::atomic<int> completed{0};
};
PauseCounts g_pauses;
constexpr int kPausesPerTask = 4;

void run_pausing(nosv_task_t) {
    g_pauses.started.fetch_add(1);
    for (int i = 0; i < kPausesPerTask; ++i) {
        EXPECT_EQ(nosv_pause(0), NOSV_SUCCESS);
        g_pauses.pauses_done.fetch_add(1);
    }
}
void completed_pausing(nosv_task_t) {
    g_pauses.completed.fetch_add(1);
}

// Each submit pays for one pause, whenever it comes: before the task ran
// (it is still ready), while it runs, while it is paused, or while it is
// ready again after an earlier submit resumed it.
TEST(ApiSemantics, RepeatedSubmitsEachPayForOnePause) {
    g_pauses.started = g_pauses.pauses_done = g_pauses.completed = 0;
    // One CPU, held by this thread while it submits: the task cannot start
    // before every submit is in.
    Instance in("topology.binding=0");
    nosv_task_type_t type = make_type(run_pausing, completed_pausing, "pausing");
    nosv_task_t early;
    ASSERT_EQ(nosv_create(&early, type, 0, 0), NOSV_SUCCESS);
    for (int i = 0; i <= kPausesPerTask; ++i)
        ASSERT_EQ(nosv_submit(early, 0), NOSV_SUCCESS) << "submit " << i << " of a ready task";
    EXPECT_TRUE(yield_until([] { return g_pauses.completed.load() == 1; }))
        << "pauses done: " << g_pauses.pauses_done.load();
    EXPECT_EQ(g_pauses.pauses_done.load(), kPausesPerTask);

    // nOS-V's multi-pause program: many tasks, each started and paused,
    // then submitted once per pause in a row.
    constexpr int n = 64;
    g_pauses.started = g_pauses.pauses_done = g_pauses.completed = 0;
    std::vector<nosv_task_t> tasks(n);
    for (auto& t : tasks) {
        ASSERT_EQ(nosv_create(&t, type, 0, 0), NOSV_SUCCESS);
        ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    }
    ASSERT_TRUE(yield_until([] { return g_pauses.started.load() == n; }));
    EXPECT_EQ(g_pauses.completed.load(), 0);
    for (auto t : tasks)
        for (int i = 0; i < kPausesPerTask; ++i)
            ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    EXPECT_TRUE(yield_until([] { return g_pauses.completed.load() == n; }))
        << g_pauses.completed.load() << " of " << n << " completed";
    EXPECT_EQ(g_pauses.pauses_done.load(), n * kPausesPerTask);
    for (auto t : tasks)
        EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
    EXPECT_EQ(nosv_destroy(early, 0), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
}

// ---- 2. a deadline wake before the task sleeps ----------------------------

struct Sleeps {
    uint64_t first_ns = 0;  // a 60 s waitfor, ended by the early wake
    uint64_t second_ns = 0; // a 10 ms waitfor: nothing is left to end it early
};
std::atomic<int> g_sleepers_done{0};
constexpr uint64_t kLongSleepNs = 60'000'000'000;
constexpr uint64_t kShortSleepNs = 10'000'000;

void run_sleeper(nosv_task_t t) {
    auto* s = static_cast<Sleeps*>(nosv_get_task_metadata(t));
    EXPECT_EQ(nosv_waitfor(kLongSleepNs, &s->first_ns), NOSV_SUCCESS);
    EXPECT_EQ(nosv_waitfor(kShortSleepNs, &s->second_ns), NOSV_SUCCESS);
}
void completed_sleeper(nosv_task_t) {
    g_sleepers_done.fetch_add(1);
}

// nOS-V keeps a NOSV_SUBMIT_DEADLINE_WAKE that reaches a task before it
// sleeps (even before it ran): its next nosv_waitfor returns at once. The
// wake neither makes the task ready nor is lost: the plain submit after it
// runs the task, and the wake ends exactly one sleep.
TEST(ApiSemantics, DeadlineWakeBeforeTheTaskSleepsEndsItsNextWaitfor) {
    g_sleepers_done = 0;
    Instance in("", /*attach=*/false);
    nosv_task_type_t type = make_type(run_sleeper, completed_sleeper, "sleeper");
    nosv_task_t t;
    ASSERT_EQ(nosv_create(&t, type, sizeof(Sleeps), 0), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_DEADLINE_WAKE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS) << "a deadline wake made the task ready";
    ASSERT_EQ(nosv_create(&t, type, sizeof(Sleeps), 0), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_DEADLINE_WAKE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    // Only the wake ends the 60 s sleep within the wait's patience.
    ASSERT_TRUE(wait_until([] { return g_sleepers_done.load() == 1; }))
        << "the early wake was lost: the task sleeps its 60 s";
    auto* s = static_cast<Sleeps*>(nosv_get_task_metadata(t));
    EXPECT_GE(s->second_ns, kShortSleepNs) << "one wake ended two sleeps";
    EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);

    // Wakes that reach tasks at any point of their life: ready, running,
    // asleep. Each ends the task's first sleep, whenever it lands.
    constexpr int n = 100;
    g_sleepers_done = 0;
    std::vector<nosv_task_t> tasks(n);
    for (auto& task : tasks) {
        ASSERT_EQ(nosv_create(&task, type, sizeof(Sleeps), 0), NOSV_SUCCESS);
        ASSERT_EQ(nosv_submit(task, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    }
    for (auto task : tasks)
        ASSERT_EQ(nosv_submit(task, NOSV_SUBMIT_DEADLINE_WAKE), NOSV_SUCCESS);
    ASSERT_TRUE(wait_until([] { return g_sleepers_done.load() == n; }))
        << g_sleepers_done.load() << " of " << n << " woke";
    for (auto task : tasks) {
        auto* sl = static_cast<Sleeps*>(nosv_get_task_metadata(task));
        EXPECT_GE(sl->second_ns, kShortSleepNs);
        EXPECT_EQ(nosv_destroy(task, 0), NOSV_SUCCESS);
    }
    nosv_type_destroy(type, 0);
}

// ---- 3. reuse after completion ----------------------------------------------

struct Reuse {
    enum Mode { Plain, Pause, Event, ResubmitFromCompleted } mode = Plain;
    std::atomic<int> runs{0};
    std::atomic<int> completions{0};
    std::atomic<int> resubmit_rc{INT32_MIN}; // ResubmitFromCompleted's submit
};

void run_reuse(nosv_task_t t) {
    auto* r = static_cast<Reuse*>(nosv_get_task_metadata(t));
    r->runs.fetch_add(1);
    if (r->mode == Reuse::Pause) {
        EXPECT_EQ(nosv_pause(0), NOSV_SUCCESS);
    } else if (r->mode == Reuse::Event) {
        EXPECT_EQ(nosv_increase_event_counter(1), NOSV_SUCCESS);
    }
}
void completed_reuse(nosv_task_t t) {
    auto* r = static_cast<Reuse*>(nosv_get_task_metadata(t));
    // The first completion in this mode submits the task again, from its
    // own callback.
    if (r->mode == Reuse::ResubmitFromCompleted && r->resubmit_rc.load() == INT32_MIN)
        r->resubmit_rc = nosv_submit(t, NOSV_SUBMIT_NONE);
    r->completions.fetch_add(1);
}

// A task whose completed callback has run may be submitted again, however
// it ran (on a worker, inline, blocking, paused and resumed, completed by an
// event) and from wherever (another thread, its own completed callback); it
// runs anew from a clean state. Until it completes (events pending) it is
// refused.
TEST(ApiSemantics, ACompletedTaskMayBeSubmittedAgain) {
    Instance in("topology.binding=0");
    nosv_task_type_t type = make_type(run_reuse, completed_reuse, "reuse");
    nosv_task_t t;
    ASSERT_EQ(nosv_create(&t, type, sizeof(Reuse), 0), NOSV_SUCCESS);
    auto* r = new (nosv_get_task_metadata(t)) Reuse;
    auto completions = [r](int n) { return [r, n] { return r->completions.load() == n; }; };

    // On a worker, resubmitted from another thread once completed.
    for (int i = 1; i <= 3; ++i) {
        ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS) << "run " << i;
        ASSERT_TRUE(yield_until(completions(i)));
    }
    // Blocking, then inline, on this thread.
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    EXPECT_EQ(r->completions.load(), 4);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_INLINE), NOSV_SUCCESS);
    EXPECT_EQ(r->completions.load(), 5);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    EXPECT_EQ(r->completions.load(), 6);

    // From its own completed callback.
    r->mode = Reuse::ResubmitFromCompleted;
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_TRUE(yield_until(completions(8)));
    EXPECT_EQ(r->resubmit_rc.load(), NOSV_SUCCESS);
    EXPECT_EQ(r->runs.load(), 8);

    // Paused and resumed twice over: the submit no pause used is dropped at
    // the end, so the next run pauses again.
    r->mode = Reuse::Pause;
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_TRUE(yield_until([r] { return r->runs.load() == 9; }));
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_TRUE(yield_until(completions(9)));
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_TRUE(yield_until([r] { return r->runs.load() == 10; }));
    // Turns of the one CPU: a run resumed by a dropped submit would end here.
    for (int i = 0; i < 20; ++i)
        EXPECT_EQ(nosv_yield(0), NOSV_SUCCESS);
    EXPECT_EQ(r->completions.load(), 9) << "a dropped submit resumed the next run";
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_TRUE(yield_until(completions(10)));

    // Completed by an event another thread ends: refused until then.
    r->mode = Reuse::Event;
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    // One CPU: we have it back once the body ended and its worker left it.
    ASSERT_TRUE(yield_until([r] { return r->runs.load() == 11; }));
    EXPECT_EQ(nosv_submit(t, 0), NOSV_ERR_INVALID_OPERATION) << "events are pending";
    EXPECT_EQ(nosv_destroy(t, 0), NOSV_ERR_BUSY);
    std::thread([t] { EXPECT_EQ(nosv_decrease_event_counter(t, 1), NOSV_SUCCESS); }).join();
    ASSERT_TRUE(yield_until(completions(11)));
    r->mode = Reuse::Plain;
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_TRUE(yield_until(completions(12)));
    EXPECT_EQ(r->runs.load(), 12);

    r->~Reuse();
    EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
}

// ---- 4. the immediate successor of a completed callback --------------------

struct Step {
    int order = -1;      // when its body ran, among the test's tasks
    int cpu = -1;        // where
    bool after_callback; // the first task's completed callback had returned
};
struct Succession {
    std::atomic<int> next_order{0};
    std::atomic<int> completed{0};
    std::atomic<bool> callback_returned{false};
    std::atomic<bool> others_ready{false};
    nosv_task_t successor = nullptr;
    int submit_rc = INT32_MIN;
};
Succession g_succession;

void run_step(nosv_task_t t) {
    auto* s = static_cast<Step*>(nosv_get_task_metadata(t));
    s->order = g_succession.next_order.fetch_add(1);
    s->cpu = nosv_get_current_system_cpu();
    s->after_callback = g_succession.callback_returned.load();
}
void completed_step(nosv_task_t) {
    g_succession.completed.fetch_add(1);
}
void run_first(nosv_task_t t) {
    // The others are ready on this CPU before this task completes.
    while (!g_succession.others_ready.load())
        ::usleep(100);
    run_step(t);
}
void completed_first(nosv_task_t) {
    g_succession.submit_rc = nosv_submit(g_succession.successor, NOSV_SUBMIT_IMMEDIATE);
    // Still inside the callback: the successor must not have started.
    EXPECT_EQ(g_succession.next_order.load(), 1);
    g_succession.callback_returned = true;
    g_succession.completed.fetch_add(1);
}

// A task that a completed callback submits with NOSV_SUBMIT_IMMEDIATE runs
// next on the same CPU: after the callback returns, and before the tasks
// that were already ready there.
TEST(ApiSemantics, ImmediateSuccessorOfACompletedCallbackRunsNextOnThatCpu) {
    g_succession.next_order = g_succession.completed = 0;
    g_succession.callback_returned = g_succession.others_ready = false;
    Instance in;
    const int cpu = available_cpus().at(0);
    nosv_affinity_t there =
        nosv_affinity_get(uint32_t(cpu), NOSV_AFFINITY_LEVEL_CPU, NOSV_AFFINITY_TYPE_STRICT);
    nosv_task_type_t first_type = make_type(run_first, completed_first, "first");
    nosv_task_type_t type = make_type(run_step, completed_step, "step");
    nosv_task_t first;
    ASSERT_EQ(nosv_create(&first, first_type, sizeof(Step), 0), NOSV_SUCCESS);
    nosv_set_task_affinity(first, &there);
    // The successor may run anywhere: only the immediate submit keeps it on
    // the first task's CPU.
    ASSERT_EQ(nosv_create(&g_succession.successor, type, sizeof(Step), 0), NOSV_SUCCESS);
    constexpr int kOthers = 3;
    std::vector<nosv_task_t> others(kOthers);
    for (auto& o : others) {
        ASSERT_EQ(nosv_create(&o, type, sizeof(Step), 0), NOSV_SUCCESS);
        nosv_set_task_affinity(o, &there);
    }
    // The first one first; the others are all ready there before it ends.
    ASSERT_EQ(nosv_submit(first, 0), NOSV_SUCCESS);
    for (auto o : others)
        ASSERT_EQ(nosv_submit(o, 0), NOSV_SUCCESS);
    g_succession.others_ready = true;
    ASSERT_TRUE(yield_until([] { return g_succession.completed.load() == kOthers + 2; }));
    EXPECT_EQ(g_succession.submit_rc, NOSV_SUCCESS);

    auto step = [](nosv_task_t t) { return *static_cast<Step*>(nosv_get_task_metadata(t)); };
    EXPECT_EQ(step(first).order, 0);
    const Step next = step(g_succession.successor);
    EXPECT_EQ(next.order, 1) << "the successor did not run next";
    EXPECT_TRUE(next.after_callback);
    EXPECT_EQ(next.cpu, cpu) << "the successor ran on another CPU";
    for (auto o : others) {
        EXPECT_GT(step(o).order, 1);
        EXPECT_EQ(step(o).cpu, cpu);
        EXPECT_EQ(nosv_destroy(o, 0), NOSV_SUCCESS);
    }
    EXPECT_EQ(nosv_destroy(first, 0), NOSV_SUCCESS);
    EXPECT_EQ(nosv_destroy(g_succession.successor, 0), NOSV_SUCCESS);
    nosv_type_destroy(first_type, 0);
    nosv_type_destroy(type, 0);
}

// ---- 5. the quantum between tasks of one process --------------------------

constexpr int kRotating = 4;
constexpr int kRounds = 5;
constexpr uint64_t kQuantumNs = 2'000'000;
struct Rotation {
    std::atomic<int> turn{0};
    std::atomic<int> done{0};
    std::atomic<bool> give_up{false}; // lets the tasks end when the test failed
};
Rotation g_rotation;

void run_rotating(nosv_task_t t) {
    const int me = *static_cast<int*>(nosv_get_task_metadata(t));
    for (int round = 0; round < kRounds; ++round) {
        while (g_rotation.turn.load() % kRotating != me) {
            if (g_rotation.give_up.load()) return;
            EXPECT_EQ(nosv_schedpoint(0), NOSV_SUCCESS);
            ::usleep(200);
        }
        g_rotation.turn.fetch_add(1);
    }
}
void completed_rotating(nosv_task_t) {
    g_rotation.done.fetch_add(1);
}

// Four tasks of one process, strict on one CPU, each waiting for its turn
// with nosv_schedpoint + usleep: the quantum applies to tasks, so a task
// that held the CPU for a quantum lets the next ready one run, and they
// rotate (in coexec it used to apply only between processes, and this
// hung). A schedpoint switches only after a quantum: each turn but the
// last few (where a task ends) waits for its predecessor's quantum.
TEST(ApiSemantics, SchedpointRotatesTasksOfOneProcessByQuantum) {
    g_rotation.turn = g_rotation.done = 0;
    g_rotation.give_up = false;
    Instance in("scheduler.quantum_ns=" + std::to_string(kQuantumNs), /*attach=*/false);
    const int cpu = available_cpus().at(0);
    nosv_affinity_t there =
        nosv_affinity_get(uint32_t(cpu), NOSV_AFFINITY_LEVEL_CPU, NOSV_AFFINITY_TYPE_STRICT);
    nosv_task_type_t type = make_type(run_rotating, completed_rotating, "rotating");
    std::vector<nosv_task_t> tasks(kRotating);
    const uint64_t start = test::now_ns();
    for (int i = 0; i < kRotating; ++i) {
        ASSERT_EQ(nosv_create(&tasks[size_t(i)], type, sizeof(int), 0), NOSV_SUCCESS);
        *static_cast<int*>(nosv_get_task_metadata(tasks[size_t(i)])) = i;
        nosv_set_task_affinity(tasks[size_t(i)], &there);
        ASSERT_EQ(nosv_submit(tasks[size_t(i)], 0), NOSV_SUCCESS);
    }
    const bool rotated = wait_until([] { return g_rotation.done.load() == kRotating; });
    const uint64_t elapsed = test::now_ns() - start;
    if (!rotated) {
        g_rotation.give_up = true;
        wait_until([] { return g_rotation.done.load() == kRotating; });
    }
    EXPECT_TRUE(rotated) << "the tasks did not rotate: " << g_rotation.turn.load() << " of "
                         << kRotating * kRounds << " turns";
    // Turns 1 .. (kRounds - 1) * kRotating each needed a switch at a
    // schedpoint, after the previous holder's quantum.
    const uint64_t switched = uint64_t((kRounds - 1) * kRotating);
    EXPECT_GE(elapsed, (switched - 1) * kQuantumNs) << "a schedpoint switched before the quantum";
    for (auto t : tasks)
        EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
}

} // namespace

// ---- 7. shutdown from another thread --------------------------------------

namespace {

// A thread other than the one that called nosv_init() cannot shut the
// process down: it gets an error and nothing changes, and the init thread
// still shuts down afterwards. (An adapter's coexec_init_quiet() belongs to
// the process: any thread may end that one.)
TEST(ApiSemantics, ShutdownFromAThreadThatDidNotInitFails) {
    test::ScopedSegment seg;
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    int rc = INT32_MIN;
    std::thread([&rc] { rc = nosv_shutdown(); }).join();
    EXPECT_EQ(rc, NOSV_ERR_INVALID_OPERATION);
    EXPECT_TRUE(coexec_is_active()) << "a refused shutdown left the instance";
    // A thread ends only its own inits, nested ones included.
    std::thread([&rc] {
        EXPECT_EQ(nosv_init(), NOSV_SUCCESS);
        EXPECT_EQ(nosv_init(), NOSV_SUCCESS);
        EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
        EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
        rc = nosv_shutdown();
    }).join();
    EXPECT_EQ(rc, NOSV_ERR_INVALID_OPERATION);
    EXPECT_TRUE(coexec_is_active());
    EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
    EXPECT_FALSE(coexec_is_active());
    EXPECT_EQ(nosv_shutdown(), NOSV_ERR_NOT_INITIALIZED);

    ASSERT_EQ(coexec_init_quiet(), NOSV_SUCCESS);
    std::thread([&rc] { rc = nosv_shutdown(); }).join();
    EXPECT_EQ(rc, NOSV_SUCCESS) << "an adapter's init is the process's";
    EXPECT_FALSE(coexec_is_active());
}

} // namespace
