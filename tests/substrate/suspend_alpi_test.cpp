// nosv_suspend with each suspend mode, and ALPI 1.2 (nosv/alpi.h) on top of
// coexec's task operations (issue 16). Real tasks on real workers of a
// private instance; one CPU where an order is asserted.
#include "support.hpp"

#include <nosv.h>
#include <nosv/alpi-defs.h>
#include <nosv/alpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace coexec;
using test::Instance;
using test::wait_until;
using test::yield_until;

// In suspend_alpi_bad_mode.c: passes an int as the suspend mode, as a C
// caller may (in C++ such a value must not be made an enum).
extern "C" int call_alpi_mode_set_int(struct alpi_task* task, int mode, uint64_t args);
extern "C" int call_nosv_mode_set_int(int mode, uint64_t args);
extern "C" int call_alpi_info_get_int(int query, char* buffer, size_t max_length, int* length);

namespace {

// What the tasks of one test record: the order of body runs, by name.
struct Log {
    std::mutex mutex;
    std::vector<std::string> runs;
    void add(const std::string& s) {
        std::lock_guard g(mutex);
        runs.push_back(s);
    }
    std::vector<std::string> get() {
        std::lock_guard g(mutex);
        return runs;
    }
    size_t size() {
        std::lock_guard g(mutex);
        return runs.size();
    }
};

// A task's metadata: its name, its suspend mode and args, how often its
// body ran, ended and completed.
struct Meta {
    char name[8];
    int suspends;     // how many runs suspend before one completes
    int mode;         // nosv_suspend_mode_t
    uint64_t args;    // for the mode
    int events;       // events the first run adds (EVENT_SUBMIT tests)
    bool self_submit; // the first run submits itself before suspending
    Log* log;
    std::atomic<int> runs;
    std::atomic<int> ends;
    std::atomic<int> completed;
    std::atomic<uint64_t> suspended_at;
    std::atomic<uint64_t> resumed_at;
};

Meta* meta(nosv_task_t t) {
    return static_cast<Meta*>(nosv_get_task_metadata(t));
}

void run_suspending(nosv_task_t t) {
    Meta* m = meta(t);
    const int run = m->runs.fetch_add(1);
    if (m->log) m->log->add(std::string(m->name) + std::to_string(run + 1));
    if (run > 0) m->resumed_at.store(test::now_ns());
    if (run >= m->suspends) return;
    if (run == 0 && m->events) {
        EXPECT_EQ(nosv_increase_event_counter(uint64_t(m->events)), 0);
    }
    EXPECT_EQ(nosv_set_suspend_mode(nosv_suspend_mode_t(m->mode), m->args), NOSV_SUCCESS);
    if (run == 0 && m->self_submit) {
        EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    }
    EXPECT_EQ(nosv_suspend(), NOSV_SUCCESS);
    m->suspended_at.store(test::now_ns());
}
void end_counting(nosv_task_t t) {
    meta(t)->ends.fetch_add(1);
}
void completed_counting(nosv_task_t t) {
    meta(t)->completed.fetch_add(1);
}

// A task type and tasks made from it; destroyed at the end of the test.
class Tasks {
  public:
    Tasks() {
        EXPECT_EQ(nosv_type_init(&type_, run_suspending, end_counting, completed_counting, "susp",
                                 nullptr, nullptr, 0),
                  NOSV_SUCCESS);
    }
    ~Tasks() {
        for (nosv_task_t t : tasks_)
            EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
        EXPECT_EQ(nosv_type_destroy(type_, 0), NOSV_SUCCESS);
    }
    nosv_task_t make(const char* name, int suspends, nosv_suspend_mode_t mode, uint64_t args,
                     Log* log = nullptr) {
        nosv_task_t t = nullptr;
        EXPECT_EQ(nosv_create(&t, type_, sizeof(Meta), 0), NOSV_SUCCESS);
        Meta* m = new (nosv_get_task_metadata(t)) Meta{};
        std::strncpy(m->name, name, sizeof m->name - 1);
        m->suspends = suspends;
        m->mode = mode;
        m->args = args;
        m->log = log;
        tasks_.push_back(t);
        return t;
    }
    // Destroys `t` once its body has returned and left it suspended (until
    // then nosv_destroy says busy); the destructor then skips it.
    bool destroy_suspended(nosv_task_t t) {
        if (!wait_until([&] { return nosv_destroy(t, 0) == NOSV_SUCCESS; })) return false;
        std::erase(tasks_, t);
        return true;
    }

  private:
    nosv_task_type_t type_ = nullptr;
    std::vector<nosv_task_t> tasks_;
};

// An instance managing one CPU, for tests that check that something did not
// happen: the CPU's turns show it would have (let_the_cpu_turn()).
constexpr const char* kOneCpu = "topology.binding=0";

std::atomic<int> g_turns{0};

// Runs a task on the only CPU of a kOneCpu instance and waits for it, twice.
// Whatever was ready there, or was made ready while the CPU finished the
// work it had, runs before the second task: a check that nothing ran counts
// these turns instead of waiting for a time.
void let_the_cpu_turn() {
    nosv_task_type_t type = nullptr;
    ASSERT_EQ(nosv_type_init(
                  &type, [](nosv_task_t) {}, nullptr, [](nosv_task_t) { g_turns.fetch_add(1); },
                  "turn", nullptr, nullptr, 0),
              NOSV_SUCCESS);
    for (int i = 0; i < 2; ++i) {
        nosv_task_t t = nullptr;
        ASSERT_EQ(nosv_create(&t, type, 0, 0), NOSV_SUCCESS);
        const int before = g_turns.load();
        ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return g_turns.load() > before; }));
        // Its completed callback may still be returning.
        ASSERT_TRUE(wait_until([&] { return nosv_destroy(t, 0) == NOSV_SUCCESS; }));
    }
    EXPECT_EQ(nosv_type_destroy(type, 0), NOSV_SUCCESS);
}

// ---- nosv_suspend ---------------------------------------------------------

// NONE: the body returns, the task neither ends nor completes, and nothing
// runs it again until a nosv_submit, which runs the body from the start.
TEST(Suspend, NoneWaitsForAnExplicitSubmit) {
    Instance in(kOneCpu, /*attach=*/false);
    Tasks tasks;
    nosv_task_t t = tasks.make("a", 1, NOSV_SUSPEND_MODE_NONE, 0);
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return meta(t)->suspended_at.load() != 0; }));
    let_the_cpu_turn();
    EXPECT_EQ(meta(t)->runs.load(), 1);
    EXPECT_EQ(meta(t)->ends.load(), 0) << "a suspended body has not ended";
    EXPECT_EQ(meta(t)->completed.load(), 0);
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return meta(t)->completed.load() == 1; }));
    EXPECT_EQ(meta(t)->runs.load(), 2);
    EXPECT_EQ(meta(t)->ends.load(), 1);
}

// As in nOS-V, a suspended task may be destroyed without being resumed; a
// pending timer is cancelled with it (a late one would run a freed task:
// the body count, kept outside the task, says it did not, and ASan would
// see it). A witness suspended after it with the same timeout tells when
// its deadline has passed: timers fire in deadline order.
TEST(Suspend, ASuspendedTaskMayBeDestroyed) {
    // Far beyond the moment of the destroy (at once), which must beat it.
    constexpr uint64_t timeout = 1'000'000'000;
    Instance in(kOneCpu, /*attach=*/false);
    Log log;
    Tasks tasks;
    nosv_task_t none = tasks.make("n", 1, NOSV_SUSPEND_MODE_NONE, 0, &log);
    nosv_task_t timed = tasks.make("t", 1, NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT, timeout, &log);
    nosv_task_t witness = tasks.make("w", 1, NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT, timeout, &log);
    ASSERT_EQ(nosv_submit(none, 0), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(timed, 0), NOSV_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return meta(timed)->suspended_at.load() != 0; }));
    const uint64_t suspended = meta(timed)->suspended_at.load();
    // On the one CPU it runs once `timed` is suspended: its timer is due later.
    ASSERT_EQ(nosv_submit(witness, 0), NOSV_SUCCESS);
    ASSERT_TRUE(tasks.destroy_suspended(timed));
    // Only meaningful if the destroy beat the timer; a machine that stalled
    // this long says so rather than passing.
    ASSERT_LT(test::now_ns() - suspended, timeout) << "destroyed after the timeout";
    ASSERT_TRUE(wait_until([&] { return meta(none)->suspended_at.load() != 0; }));
    EXPECT_EQ(meta(none)->ends.load(), 0);
    EXPECT_EQ(meta(none)->completed.load(), 0);
    ASSERT_TRUE(tasks.destroy_suspended(none));
    // The witness's timer fired after the destroyed task's deadline; a late
    // run of that task was made ready by then, and runs within these turns.
    ASSERT_TRUE(wait_until([&] { return meta(witness)->completed.load() == 1; }));
    let_the_cpu_turn();
    EXPECT_EQ(log.get(), (std::vector<std::string>{"n1", "t1", "w1", "w2"}))
        << "a destroyed task ran again";
}

// A submit that reaches the task while its body still runs is not lost:
// the suspension it pays for resumes the task at once.
TEST(Suspend, ASubmitWhileTheBodyRunsResumesItAtOnce) {
    Instance in("", /*attach=*/false);
    Tasks tasks;
    nosv_task_t t = tasks.make("a", 1, NOSV_SUSPEND_MODE_NONE, 0);
    meta(t)->self_submit = true;
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return meta(t)->completed.load() == 1; }));
    EXPECT_EQ(meta(t)->runs.load(), 2);
}

// Runs `a` (which suspends once) and then three plain tasks on one CPU,
// all queued before the CPU is free; returns the order of the body runs.
std::vector<std::string> order_on_one_cpu(nosv_suspend_mode_t mode, uint64_t args) {
    Instance in("topology.binding=0"); // the test thread holds the one CPU
    Log log;
    Tasks tasks;
    std::vector<nosv_task_t> all{tasks.make("a", 1, mode, args, &log)};
    for (const char* n : {"b", "c", "d"})
        all.push_back(tasks.make(n, 0, mode, args, &log));
    for (nosv_task_t t : all)
        EXPECT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    EXPECT_TRUE(yield_until([&] {
        for (nosv_task_t t : all)
            if (meta(t)->completed.load() != 1) return false;
        return true;
    }));
    return log.get();
}

// SUBMIT with args 0: the task is ready again at once and runs next on its
// CPU, before the tasks that were already waiting there.
TEST(Suspend, SubmitResumesAtOnce) {
    EXPECT_EQ(order_on_one_cpu(NOSV_SUSPEND_MODE_SUBMIT, 0),
              (std::vector<std::string>{"a1", "a2", "b1", "c1", "d1"}));
}

// SUBMIT with args 1: as nosv_yield, behind every task already ready.
TEST(Suspend, SubmitWithArgsOneResumesAfterTheOthers) {
    EXPECT_EQ(order_on_one_cpu(NOSV_SUSPEND_MODE_SUBMIT, 1),
              (std::vector<std::string>{"a1", "b1", "c1", "d1", "a2"}));
}

// TIMEOUT_SUBMIT: resumed by the runtime once the timeout has passed, not
// before; the CPU runs the other tasks meanwhile.
TEST(Suspend, TimeoutSubmitResumesAfterTheTimeout) {
    constexpr uint64_t timeout = 30'000'000;
    Instance in("topology.binding=0");
    Log log;
    Tasks tasks;
    nosv_task_t a = tasks.make("a", 1, NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT, timeout, &log);
    nosv_task_t b = tasks.make("b", 0, NOSV_SUSPEND_MODE_NONE, 0, &log);
    ASSERT_EQ(nosv_submit(a, 0), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(b, 0), NOSV_SUCCESS);
    ASSERT_TRUE(yield_until([&] { return meta(a)->completed.load() == 1; }));
    EXPECT_GE(meta(a)->resumed_at.load() - meta(a)->suspended_at.load(), timeout);
    EXPECT_EQ(log.get(), (std::vector<std::string>{"a1", "b1", "a2"}));
    // A short timeout, many times: no suspension is lost.
    nosv_task_t c = tasks.make("c", 200, NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT, 1000);
    ASSERT_EQ(nosv_submit(c, 0), NOSV_SUCCESS);
    ASSERT_TRUE(yield_until([&] { return meta(c)->completed.load() == 1; }));
    EXPECT_EQ(meta(c)->runs.load(), 201);
}

// A submit before the timeout resumes the task early; the timer then does
// nothing (the task completes and is freed: ASan would see a late timer). A
// witness suspended after it with the same timeout tells when its deadline
// has passed: timers fire in deadline order.
TEST(Suspend, ASubmitBeforeTheTimeoutResumesEarly) {
    // Longer than wait_until's patience: only the submit can end the
    // suspension within it.
    constexpr uint64_t timeout =
        uint64_t(std::chrono::nanoseconds(test::kPatience).count()) + 5'000'000'000;
    Instance in(kOneCpu, /*attach=*/false);
    Tasks witnesses;
    nosv_task_t witness = witnesses.make("w", 1, NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT, timeout);
    {
        Tasks tasks;
        nosv_task_t t = tasks.make("a", 1, NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT, timeout);
        ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return meta(t)->suspended_at.load() != 0; }));
        // On the one CPU it runs once `t` is suspended: its timer is due later.
        ASSERT_EQ(nosv_submit(witness, 0), NOSV_SUCCESS);
        ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return meta(t)->completed.load() == 1; }))
            << "the submit did not resume the task";
    } // destroyed here, before the timer's deadline
    // The witness's timer, due after it, fires once its own timeout is over.
    ASSERT_TRUE(wait_until([&] { return meta(witness)->completed.load() == 1; },
                           std::chrono::nanoseconds(timeout) + test::kPatience));
}

// EVENT_SUBMIT: resumed only once the last pending event is decreased (by
// a thread that is not a task), and at once when none is pending.
TEST(Suspend, EventSubmitResumesWhenTheEventsReachZero) {
    Instance in(kOneCpu, /*attach=*/false);
    Tasks tasks;
    nosv_task_t t = tasks.make("a", 1, NOSV_SUSPEND_MODE_EVENT_SUBMIT, 0);
    meta(t)->events = 2;
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return meta(t)->suspended_at.load() != 0; }));
    let_the_cpu_turn();
    EXPECT_EQ(meta(t)->runs.load(), 1);
    EXPECT_EQ(nosv_submit(t, 0), NOSV_ERR_INVALID_OPERATION) << "its events are pending";
    ASSERT_EQ(nosv_decrease_event_counter(t, 1), NOSV_SUCCESS);
    let_the_cpu_turn();
    EXPECT_EQ(meta(t)->runs.load(), 1) << "one event is still pending";
    ASSERT_EQ(nosv_decrease_event_counter(t, 1), NOSV_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return meta(t)->completed.load() == 1; }));
    EXPECT_EQ(meta(t)->runs.load(), 2);

    nosv_task_t none = tasks.make("b", 3, NOSV_SUSPEND_MODE_EVENT_SUBMIT, 0);
    ASSERT_EQ(nosv_submit(none, 0), NOSV_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return meta(none)->completed.load() == 1; }));
    EXPECT_EQ(meta(none)->runs.load(), 4);
}

// Events added before a suspension under another mode stay pending across
// the runs: the task completes only once they are gone.
TEST(Suspend, EventsPendingAcrossRunsDelayCompletion) {
    Instance in(kOneCpu, /*attach=*/false);
    Tasks tasks;
    nosv_task_t t = tasks.make("a", 1, NOSV_SUSPEND_MODE_SUBMIT, 1);
    meta(t)->events = 1;
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return meta(t)->ends.load() == 1; }));
    let_the_cpu_turn();
    EXPECT_EQ(meta(t)->completed.load(), 0);
    ASSERT_EQ(nosv_decrease_event_counter(t, 1), NOSV_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return meta(t)->completed.load() == 1; }));
    EXPECT_EQ(meta(t)->runs.load(), 2);
}

void run_checks_errors(nosv_task_t) {
    EXPECT_EQ(nosv_set_suspend_mode(NOSV_SUSPEND_MODE_SUBMIT, 2), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(call_nosv_mode_set_int(4, 0), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(call_nosv_mode_set_int(-1, 0), NOSV_ERR_INVALID_PARAMETER);
}

TEST(Suspend, BadCallsGetErrors) {
    EXPECT_EQ(nosv_suspend(), NOSV_ERR_NOT_INITIALIZED);
    EXPECT_EQ(nosv_set_suspend_mode(NOSV_SUSPEND_MODE_NONE, 0), NOSV_ERR_NOT_INITIALIZED);
    {
        Instance in("", /*attach=*/false);
        EXPECT_EQ(nosv_suspend(), NOSV_ERR_OUTSIDE_TASK);
        EXPECT_EQ(nosv_set_suspend_mode(NOSV_SUSPEND_MODE_NONE, 0), NOSV_ERR_OUTSIDE_TASK);
        nosv_task_type_t type;
        ASSERT_EQ(nosv_type_init(&type, run_checks_errors, nullptr, completed_counting, "e",
                                 nullptr, nullptr, 0),
                  NOSV_SUCCESS);
        nosv_task_t t;
        ASSERT_EQ(nosv_create(&t, type, sizeof(Meta), 0), NOSV_SUCCESS);
        new (nosv_get_task_metadata(t)) Meta{};
        ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return meta(t)->completed.load() == 1; }));
        EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
        EXPECT_EQ(nosv_type_destroy(type, 0), NOSV_SUCCESS);
    }
    Instance in; // attached: no body that could return
    EXPECT_EQ(nosv_set_suspend_mode(NOSV_SUSPEND_MODE_NONE, 0), NOSV_SUCCESS);
    EXPECT_EQ(nosv_suspend(), NOSV_ERR_INVALID_OPERATION);
}

// A task still waiting for its timeout when the runtime stops: shutdown
// neither hangs nor resumes it. In a child process: the task is dropped
// with the runtime, as nosv_shutdown documents, and cannot be destroyed.
TEST(Suspend, ShutdownWithATimerPendingDoesNotHang) {
    test::ScopedSegment seg;
    const int status = test::wait_child(test::fork_child([] {
        if (nosv_init() != NOSV_SUCCESS) return 10;
        nosv_task_type_t type;
        if (nosv_type_init(&type, run_suspending, nullptr, completed_counting, "t", nullptr,
                           nullptr, 0) != NOSV_SUCCESS)
            return 11;
        nosv_task_t t;
        if (nosv_create(&t, type, sizeof(Meta), 0) != NOSV_SUCCESS) return 12;
        Meta* m = new (nosv_get_task_metadata(t)) Meta{};
        m->suspends = 1;
        m->mode = NOSV_SUSPEND_MODE_TIMEOUT_SUBMIT;
        m->args = 60'000'000'000ULL;
        if (nosv_submit(t, 0) != NOSV_SUCCESS) return 13;
        if (!wait_until([&] { return m->suspended_at.load() != 0; })) return 14;
        const auto start = std::chrono::steady_clock::now();
        if (nosv_shutdown() != NOSV_SUCCESS) return 15;
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(5)) return 16;
        return m->runs.load() == 1 ? 0 : 17;
    }));
    EXPECT_EQ(status, 0);
}

// ---- ALPI: version, features, info, errors --------------------------------

TEST(Alpi, VersionFeaturesAndInfo) {
    int major = 0, minor = 0;
    ASSERT_EQ(alpi_version_get(&major, &minor), ALPI_SUCCESS);
    EXPECT_EQ(major, 1);
    EXPECT_EQ(minor, 2);
    EXPECT_EQ(ALPI_VERSION_MAJOR, 1);
    EXPECT_EQ(ALPI_VERSION_MINOR, 2);
    EXPECT_EQ(alpi_version_get(nullptr, &minor), ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_version_check(1, 0), ALPI_SUCCESS);
    EXPECT_EQ(alpi_version_check(1, 2), ALPI_SUCCESS);
    EXPECT_EQ(alpi_version_check(1, 3), ALPI_ERR_VERSION);
    EXPECT_EQ(alpi_version_check(0, 9), ALPI_ERR_VERSION);
    EXPECT_EQ(alpi_version_check(2, 0), ALPI_ERR_VERSION);

    EXPECT_EQ(alpi_feature_check(ALPI_FEATURE_BLOCKING), ALPI_SUCCESS);
    EXPECT_EQ(alpi_feature_check(ALPI_FEATURE_EVENTS), ALPI_SUCCESS);
    EXPECT_EQ(alpi_feature_check(ALPI_FEATURE_RESOURCES), ALPI_SUCCESS);
    EXPECT_EQ(alpi_feature_check(ALPI_FEATURE_SUSPEND), ALPI_SUCCESS);
    EXPECT_EQ(alpi_feature_check(ALPI_SUPPORTED_FEATURES), ALPI_SUCCESS);
    EXPECT_EQ(ALPI_SUPPORTED_FEATURES, 0xf);
    EXPECT_EQ(alpi_feature_check(1 << 15), ALPI_ERR_FEATURE_UNKNOWN);
    EXPECT_EQ(alpi_feature_check(ALPI_FEATURE_EVENTS | (1 << 4)), ALPI_ERR_FEATURE_UNKNOWN);

    char buf[64];
    int len = -1;
    ASSERT_EQ(alpi_info_get(ALPI_INFO_RUNTIME_NAME, buf, sizeof buf, &len), ALPI_SUCCESS);
    EXPECT_STREQ(buf, "coexec");
    EXPECT_EQ(len, 6);
    ASSERT_EQ(alpi_info_get(ALPI_INFO_VERSION, buf, sizeof buf, nullptr), ALPI_SUCCESS);
    EXPECT_STREQ(buf, "ALPI 1.2 (coexec)");
    ASSERT_EQ(alpi_info_get(ALPI_INFO_VERSION, buf, 5, &len), ALPI_SUCCESS);
    EXPECT_STREQ(buf, "ALPI") << "truncated to the buffer";
    EXPECT_EQ(len, 4);
    EXPECT_EQ(alpi_info_get(ALPI_INFO_RUNTIME_VENDOR, nullptr, 8, &len), ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_info_get(ALPI_INFO_RUNTIME_VENDOR, buf, 0, &len), ALPI_ERR_PARAMETER);
    EXPECT_EQ(call_alpi_info_get_int(3, buf, sizeof buf, &len), ALPI_ERR_PARAMETER);
    EXPECT_EQ(call_alpi_info_get_int(-1, buf, sizeof buf, &len), ALPI_ERR_PARAMETER);
}

TEST(Alpi, ErrorStrings) {
    std::vector<std::string> seen;
    for (int e = ALPI_SUCCESS; e < ALPI_ERR_MAX; ++e) {
        const char* s = alpi_error_string(alpi_error_t(e));
        ASSERT_NE(s, nullptr);
        EXPECT_STRNE(s, "Error code not recognized") << e;
        for (const auto& other : seen)
            EXPECT_NE(other, s) << "two codes with one text";
        seen.emplace_back(s);
    }
    EXPECT_STREQ(alpi_error_string(ALPI_ERR_MAX), "Error code not recognized");
}

// ---- ALPI: tasks -------------------------------------------------------------

TEST(Alpi, OutsideATaskAndBeforeInit) {
    alpi_task* self = reinterpret_cast<alpi_task*>(0x1);
    uint64_t v = 0;
    EXPECT_EQ(alpi_task_self(&self), ALPI_SUCCESS);
    EXPECT_EQ(self, nullptr);
    EXPECT_EQ(alpi_cpu_count(&v), ALPI_ERR_NOT_INITIALIZED);
    EXPECT_EQ(alpi_task_block(nullptr), ALPI_ERR_NOT_INITIALIZED);
    EXPECT_EQ(alpi_task_spawn([](void*) {}, nullptr, [](void*) {}, nullptr, "x", nullptr),
              ALPI_ERR_NOT_INITIALIZED);
    Instance in("", /*attach=*/false);
    EXPECT_EQ(alpi_task_self(&self), ALPI_SUCCESS);
    EXPECT_EQ(self, nullptr) << "a plain thread is no task";
    EXPECT_EQ(alpi_task_self(nullptr), ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_task_block(nullptr), ALPI_ERR_OUTSIDE_TASK);
    EXPECT_EQ(alpi_task_waitfor_ns(1000, nullptr), ALPI_ERR_OUTSIDE_TASK);
    EXPECT_EQ(alpi_task_waitfor_ns(0, nullptr), ALPI_ERR_OUTSIDE_TASK);
    EXPECT_EQ(alpi_task_events_increase(nullptr, 1), ALPI_ERR_OUTSIDE_TASK);
    EXPECT_EQ(alpi_task_events_test(nullptr, &v), ALPI_ERR_OUTSIDE_TASK);
    EXPECT_EQ(alpi_task_suspend(nullptr), ALPI_ERR_OUTSIDE_TASK);
    EXPECT_EQ(alpi_task_suspend_mode_set(nullptr, ALPI_SUSPEND_NONE, 0), ALPI_ERR_OUTSIDE_TASK);
    EXPECT_EQ(alpi_cpu_logical_id(&v), ALPI_ERR_OUTSIDE_TASK);
    EXPECT_EQ(alpi_cpu_system_id(&v), ALPI_ERR_OUTSIDE_TASK);
    EXPECT_EQ(alpi_task_unblock(nullptr), ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_task_events_decrease(nullptr, 1), ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_cpu_count(nullptr), ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_task_spawn(
                  nullptr, nullptr, [](void*) {}, nullptr, "x", nullptr),
              ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_task_spawn([](void*) {}, nullptr, nullptr, nullptr, "x", nullptr),
              ALPI_ERR_PARAMETER);
    alpi_attr* attr = reinterpret_cast<alpi_attr*>(0x1);
    EXPECT_EQ(alpi_attr_create(&attr), ALPI_SUCCESS);
    EXPECT_EQ(attr, nullptr) << "the default attributes";
    EXPECT_EQ(alpi_attr_init(attr), ALPI_SUCCESS);
    EXPECT_EQ(alpi_attr_size(&v), ALPI_SUCCESS);
    EXPECT_EQ(v, 0u);
    EXPECT_EQ(alpi_attr_destroy(attr), ALPI_SUCCESS);
    EXPECT_EQ(alpi_attr_create(nullptr), ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_attr_size(nullptr), ALPI_ERR_PARAMETER);
}

// The attached test thread is a task: its own handle, the CPU it holds, and
// the wrong handle where the caller's is required.
TEST(Alpi, AttachedThreadIsATaskWithItsCpu) {
    Instance in;
    alpi_task* self = nullptr;
    ASSERT_EQ(alpi_task_self(&self), ALPI_SUCCESS);
    EXPECT_EQ(reinterpret_cast<nosv_task_t>(self), in.main());
    uint64_t count = 0, logical = 0, system = 0;
    ASSERT_EQ(alpi_cpu_count(&count), ALPI_SUCCESS);
    EXPECT_EQ(count, uint64_t(nosv_get_num_cpus()));
    ASSERT_EQ(alpi_cpu_logical_id(&logical), ALPI_SUCCESS);
    ASSERT_EQ(alpi_cpu_system_id(&system), ALPI_SUCCESS);
    EXPECT_LT(logical, count);
    EXPECT_EQ(logical, uint64_t(nosv_get_current_logical_cpu()));
    EXPECT_EQ(system, uint64_t(nosv_get_current_system_cpu()));
    EXPECT_EQ(alpi_cpu_logical_id(nullptr), ALPI_ERR_PARAMETER);

    Tasks tasks; // a real task that is not the caller
    alpi_task* other = reinterpret_cast<alpi_task*>(tasks.make("o", 0, NOSV_SUSPEND_MODE_NONE, 0));
    EXPECT_EQ(alpi_task_block(other), ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_task_events_increase(other, 1), ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_task_suspend(other), ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_task_suspend(self), ALPI_ERR_UNKNOWN) << "an attached thread has no body";
    EXPECT_EQ(alpi_task_suspend_mode_set(self, ALPI_SUSPEND_SUBMIT, 7), ALPI_ERR_PARAMETER);
    EXPECT_EQ(call_alpi_mode_set_int(self, 9, 0), ALPI_ERR_PARAMETER);
    EXPECT_EQ(alpi_task_events_test(self, nullptr), ALPI_ERR_PARAMETER);
    uint64_t actual = 0;
    ASSERT_EQ(alpi_task_waitfor_ns(2'000'000, &actual), ALPI_SUCCESS);
    EXPECT_GE(actual, 2'000'000u);
    EXPECT_EQ(alpi_task_waitfor_ns(0, &actual), ALPI_SUCCESS);
    EXPECT_LT(actual, 2'000'000'000u);
    EXPECT_EQ(alpi_task_waitfor_ns(0, nullptr), ALPI_SUCCESS);
}

// Spawned tasks for the block/unblock and events tests.
struct Shared {
    std::atomic<alpi_task*> blocked{nullptr};
    std::atomic<int> resumed{0};
    std::atomic<int> completions{0};
    std::atomic<int> helper_ran{0};
    std::atomic<uint64_t> has_events{99};
    std::atomic<int> cpu_ok{0};
    std::atomic<bool> body_done{false};
};

void check_cpu(Shared* s) {
    uint64_t count = 0, logical = 0, system = 0;
    if (alpi_cpu_count(&count) == 0 && alpi_cpu_logical_id(&logical) == 0 &&
        alpi_cpu_system_id(&system) == 0 && logical < count &&
        int(logical) == nosv_get_current_logical_cpu() &&
        int(system) == nosv_get_current_system_cpu())
        s->cpu_ok.fetch_add(1);
}

void blocking_body(void* arg) {
    auto* s = static_cast<Shared*>(arg);
    check_cpu(s);
    alpi_task* self = nullptr;
    EXPECT_EQ(alpi_task_self(&self), ALPI_SUCCESS);
    s->blocked.store(self);
    EXPECT_EQ(alpi_task_block(self), ALPI_SUCCESS);
    s->resumed.fetch_add(1);
}
void unblocking_body(void* arg) {
    auto* s = static_cast<Shared*>(arg);
    check_cpu(s);
    s->helper_ran.fetch_add(1);
    // One CPU: the blocked task gave it up, or this could not run.
    EXPECT_EQ(alpi_task_unblock(s->blocked.load()), ALPI_SUCCESS);
}
void count_completion(void* arg) {
    static_cast<Shared*>(arg)->completions.fetch_add(1);
}

// A task blocked through ALPI gives its CPU to other work and is unblocked
// by another task (one CPU: the unblocking task runs on the blocked one's
// CPU) and, in a second round, by a plain thread.
TEST(Alpi, BlockedTaskIsUnblockedByATaskAndByAPlainThread) {
    Instance in("topology.binding=0", /*attach=*/false);
    Shared s;
    ASSERT_EQ(alpi_task_spawn(blocking_body, &s, count_completion, &s, "blocks", nullptr),
              ALPI_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return s.blocked.load() != nullptr; }));
    ASSERT_EQ(alpi_task_spawn(unblocking_body, &s, count_completion, &s, "unblocks", nullptr),
              ALPI_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return s.completions.load() == 2; }));
    EXPECT_EQ(s.resumed.load(), 1);
    EXPECT_EQ(s.helper_ran.load(), 1);
    EXPECT_EQ(s.cpu_ok.load(), 2);

    s.blocked = nullptr;
    ASSERT_EQ(alpi_task_spawn(blocking_body, &s, count_completion, &s, "blocks", nullptr),
              ALPI_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return s.blocked.load() != nullptr; }));
    std::thread plain([&] { EXPECT_EQ(alpi_task_unblock(s.blocked.load()), ALPI_SUCCESS); });
    plain.join();
    ASSERT_TRUE(wait_until([&] { return s.completions.load() == 3; }));
    EXPECT_EQ(s.resumed.load(), 2);
}

void unblock_then_block_body(void* arg) {
    auto* s = static_cast<Shared*>(arg);
    alpi_task* self = nullptr;
    EXPECT_EQ(alpi_task_self(&self), ALPI_SUCCESS);
    EXPECT_EQ(alpi_task_unblock(self), ALPI_SUCCESS);
    EXPECT_EQ(alpi_task_block(self), ALPI_SUCCESS); // paid for: returns at once
    s->resumed.fetch_add(1);
}

// One unblock may come before its block, which then returns at once.
TEST(Alpi, UnblockBeforeBlockIsKept) {
    Instance in("", /*attach=*/false);
    Shared s;
    ASSERT_EQ(alpi_task_spawn(unblock_then_block_body, &s, count_completion, &s, "ub", nullptr),
              ALPI_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return s.completions.load() == 1; }));
    EXPECT_EQ(s.resumed.load(), 1);
}

void events_body(void* arg) {
    auto* s = static_cast<Shared*>(arg);
    alpi_task* self = nullptr;
    EXPECT_EQ(alpi_task_self(&self), ALPI_SUCCESS);
    uint64_t has = 99;
    EXPECT_EQ(alpi_task_events_test(self, &has), ALPI_SUCCESS);
    EXPECT_EQ(has, 0u);
    EXPECT_EQ(alpi_task_events_increase(self, 0), ALPI_SUCCESS);
    EXPECT_EQ(alpi_task_events_increase(self, 2), ALPI_SUCCESS);
    EXPECT_EQ(alpi_task_events_test(self, &has), ALPI_SUCCESS);
    s->has_events.store(has);
    s->blocked.store(self);
    s->body_done.store(true);
}

// A task's completion (and its callback) waits until every event it added
// is decreased, whoever decreases them; decreasing more is refused.
TEST(Alpi, EventsDelayCompletionUntilZero) {
    Instance in(kOneCpu, /*attach=*/false);
    Shared s;
    ASSERT_EQ(alpi_task_spawn(events_body, &s, count_completion, &s, "events", nullptr),
              ALPI_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return s.body_done.load(); }));
    EXPECT_EQ(s.has_events.load(), 1u);
    let_the_cpu_turn();
    EXPECT_EQ(s.completions.load(), 0) << "two events pending";
    alpi_task* t = s.blocked.load();
    EXPECT_EQ(alpi_task_events_decrease(t, 3), ALPI_ERR_PARAMETER) << "only two are pending";
    EXPECT_EQ(alpi_task_events_decrease(t, 0), ALPI_SUCCESS);
    ASSERT_EQ(alpi_task_events_decrease(t, 1), ALPI_SUCCESS);
    let_the_cpu_turn();
    EXPECT_EQ(s.completions.load(), 0) << "one event pending";
    std::thread plain([&] { EXPECT_EQ(alpi_task_events_decrease(t, 1), ALPI_SUCCESS); });
    plain.join();
    ASSERT_TRUE(wait_until([&] { return s.completions.load() == 1; }));
}

struct SpawnArgs {
    std::atomic<int> body{0};
    std::atomic<int> done{0};
    std::atomic<bool> body_before_done{false};
};

// Spawned tasks run their body, then the completion callback with its own
// argument; many at once, from a plain thread.
TEST(Alpi, SpawnRunsTheBodyThenTheCompletionCallback) {
    Instance in("", /*attach=*/false);
    constexpr int n = 200;
    SpawnArgs a;
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(alpi_task_spawn([](void* p) { static_cast<SpawnArgs*>(p)->body.fetch_add(1); },
                                  &a,
                                  [](void* p) {
                                      auto* x = static_cast<SpawnArgs*>(p);
                                      if (x->body.load() > x->done.load())
                                          x->body_before_done.store(true);
                                      x->done.fetch_add(1);
                                  },
                                  &a, i % 2 ? "spawned" : nullptr, nullptr),
                  ALPI_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return a.done.load() == n; }));
    EXPECT_EQ(a.body.load(), n);
    EXPECT_TRUE(a.body_before_done.load());
}

struct SuspendingSpawn {
    std::atomic<int> runs{0};
    std::atomic<alpi_task*> task{nullptr};
    std::atomic<int> completions{0};
};

void alpi_suspending_body(void* arg) {
    auto* s = static_cast<SuspendingSpawn*>(arg);
    alpi_task* self = nullptr;
    EXPECT_EQ(alpi_task_self(&self), ALPI_SUCCESS);
    const int run = s->runs.fetch_add(1);
    if (run == 0) {
        EXPECT_EQ(alpi_task_suspend_mode_set(self, ALPI_SUSPEND_NONE, 0), ALPI_SUCCESS);
        EXPECT_EQ(alpi_task_suspend(self), ALPI_SUCCESS);
        s->task.store(self);
    } else if (run == 1) {
        EXPECT_EQ(alpi_task_events_increase(self, 1), ALPI_SUCCESS);
        EXPECT_EQ(alpi_task_suspend_mode_set(self, ALPI_SUSPEND_EVENT_SUBMIT, 0), ALPI_SUCCESS);
        EXPECT_EQ(alpi_task_suspend(self), ALPI_SUCCESS);
        EXPECT_EQ(alpi_task_events_decrease(self, 1), ALPI_SUCCESS); // before the body returns
    }
}

// ALPI's suspend: mode NONE is resumed by alpi_task_unblock; EVENT_SUBMIT by
// the last event (here decreased before the body even returned).
TEST(Alpi, SuspendAndUnblock) {
    Instance in(kOneCpu, /*attach=*/false);
    SuspendingSpawn s;
    ASSERT_EQ(alpi_task_spawn(
                  alpi_suspending_body, &s,
                  [](void* p) { static_cast<SuspendingSpawn*>(p)->completions.fetch_add(1); }, &s,
                  "suspends", nullptr),
              ALPI_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return s.task.load() != nullptr; }));
    let_the_cpu_turn();
    EXPECT_EQ(s.runs.load(), 1);
    ASSERT_EQ(alpi_task_unblock(s.task.load()), ALPI_SUCCESS);
    ASSERT_TRUE(wait_until([&] { return s.completions.load() == 1; }));
    EXPECT_EQ(s.runs.load(), 3);
}

} // namespace
