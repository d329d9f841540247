// The C API in one process: argument and state checks, and the behaviour
// of submit/pause/yield/waitfor/events/affinity/priority.
#include "support.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace coexec;

namespace {

using test::Instance;

// Waits (pausing the calling task) until `done` callbacks have run.
struct Countdown {
    std::atomic<int> left;
    nosv_task_t waiter;
    explicit Countdown(int n) : left(n), waiter(nosv_self()) {}
    void hit() {
        const nosv_task_t w = waiter; // first: at zero the waiter may leave
        if (left.fetch_sub(1) == 1) nosv_submit(w, NOSV_SUBMIT_NONE);
    }
    void wait() {
        while (left.load() > 0)
            ASSERT_EQ(nosv_pause(NOSV_PAUSE_NONE), NOSV_SUCCESS);
    }
};

struct Meta {
    Countdown* countdown;
    int value;
    int ran_on;
    int order;
};

std::atomic<int> g_order{0};

void run_record(nosv_task_t t) {
    auto* m = static_cast<Meta*>(nosv_get_task_metadata(t));
    m->ran_on = nosv_get_current_system_cpu();
    m->order = g_order.fetch_add(1);
}
void completed_hit(nosv_task_t t) {
    static_cast<Meta*>(nosv_get_task_metadata(t))->countdown->hit();
}

nosv_task_type_t make_type(const char* label = "t") {
    nosv_task_type_t type;
    EXPECT_EQ(nosv_type_init(&type, run_record, nullptr, completed_hit, label, nullptr, nullptr, 0),
              0);
    return type;
}

nosv_task_t make_task(nosv_task_type_t type, Countdown* cd) {
    nosv_task_t t;
    EXPECT_EQ(nosv_create(&t, type, sizeof(Meta), NOSV_CREATE_NONE), NOSV_SUCCESS);
    static_cast<Meta*>(nosv_get_task_metadata(t))->countdown = cd;
    return t;
}

// nosv_get_available_cpus(), copied; the array is the caller's to free.
std::vector<int> available_cpus() {
    int* array = nosv_get_available_cpus();
    EXPECT_NE(array, nullptr);
    if (!array) return {};
    std::vector<int> out(array, array + nosv_get_num_cpus());
    std::free(array);
    return out;
}

} // namespace

TEST(Api, CallsBeforeInitReturnNotInitialized) {
    nosv_task_t t = nullptr;
    nosv_task_type_t type = nullptr;
    EXPECT_EQ(nosv_shutdown(), NOSV_ERR_NOT_INITIALIZED);
    EXPECT_EQ(nosv_create(&t, type, 0, 0), NOSV_ERR_NOT_INITIALIZED);
    EXPECT_EQ(nosv_attach(&t, nullptr, "x", 0), NOSV_ERR_NOT_INITIALIZED);
    EXPECT_EQ(nosv_pause(0), NOSV_ERR_NOT_INITIALIZED);
    EXPECT_EQ(nosv_yield(0), NOSV_ERR_NOT_INITIALIZED);
    EXPECT_EQ(nosv_get_num_cpus(), NOSV_ERR_NOT_INITIALIZED);
    EXPECT_EQ(nosv_get_available_cpus(), nullptr);
    EXPECT_EQ(nosv_self(), nullptr);
    EXPECT_EQ(coexec_is_active(), 0);
}

TEST(Api, InitNestsAndShutdownReleasesEverything) {
    test::ScopedSegment seg;
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
    EXPECT_EQ(coexec_is_active(), 1);
    {
        // An open mapping (as `coexec top` holds) keeps the segment alive.
        auto watcher = seg.map();
        ASSERT_TRUE(watcher);
        EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
        EXPECT_EQ(coexec_is_active(), 0);
        // It shows no process and no held CPU.
        EXPECT_EQ(watcher->header.alive_count, 0);
        for (int c = 0; c < watcher->header.cpu_count; ++c)
            EXPECT_EQ(watcher->cpus[c].owner_proc.load(), shm::kNone);
    }
    EXPECT_EQ(nosv_shutdown(), NOSV_ERR_NOT_INITIALIZED);
}

// Nothing stays in /dev/shm once the last process of an instance has shut
// down; the next nosv_init creates the segment again.
TEST(Api, LastProcessOutRemovesTheSegment) {
    test::ScopedSegment seg;
    const std::string path = "/dev/shm" + shm::segment_shm_name(seg.options());
    // The child is forked before we start coexec's threads (a fork taken
    // while they run may copy a lock held by one of them, such as the
    // sanitizer allocator's) and joins once we are in the instance.
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    pid_t child = ::fork();
    if (child == 0) {
        // A second process of the instance: its exit must not remove the
        // segment while we are still in it.
        char byte = 0;
        ::close(go[1]);
        bool ok = ::read(go[0], &byte, 1) == 1;
        ::unsetenv("COEXEC_DISABLE");
        ok = ok && nosv_init() == NOSV_SUCCESS && nosv_shutdown() == NOSV_SUCCESS;
        ::_exit(ok ? 0 : 1);
    }
    ::close(go[0]);
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    EXPECT_EQ(::access(path.c_str(), F_OK), 0);
    EXPECT_EQ(::write(go[1], "g", 1), 1);
    ::close(go[1]);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT_EQ(::access(path.c_str(), F_OK), 0) << "removed while a process was still in it";
    EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << path << " left behind";
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    EXPECT_EQ(::access(path.c_str(), F_OK), 0);
    EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
}

// nosv_init() returns while the threads it created may still be starting.
// A fork() at that moment must not copy a lock one of them holds: under ASan
// (clang 14), whose allocator takes no lock around fork(), the child's first
// allocation would wait forever. fork() waits for them (ThreadStarts).
TEST(Api, AChildForkedRightAfterInitCanAllocate) {
    test::ScopedSegment seg;
    for (int round = 0; round < 100; ++round) {
        ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
        pid_t child = test::fork_child([] {
            std::vector<std::string> v(1000, std::string(100, 'x'));
            return nosv_init() == NOSV_SUCCESS && nosv_shutdown() == NOSV_SUCCESS ? 0 : 1;
        });
        ASSERT_EQ(test::wait_child(child, std::chrono::seconds(20)), 0) << "round " << round;
        ASSERT_EQ(nosv_shutdown(), NOSV_SUCCESS);
    }
}

// A process that exits without its last nosv_shutdown() (PoCL's workers are
// still parked at exit, so its adapter cannot shut down) takes the name with
// it when no other process has the segment open; otherwise the name stays
// for the others, and the next init reclaims the dead member.
TEST(Api, AProcessThatExitsWithoutShutdownRemovesTheNameWhenAlone) {
    test::ScopedSegment seg;
    const std::string path = "/dev/shm" + shm::segment_shm_name(seg.options());
    auto exit_attached = [] {
        ::unsetenv("COEXEC_DISABLE");
        if (nosv_init() != NOSV_SUCCESS) return 1;
        std::atomic<bool> attached{false};
        std::thread([&] {
            nosv_task_t task;
            if (nosv_attach(&task, nullptr, "parked", NOSV_ATTACH_NONE) == NOSV_SUCCESS)
                attached = true;
            for (;;)
                ::pause(); // still attached when the process exits
        }).detach();
        while (!attached)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::exit(0); // runs static destructors, unlike the fork helpers' _exit
    };
    ASSERT_EQ(test::wait_child(test::fork_child(exit_attached)), 0);
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << path << " left behind";

    // With the segment open here (as `coexec top` holds it), the name stays.
    int ready[2], go[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(go), 0);
    pid_t child = test::fork_child([&] {
        ::unsetenv("COEXEC_DISABLE");
        if (nosv_init() != NOSV_SUCCESS) return 1;
        char byte = 'r';
        if (::write(ready[1], &byte, 1) != 1 || ::read(go[0], &byte, 1) != 1) return 2;
        std::exit(0);
    });
    char byte = 0;
    ASSERT_EQ(::read(ready[0], &byte, 1), 1);
    shm::SegmentError e;
    shm::SegmentMapping watcher = shm::SegmentMapping::open(seg.options(), e);
    ASSERT_TRUE(watcher) << e.message;
    ASSERT_EQ(::write(go[1], "g", 1), 1);
    for (int fd : {ready[0], ready[1], go[0], go[1]})
        ::close(fd);
    ASSERT_EQ(test::wait_child(child), 0);
    EXPECT_EQ(::access(path.c_str(), F_OK), 0) << "removed while another process had it open";
    watcher = {};
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS); // reclaims the dead member
    EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << path << " left behind";
}

TEST(Api, ErrorStringsNameEveryCode) {
    for (int code = NOSV_SUCCESS; code > NOSV_ERR_MAX; --code)
        EXPECT_STRNE(nosv_get_error_string(code), "Error code not recognized") << code;
    EXPECT_STREQ(nosv_get_error_string(NOSV_ERR_MAX), "Error code not recognized");
    EXPECT_STREQ(nosv_get_error_string(42), "Error code not recognized");
}

TEST(Api, BadArgumentsGetDocumentedCodes) {
    Instance in;
    nosv_task_type_t type;
    nosv_task_t t;
    EXPECT_EQ(nosv_type_init(nullptr, run_record, nullptr, nullptr, "x", nullptr, nullptr, 0),
              NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_type_init(&type, nullptr, nullptr, nullptr, "x", nullptr, nullptr, 0),
              NOSV_ERR_INVALID_CALLBACK);
    EXPECT_EQ(nosv_type_init(&type, run_record, nullptr, nullptr, "x", nullptr, nullptr,
                             NOSV_TYPE_INIT_EXTERNAL),
              NOSV_ERR_INVALID_CALLBACK);
    EXPECT_EQ(nosv_type_init(&type, run_record, nullptr, nullptr, "x", nullptr, nullptr, 1u << 7),
              NOSV_ERR_INVALID_PARAMETER);
    type = make_type();
    EXPECT_EQ(nosv_create(nullptr, type, 0, 0), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_create(&t, nullptr, 0, 0), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_create(&t, type, NOSV_MAX_METADATA_SIZE + 1, 0), NOSV_ERR_INVALID_METADATA_SIZE);
    EXPECT_EQ(nosv_create(&t, type, 0, 1u << 5), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_submit(nullptr, 0), NOSV_ERR_INVALID_PARAMETER);
    ASSERT_EQ(nosv_create(&t, type, NOSV_MAX_METADATA_SIZE, 0), NOSV_SUCCESS);
    EXPECT_EQ(nosv_submit(t, 1u << 20), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_INLINE | NOSV_SUBMIT_IMMEDIATE),
              NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_pause(1), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_destroy(nullptr, 0), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_decrease_event_counter(nullptr, 1), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_increase_event_counter(0), NOSV_ERR_INVALID_PARAMETER);
    nosv_affinity_t bad =
        nosv_affinity_get(4000, NOSV_AFFINITY_LEVEL_CPU, NOSV_AFFINITY_TYPE_STRICT);
    std::thread([&] {
        nosv_task_t x;
        EXPECT_EQ(nosv_attach(&x, &bad, "x", 0), NOSV_ERR_INVALID_PARAMETER);
        EXPECT_EQ(nosv_attach(nullptr, nullptr, "x", 0), NOSV_ERR_INVALID_PARAMETER);
    }).join();
    EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
    EXPECT_EQ(nosv_type_destroy(type, 0), NOSV_SUCCESS);
    EXPECT_EQ(nosv_type_destroy(nullptr, 0), NOSV_ERR_INVALID_PARAMETER);
}

TEST(Api, CallsOutsideATaskReturnOutsideTask) {
    Instance in("", false);
    EXPECT_EQ(nosv_self(), nullptr);
    EXPECT_EQ(nosv_pause(0), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_EQ(nosv_yield(0), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_EQ(nosv_schedpoint(0), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_EQ(nosv_waitfor(10, nullptr), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_EQ(nosv_increase_event_counter(1), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_EQ(nosv_has_events(), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_EQ(nosv_detach(0), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_EQ(nosv_get_current_logical_cpu(), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_EQ(coexec_block_enter(), NOSV_ERR_OUTSIDE_TASK);
    nosv_task_type_t type = make_type();
    nosv_task_t t;
    ASSERT_EQ(nosv_create(&t, type, sizeof(Meta), 0), 0);
    EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_INLINE), NOSV_ERR_OUTSIDE_TASK);
    nosv_destroy(t, 0);
    nosv_type_destroy(type, 0);
}

// nOS-V's nested attach: an attached thread attaches again and gets its own
// task; only the outermost nosv_detach detaches it (also from a blocked
// section, where the thread is outside coexec).
TEST(Api, NestedAttachNestsAndOnlyTheOutermostDetachDetaches) {
    Instance in; // the main thread is attached
    nosv_task_t self = nosv_self();
    nosv_task_t inner = nullptr, innermost = nullptr;
    ASSERT_EQ(nosv_attach(&inner, nullptr, "inner", 0), NOSV_SUCCESS);
    EXPECT_EQ(inner, self);
    ASSERT_EQ(coexec_block_enter(), 0);
    ASSERT_EQ(nosv_attach(&innermost, nullptr, "innermost", 0), NOSV_SUCCESS);
    EXPECT_EQ(innermost, self);
    ASSERT_EQ(nosv_detach(0), NOSV_SUCCESS);
    ASSERT_EQ(coexec_block_exit(), 0);
    ASSERT_EQ(nosv_detach(0), NOSV_SUCCESS);
    EXPECT_EQ(nosv_self(), self) << "an inner detach detached the thread";
    EXPECT_GE(nosv_get_current_logical_cpu(), 0) << "still attached: it holds a CPU";
    // A task body runs on a worker: not the caller's thread to attach.
    nosv_task_type_t type = nullptr;
    ASSERT_EQ(nosv_type_init(
                  &type,
                  [](nosv_task_t) {
                      nosv_task_t t;
                      EXPECT_EQ(nosv_attach(&t, nullptr, "worker", 0), NOSV_ERR_INVALID_OPERATION);
                  },
                  nullptr, nullptr, "w", nullptr, nullptr, 0),
              0);
    nosv_task_t t;
    ASSERT_EQ(nosv_create(&t, type, 0, 0), 0);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), 0);
    nosv_destroy(t, 0);
    nosv_type_destroy(type, 0);
}

// A second submit before the task runs pays for a pause (nOS-V's blocking
// count); one that no pause uses is dropped when the body ends: the task
// runs and completes once.
TEST(Api, ASubmitNoPauseUsesIsDropped) {
    Instance in("topology.binding=0"); // we hold the only CPU: the task waits
    nosv_task_type_t type = make_type();
    Countdown cd(1);
    nosv_task_t t = make_task(type, &cd);
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(t, 0), NOSV_SUCCESS);
    cd.wait();
    // Nothing is left to run it again.
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(nosv_yield(0), NOSV_SUCCESS);
    EXPECT_EQ(cd.left.load(), 0);
    EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
}

TEST(Api, ManyTasksRunAndCompleteOnce) {
    Instance in;
    nosv_task_type_t type = make_type();
    constexpr int n = 2000;
    Countdown cd(n);
    std::vector<nosv_task_t> tasks;
    for (int i = 0; i < n; ++i) {
        tasks.push_back(make_task(type, &cd));
        ASSERT_EQ(nosv_submit(tasks.back(), 0), NOSV_SUCCESS);
    }
    cd.wait();
    EXPECT_EQ(cd.left.load(), 0);
    for (auto t : tasks)
        EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
}

TEST(Api, PriorityOrderOnOneCpu) {
    Instance in("topology.binding=0");
    nosv_task_type_t type = make_type();
    Countdown cd(3);
    nosv_task_t lo = make_task(type, &cd), mid = make_task(type, &cd), hi = make_task(type, &cd);
    nosv_set_task_priority(lo, 1);
    nosv_set_task_priority(mid, 5);
    nosv_set_task_priority(hi, 9);
    EXPECT_EQ(nosv_get_task_priority(hi), 9);
    // The main task holds the only CPU while submitting: order is decided
    // by priority when it pauses.
    for (auto t : {lo, mid, hi})
        ASSERT_EQ(nosv_submit(t, 0), 0);
    cd.wait();
    auto order = [](nosv_task_t t) { return static_cast<Meta*>(nosv_get_task_metadata(t))->order; };
    EXPECT_LT(order(hi), order(mid));
    EXPECT_LT(order(mid), order(lo));
    for (auto t : {lo, mid, hi})
        nosv_destroy(t, 0);
    nosv_type_destroy(type, 0);
}

TEST(Api, StrictAffinityRunsOnlyThere) {
    Instance in;
    nosv_task_type_t type = make_type();
    int ncpu = nosv_get_num_cpus();
    const std::vector<int> cpus = available_cpus();
    constexpr int per_cpu = 20;
    Countdown cd(ncpu * per_cpu);
    std::vector<nosv_task_t> tasks;
    for (int c = 0; c < ncpu; ++c)
        for (int i = 0; i < per_cpu; ++i) {
            nosv_task_t t = make_task(type, &cd);
            nosv_affinity_t a = nosv_affinity_get(uint32_t(cpus[c]), NOSV_AFFINITY_LEVEL_CPU,
                                                  NOSV_AFFINITY_TYPE_STRICT);
            nosv_set_task_affinity(t, &a);
            EXPECT_EQ(nosv_get_task_affinity(t).index, uint32_t(cpus[c]));
            static_cast<Meta*>(nosv_get_task_metadata(t))->value = cpus[c];
            ASSERT_EQ(nosv_submit(t, 0), 0);
            tasks.push_back(t);
        }
    cd.wait();
    for (auto t : tasks) {
        auto* m = static_cast<Meta*>(nosv_get_task_metadata(t));
        EXPECT_EQ(m->ran_on, m->value);
        nosv_destroy(t, 0);
    }
    nosv_type_destroy(type, 0);
}

TEST(Api, SubmitBeforePauseIsNotLost) {
    Instance in;
    // Resume ourselves first, then pause: the pause must return at once.
    ASSERT_EQ(nosv_submit(in.main(), 0), NOSV_SUCCESS);
    EXPECT_EQ(nosv_pause(0), NOSV_SUCCESS);
    EXPECT_EQ(nosv_self(), in.main());
}

TEST(Api, PausedTaskIsResumedByAnotherTask) {
    Instance in;
    static nosv_task_t waiter;
    waiter = in.main();
    nosv_task_type_t type;
    ASSERT_EQ(nosv_type_init(
                  &type, [](nosv_task_t) { nosv_submit(waiter, 0); }, nullptr, nullptr, "r",
                  nullptr, nullptr, 0),
              0);
    nosv_task_t t;
    ASSERT_EQ(nosv_create(&t, type, 0, 0), 0);
    ASSERT_EQ(nosv_submit(t, 0), 0);
    EXPECT_EQ(nosv_pause(0), NOSV_SUCCESS);
    // Wait until the resumer has fully ended before destroying it.
    while (nosv_destroy(t, 0) != NOSV_SUCCESS)
        nosv_yield(0);
    nosv_type_destroy(type, 0);
}

TEST(Api, WaitforSleepsWithoutACpuAndDeadlineWakeEndsItEarly) {
    Instance in;
    uint64_t actual = 0;
    ASSERT_EQ(nosv_waitfor(20'000'000, &actual), NOSV_SUCCESS);
    EXPECT_GE(actual, 20'000'000u);
    // A second thread wakes us, asleep, long before a 10 s deadline.
    nosv_task_t self = in.main();
    std::thread waker([self, tid = ::gettid()] {
        EXPECT_TRUE(test::wait_until_asleep(tid));
        EXPECT_EQ(nosv_submit(self, NOSV_SUBMIT_DEADLINE_WAKE), NOSV_SUCCESS);
    });
    ASSERT_EQ(nosv_waitfor(10'000'000'000ULL, &actual), NOSV_SUCCESS);
    EXPECT_LT(actual, 5'000'000'000ULL);
    waker.join();
}

TEST(Api, YieldLetsOtherReadyTasksRunFirst) {
    Instance in("topology.binding=0");
    nosv_task_type_t type = make_type();
    Countdown cd(1);
    nosv_task_t t = make_task(type, &cd);
    ASSERT_EQ(nosv_submit(t, 0), 0);
    // One CPU, held by us: the task can only run if yield gives way.
    ASSERT_EQ(nosv_yield(0), NOSV_SUCCESS);
    EXPECT_EQ(cd.left.load(), 0);
    EXPECT_EQ(nosv_yield(0), NOSV_SUCCESS); // nothing waits: returns at once
    EXPECT_EQ(nosv_schedpoint(0), NOSV_SUCCESS);
    nosv_destroy(t, 0);
    nosv_type_destroy(type, 0);
}

TEST(Api, ImmediateSuccessorRunsNextOnThisCpu) {
    Instance in("topology.binding=0");
    nosv_task_type_t type = make_type();
    Countdown cd(2);
    nosv_task_t first = make_task(type, &cd), next = make_task(type, &cd);
    ASSERT_EQ(nosv_submit(first, 0), 0);
    ASSERT_EQ(nosv_submit(next, NOSV_SUBMIT_IMMEDIATE), 0);
    cd.wait();
    auto order = [](nosv_task_t t) { return static_cast<Meta*>(nosv_get_task_metadata(t))->order; };
    EXPECT_LT(order(next), order(first));
    nosv_destroy(first, 0);
    nosv_destroy(next, 0);
    nosv_type_destroy(type, 0);
}

TEST(Api, InlineRunsOnTheCallingThreadAndBlockingWaitsForCompletion) {
    Instance in;
    nosv_task_type_t type = make_type();
    Countdown cd(2);
    cd.waiter = nullptr; // completion is observed directly here
    nosv_task_t a = make_task(type, &cd), b = make_task(type, &cd);
    ASSERT_EQ(nosv_submit(a, NOSV_SUBMIT_INLINE), NOSV_SUCCESS);
    EXPECT_EQ(cd.left.load(), 1); // ran and completed before returning
    EXPECT_EQ(nosv_self(), in.main());
    ASSERT_EQ(nosv_submit(b, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    EXPECT_EQ(cd.left.load(), 0);
    nosv_destroy(a, 0);
    nosv_destroy(b, 0);
    nosv_type_destroy(type, 0);
}

TEST(Api, CompletedWaitsForEventsAndMayDestroyTheTask) {
    // One CPU: we run again only once the worker is done with the body.
    Instance in("topology.binding=0");
    static std::atomic<int> completions{0};
    static nosv_task_t pending;
    static nosv_task_t waiter;
    waiter = in.main();
    nosv_task_type_t type;
    ASSERT_EQ(nosv_type_init(
                  &type,
                  [](nosv_task_t t) {
                      pending = t;
                      EXPECT_EQ(nosv_increase_event_counter(2), 0);
                      EXPECT_EQ(nosv_has_events(), 1);
                      nosv_submit(waiter, 0);
                  },
                  nullptr,
                  [](nosv_task_t t) {
                      completions++;
                      EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS); // safe from here
                      nosv_submit(waiter, 0);
                  },
                  "events", nullptr, nullptr, 0),
              0);
    nosv_task_t t;
    ASSERT_EQ(nosv_create(&t, type, 0, 0), 0);
    ASSERT_EQ(nosv_submit(t, 0), 0);
    nosv_pause(0); // the run callback resumes us
    // A turn of the CPU for anything made ready meanwhile (a completion).
    EXPECT_EQ(nosv_yield(0), NOSV_SUCCESS);
    EXPECT_EQ(completions.load(), 0); // two events pending
    EXPECT_TRUE(nosv_task_had_events(pending));
    EXPECT_EQ(nosv_decrease_event_counter(pending, 1), 0);
    EXPECT_EQ(completions.load(), 0);
    EXPECT_EQ(nosv_decrease_event_counter(pending, 1), 0);
    while (completions.load() == 0)
        nosv_pause(0);
    EXPECT_EQ(completions.load(), 1);
    nosv_type_destroy(type, 0);
}

TEST(Api, DetachRestoresAffinityAndBlockExtensionReleasesTheCpu) {
    test::ScopedSegment seg;
    ASSERT_EQ(nosv_init(), 0);
    cpu_set_t before, during, after;
    pthread_getaffinity_np(pthread_self(), sizeof before, &before);
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "x", 0), 0);
    during = test::kernel_affinity(); // coexec's pinning, which the program does not see
    EXPECT_EQ(CPU_COUNT(&during), 1);
    EXPECT_TRUE(CPU_ISSET(nosv_get_current_system_cpu(), &during));
    EXPECT_EQ(nosv_get_current_logical_cpu(), nosv_get_current_logical_domain(NOSV_TOPO_LEVEL_CPU));
    ASSERT_EQ(coexec_block_enter(), 0);
    EXPECT_EQ(coexec_block_enter(), NOSV_ERR_OUTSIDE_TASK); // holds no CPU now
    ASSERT_EQ(coexec_block_exit(), 0);
    EXPECT_EQ(coexec_block_exit(), NOSV_ERR_INVALID_OPERATION);
    ASSERT_EQ(nosv_detach(0), 0);
    pthread_getaffinity_np(pthread_self(), sizeof after, &after);
    EXPECT_TRUE(CPU_EQUAL(&before, &after));
    EXPECT_EQ(nosv_detach(0), NOSV_ERR_OUTSIDE_TASK);
    ASSERT_EQ(nosv_shutdown(), 0);
}

namespace {
// The kernel affinity of a coexec thread names exactly the CPU it holds.
void expect_bound_to_held_cpu() {
    const cpu_set_t mask = test::kernel_affinity();
    EXPECT_EQ(CPU_COUNT(&mask), 1);
    EXPECT_TRUE(CPU_ISSET(nosv_get_current_system_cpu(), &mask));
}
} // namespace

TEST(Api, BlockExitBindsAgainAThreadThatWidenedItsAffinity) {
    test::ScopedSegment seg;
    ASSERT_EQ(nosv_init(), 0);
    cpu_set_t all;
    pthread_getaffinity_np(pthread_self(), sizeof all, &all);
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "x", 0), 0);
    for (int round = 0; round < 20; ++round) {
        ASSERT_EQ(coexec_block_enter(), 0);
        // What an adapter does for serial code outside coexec.
        pthread_setaffinity_np(pthread_self(), sizeof all, &all);
        ASSERT_EQ(coexec_block_exit(), 0);
        expect_bound_to_held_cpu();
    }
    ASSERT_EQ(nosv_detach(0), 0);
    ASSERT_EQ(nosv_shutdown(), 0);
}

TEST(Api, AResumedThreadRunsBoundToTheCpuItWasGranted) {
    Instance in;
    // Two attached threads pass the CPUs back and forth: every resume is a
    // grant by another thread, which binds the resumed one.
    std::atomic<nosv_task_t> other{nullptr};
    std::atomic<bool> done{false};
    std::thread peer([&] {
        nosv_task_t self;
        ASSERT_EQ(nosv_attach(&self, nullptr, "peer", 0), 0);
        other.store(self);
        while (!done.load()) {
            expect_bound_to_held_cpu();
            nosv_submit(in.main(), 0);
            nosv_pause(0);
        }
        nosv_detach(0);
    });
    while (other.load() == nullptr)
        std::this_thread::yield();
    for (int round = 0; round < 200; ++round) {
        nosv_pause(0);
        expect_bound_to_held_cpu();
        nosv_submit(other.load(), 0);
    }
    done.store(true);
    nosv_submit(other.load(), 0);
    peer.join();
}

TEST(Api, HwinfoDescribesManagedCpus) {
    Instance in;
    int n = nosv_get_num_cpus();
    EXPECT_EQ(n, int(std::thread::hardware_concurrency()));
    EXPECT_EQ(nosv_get_num_domains(NOSV_TOPO_LEVEL_CPU), n);
    EXPECT_EQ(nosv_get_num_domains(NOSV_TOPO_LEVEL_NODE), 1);
    int numa = nosv_get_num_numa_nodes();
    ASSERT_GE(numa, 1);
    int* numas = nosv_get_available_numa_nodes();
    ASSERT_NE(numas, nullptr);
    int sys = numas[0];
    std::free(numas); // the caller's to free (nOS-V's contract)
    EXPECT_EQ(nosv_get_logical_numa_id(sys), 0);
    EXPECT_EQ(nosv_get_system_numa_id(0), sys);
    EXPECT_GE(nosv_get_num_cpus_in_numa(sys), 1);
    EXPECT_EQ(nosv_get_system_numa_id(99), NOSV_ERR_INVALID_PARAMETER);
    int cpu = nosv_get_current_system_cpu();
    EXPECT_EQ(available_cpus().at(size_t(nosv_get_current_logical_cpu())), cpu);
    EXPECT_EQ(nosv_get_num_domains(NOSV_TOPO_LEVEL_COUNT), NOSV_ERR_INVALID_PARAMETER);
}

// Every level's array is the caller's to free, as in nOS-V: freeing one,
// then asking again, reuses nothing of coexec's (a heap error, else).
TEST(Api, EveryLevelsDomainArrayIsTheCallersToFree) {
    Instance in;
    for (int round = 0; round < 2; ++round)
        for (int level = NOSV_TOPO_LEVEL_NODE; level < NOSV_TOPO_LEVEL_COUNT; ++level) {
            const auto lvl = nosv_topo_level_t(level);
            const int n = nosv_get_num_domains(lvl);
            ASSERT_GE(n, 1) << level;
            int* ids = nosv_get_available_domains(lvl);
            ASSERT_NE(ids, nullptr) << level;
            std::vector<int> copy(ids, ids + n);
            std::free(ids);
            for (int id : copy)
                EXPECT_GE(nosv_get_num_cpus_in_domain(lvl, id), 1) << level << " " << id;
        }
}

// exit() destroys the main thread's thread_local objects before it runs the
// exit handlers, where an adapter's nosv_shutdown (a static destructor) or a
// hosted main thread's detach still creates and frees tasks. Regression:
// they went to the thread's destroyed block cache, and the heap was
// corrupted ("corrupted double-linked list" at a later free).
TEST(Api, TasksMadeAndFreedInAnExitHandlerLeaveTheHeapWhole) {
    test::ScopedSegment seg;
    auto child = [] {
        ::unsetenv("COEXEC_DISABLE");
        if (nosv_init() != NOSV_SUCCESS) return 1;
        static nosv_task_type_t type = nullptr;
        if (nosv_type_init(
                &type, [](nosv_task_t) {}, nullptr, nullptr, "exit", nullptr, nullptr,
                NOSV_TYPE_INIT_NONE) != NOSV_SUCCESS)
            return 2;
        // Enough tasks freed on this thread that its cache holds blocks.
        auto churn = [](int n) {
            std::vector<nosv_task_t> tasks(size_t(n), nullptr);
            for (auto& t : tasks)
                if (nosv_create(&t, type, 0, NOSV_CREATE_NONE) != NOSV_SUCCESS) std::_Exit(3);
            for (auto t : tasks)
                if (nosv_destroy(t, NOSV_DESTROY_NONE) != NOSV_SUCCESS) std::_Exit(4);
        };
        churn(50);
        static void (*churn_at_exit)(int) = +churn;
        std::atexit([] {
            churn_at_exit(50);
            if (nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE) != NOSV_SUCCESS) std::_Exit(5);
            if (nosv_shutdown() != NOSV_SUCCESS) std::_Exit(6);
            // glibc checks its lists as blocks of every size come and go.
            std::vector<void*> blocks;
            for (size_t size = 16; size <= 4096; size += 16)
                for (int i = 0; i < 4; ++i)
                    blocks.push_back(std::malloc(size));
            for (void* b : blocks)
                std::free(b);
            std::_Exit(0);
        });
        std::exit(0);
    };
    EXPECT_EQ(test::wait_child(test::fork_child(child)), 0);
}

TEST(Api, BadConfigurationFailsInitWithAnError) {
    test::ScopedSegment seg("scheduler.quantum_ns=zero");
    EXPECT_EQ(nosv_init(), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(coexec_is_active(), 0);
}

// Regression: a task handed to a pool worker together with a CPU was lost
// when that worker had just been evicted from holding an idle CPU. Many
// short submit-and-wait rounds, alternating CPUs, hit that window.
TEST(Api, SubmitAndWaitRoundsNeverLoseATask) {
    Instance in;
    nosv_task_type_t type = make_type();
    int ncpu = nosv_get_num_cpus();
    const std::vector<int> cpus = available_cpus();
    for (int round = 0; round < 3000; ++round) {
        Countdown cd(2);
        nosv_task_t any = make_task(type, &cd), pinned = make_task(type, &cd);
        nosv_affinity_t a = nosv_affinity_get(uint32_t(cpus[round % ncpu]), NOSV_AFFINITY_LEVEL_CPU,
                                              NOSV_AFFINITY_TYPE_STRICT);
        nosv_set_task_affinity(pinned, &a);
        ASSERT_EQ(nosv_submit(any, 0), 0);
        ASSERT_EQ(nosv_submit(pinned, 0), 0);
        cd.wait();
        for (nosv_task_t t : {any, pinned})
            while (nosv_destroy(t, 0) != 0)
                nosv_yield(0); // its worker may still be leaving it
    }
    nosv_type_destroy(type, 0);
}

namespace {
// The state of the one CPU of a "topology.binding=0" instance.
shm::CpuState only_cpu_state(const test::ScopedSegment& seg) {
    auto map = seg.map();
    return map->cpus[0].state.load();
}
} // namespace

namespace {
// Twenty rounds of: `park` (coexec_lend_cpu or coexec_keep_cpu) the only CPU
// of a "topology.binding=0" instance while nobody needs it, see it in
// `parked` state and the thread outside coexec, then take it back cheaply at
// coexec_block_exit() and be bound to it again.
void expect_parked_cpu_comes_back(int (*park)(), shm::CpuState parked, const char* label) {
    test::ScopedSegment seg("topology.binding=0");
    ASSERT_EQ(nosv_init(), 0);
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, label, 0), 0);
    for (int round = 0; round < 20; ++round) {
        ASSERT_EQ(park(), 0);
        EXPECT_EQ(only_cpu_state(seg), parked);
        EXPECT_EQ(nosv_yield(0), NOSV_ERR_OUTSIDE_TASK) << "a parked thread is outside coexec";
        EXPECT_EQ(park(), NOSV_ERR_OUTSIDE_TASK) << "calls do not nest";
        ASSERT_EQ(coexec_block_exit(), 0);
        EXPECT_EQ(only_cpu_state(seg), shm::CpuState::Running);
        expect_bound_to_held_cpu();
    }
    EXPECT_EQ(coexec_block_exit(), NOSV_ERR_INVALID_OPERATION) << "no matching park";
    ASSERT_EQ(nosv_detach(0), 0);
    ASSERT_EQ(nosv_shutdown(), 0);
}
} // namespace

// coexec_spare_cpus() counts unheld CPUs less waiting work: on a one-CPU
// instance, 1 with nothing attached, 0 while the test thread holds the CPU,
// -1 while a submitted task waits for it, 0 again once it has run.
TEST(Api, SpareCpusAreUnheldCpusLessWaitingWork) {
    int spare = 42;
    EXPECT_EQ(coexec_spare_cpus(&spare), NOSV_ERR_NOT_INITIALIZED);
    Instance in("topology.binding=0", false);
    ASSERT_EQ(nosv_get_num_cpus(), 1);
    EXPECT_EQ(coexec_spare_cpus(nullptr), NOSV_ERR_INVALID_PARAMETER);
    ASSERT_EQ(coexec_spare_cpus(&spare), NOSV_SUCCESS);
    EXPECT_EQ(spare, 1);
    nosv_task_t self;
    ASSERT_EQ(nosv_attach(&self, nullptr, "holder", 0), 0);
    ASSERT_EQ(coexec_spare_cpus(&spare), NOSV_SUCCESS);
    EXPECT_EQ(spare, 0);
    Countdown done(1);
    nosv_task_type_t type = make_type();
    nosv_task_t task = make_task(type, &done);
    ASSERT_EQ(nosv_submit(task, 0), 0);
    ASSERT_EQ(coexec_spare_cpus(&spare), NOSV_SUCCESS);
    EXPECT_EQ(spare, -1) << "the task waits for the only CPU";
    done.wait(); // pauses: the task runs, then resumes us
    ASSERT_EQ(coexec_spare_cpus(&spare), NOSV_SUCCESS);
    EXPECT_EQ(spare, 0);
    ASSERT_EQ(nosv_destroy(task, 0), 0);
    ASSERT_EQ(nosv_type_destroy(type, 0), 0);
    ASSERT_EQ(nosv_detach(0), 0);
}

// coexec_cpu_wanted() says whose ready work could take the caller's CPU:
// its own process's (HERE) or another process's (ELSEWHERE). One CPU: a task
// the holder submits waits for it, then a thread of a second process that
// attaches does.
TEST(Api, CpuWantedSaysWhoseWorkWaits) {
    test::ScopedSegment seg("topology.binding=0");
    // Forked before coexec's threads start (see LastProcessOutRemovesTheSegment).
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    const pid_t child = test::fork_child([&] {
        char byte = 0;
        ::close(go[1]);
        if (::read(go[0], &byte, 1) != 1) return 10;
        ::unsetenv("COEXEC_DISABLE");
        nosv_task_t t;
        if (nosv_init() != NOSV_SUCCESS || nosv_attach(&t, nullptr, "elsewhere", 0) != 0) return 11;
        return nosv_detach(0) == 0 && nosv_shutdown() == NOSV_SUCCESS ? 0 : 12;
    });
    ::close(go[0]);
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    ASSERT_EQ(nosv_get_num_cpus(), 1);
    nosv_task_t self;
    ASSERT_EQ(nosv_attach(&self, nullptr, "holder", 0), 0);
    EXPECT_EQ(coexec_cpu_wanted(), 0);
    Countdown done(1);
    nosv_task_type_t type = make_type();
    nosv_task_t task = make_task(type, &done);
    ASSERT_EQ(nosv_submit(task, 0), 0);
    EXPECT_EQ(coexec_cpu_wanted(), COEXEC_CPU_WANTED_HERE);
    done.wait(); // pauses: the task runs, then resumes us
    EXPECT_EQ(coexec_cpu_wanted(), 0);
    ASSERT_EQ(::write(go[1], "g", 1), 1);
    ::close(go[1]);
    const auto deadline = std::chrono::steady_clock::now() + test::kPatience;
    while (coexec_cpu_wanted() == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(coexec_cpu_wanted(), COEXEC_CPU_WANTED_ELSEWHERE);
    ASSERT_EQ(nosv_detach(0), 0); // the child gets the CPU
    EXPECT_EQ(test::wait_child(child), 0);
    ASSERT_EQ(nosv_destroy(task, 0), 0);
    ASSERT_EQ(nosv_type_destroy(type, 0), 0);
    EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
}

// coexec_quantum() answers the segment's scheduler.quantum_ns.
TEST(Api, QuantumIsTheSegmentsQuantum) {
    uint64_t ns = 42;
    EXPECT_EQ(coexec_quantum(&ns), NOSV_ERR_NOT_INITIALIZED);
    Instance in("scheduler.quantum_ns=3000000", false);
    EXPECT_EQ(coexec_quantum(nullptr), NOSV_ERR_INVALID_PARAMETER);
    ASSERT_EQ(coexec_quantum(&ns), NOSV_SUCCESS);
    EXPECT_EQ(ns, 3'000'000u);
}

TEST(Api, ALentCpuComesBackWhenNobodyNeedsIt) {
    expect_parked_cpu_comes_back(coexec_lend_cpu, shm::CpuState::Lent, "lender");
}

// A kept CPU stays the keeper's (Running, not Lent): taking it back is cheap
// and nothing else ran meanwhile.
TEST(Api, AKeptCpuComesBackWhenNobodyNeedsIt) {
    expect_parked_cpu_comes_back(coexec_keep_cpu, shm::CpuState::Running, "keeper");
}

namespace {
// Each of `rounds`: `park` (coexec_lend_cpu or coexec_keep_cpu) the only CPU
// of a "topology.binding=0" instance, submit work, expect the work to run on
// that CPU within 10 s (polling every `poll`), then take a CPU back at
// coexec_block_exit() and be bound to it again.
void expect_parked_cpu_runs_work(int (*park)(), int rounds, std::chrono::microseconds poll,
                                 const char* parked) {
    test::ScopedSegment seg("topology.binding=0");
    ASSERT_EQ(nosv_init(), 0);
    nosv_task_t self;
    ASSERT_EQ(nosv_attach(&self, nullptr, "parker", 0), 0);
    static std::atomic<int> ran;
    ran = 0;
    nosv_task_type_t type;
    ASSERT_EQ(nosv_type_init(
                  &type, [](nosv_task_t) { ran++; }, nullptr, nullptr, "work", nullptr, nullptr, 0),
              0);
    nosv_task_t task;
    ASSERT_EQ(nosv_create(&task, type, 0, 0), 0);
    for (int round = 0; round < rounds; ++round) {
        ASSERT_EQ(park(), 0);
        ASSERT_EQ(nosv_submit(task, 0), 0);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (ran.load() <= round && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(poll);
        ASSERT_EQ(ran.load(), round + 1) << "the task never got the " << parked << " CPU";
        ASSERT_EQ(coexec_block_exit(), 0);
        expect_bound_to_held_cpu();
    }
    ASSERT_EQ(nosv_destroy(task, 0), 0);
    ASSERT_EQ(nosv_type_destroy(type, 0), 0);
    ASSERT_EQ(nosv_detach(0), 0);
    ASSERT_EQ(nosv_shutdown(), 0);
}
} // namespace

// Work that waits while the only CPU is kept outside coexec gets it once the
// monitor has seen the keeper out for a while; the keeper then waits for the
// CPU at coexec_block_exit() and is bound to it again.
TEST(Api, AKeptCpuGoesToWorkThatWaitsLong) {
    ASSERT_NO_FATAL_FAILURE(
        expect_parked_cpu_runs_work(coexec_keep_cpu, 3, std::chrono::milliseconds(1), "kept"));
}

namespace {
// The kernel's view: these tests check where coexec runs the thread.
cpu_set_t own_affinity() {
    return test::kernel_affinity();
}

cpu_set_t only(int system_cpu) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    CPU_SET(system_cpu, &mask);
    return mask;
}
} // namespace

// A thread attached with COEXEC_ATTACH_KEEP_AFFINITY runs outside coexec
// (lent, blocked, detached) with the affinity it chose itself, also one it
// set meanwhile. While it holds a CPU, it runs there: when the kernel has it
// on another CPU, coexec pins it to the one it holds.
TEST(Api, AThreadThatKeepsItsAffinityRunsUnderItOutsideCoexec) {
    test::ScopedSegment seg;
    ASSERT_EQ(nosv_init(), 0);
    if (nosv_get_num_cpus() < 2) GTEST_SKIP() << "needs two CPUs";
    const cpu_set_t all = own_affinity();
    nosv_task_t t;
    ASSERT_EQ(nosv_attach(&t, nullptr, "keeper", COEXEC_ATTACH_KEEP_AFFINITY), 0);
    for (int round = 0; round < 20; ++round) {
        ASSERT_EQ(coexec_lend_cpu(), 0);
        cpu_set_t now = own_affinity();
        EXPECT_TRUE(CPU_EQUAL(&now, &all)) << "lent";
        ASSERT_EQ(coexec_block_exit(), 0);
        ASSERT_EQ(coexec_block_enter(), 0);
        now = own_affinity();
        EXPECT_TRUE(CPU_EQUAL(&now, &all)) << "blocked";
        ASSERT_EQ(coexec_block_exit(), 0);
    }
    // Lend the CPU, then move to another one: taking it back pins the thread.
    const int held = nosv_get_current_system_cpu();
    int elsewhere = -1;
    for (int c = 0; c < CPU_SETSIZE && elsewhere < 0; ++c)
        if (c != held && CPU_ISSET(c, &all)) elsewhere = c;
    ASSERT_GE(elsewhere, 0);
    ASSERT_EQ(coexec_lend_cpu(), 0);
    const cpu_set_t mine = only(elsewhere);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof mine, &mine), 0);
    ASSERT_EQ(coexec_block_exit(), 0);
    const cpu_set_t pinned = only(nosv_get_current_system_cpu());
    cpu_set_t now = own_affinity();
    EXPECT_TRUE(CPU_EQUAL(&now, &pinned)) << "holding a CPU the kernel did not run it on";
    EXPECT_EQ(sched_getcpu(), nosv_get_current_system_cpu());
    ASSERT_EQ(coexec_lend_cpu(), 0);
    now = own_affinity();
    EXPECT_TRUE(CPU_EQUAL(&now, &mine)) << "its own choice comes back";
    ASSERT_EQ(coexec_block_exit(), 0);
    ASSERT_EQ(nosv_detach(0), 0);
    now = own_affinity();
    EXPECT_TRUE(CPU_EQUAL(&now, &mine)) << "detach keeps its own choice";
    pthread_setaffinity_np(pthread_self(), sizeof all, &all);
    ASSERT_EQ(nosv_shutdown(), 0);
}

namespace {
// coexec_keep_cpu(), then coexec_lend_kept_cpu() as a thread about to block
// does: from then on the kept CPU is lent.
int keep_then_lend() {
    if (int rc = coexec_keep_cpu(); rc != NOSV_SUCCESS) return rc;
    return coexec_lend_kept_cpu();
}
} // namespace

// A kept CPU lent for a wait is Lent at once, not after the monitor's grace
// period, and still comes back cheaply when nobody needed it.
TEST(Api, AKeptCpuLentForAWaitComesBackWhenNobodyNeedsIt) {
    expect_parked_cpu_comes_back(keep_then_lend, shm::CpuState::Lent, "keeper");
}

// Work submitted after a kept CPU was lent runs on it at once (the monitor
// would take a kept one only after its grace period).
TEST(Api, AKeptCpuLentForAWaitGoesToWorkThatNeedsIt) {
    ASSERT_NO_FATAL_FAILURE(
        expect_parked_cpu_runs_work(keep_then_lend, 20, std::chrono::microseconds(100), "lent"));
}

// Work submitted while the only CPU is lent runs on it at once; the lender
// waits for the CPU at coexec_block_exit() and is bound to it again.
TEST(Api, ALentCpuGoesToWorkThatNeedsIt) {
    ASSERT_NO_FATAL_FAILURE(
        expect_parked_cpu_runs_work(coexec_lend_cpu, 20, std::chrono::microseconds(100), "lent"));
}

// nOS-V documents the topology arrays as the caller's, released with free().
// Each call gives a fresh copy; freeing both must not disturb the runtime
// (a double free aborts the process at shutdown).
TEST(Api, TopologyArraysBelongToTheCaller) {
    Instance in;
    int* cpus = nosv_get_available_cpus();
    int* again = nosv_get_available_cpus();
    int* numas = nosv_get_available_numa_nodes();
    ASSERT_NE(cpus, nullptr);
    ASSERT_NE(numas, nullptr);
    EXPECT_NE(cpus, again) << "each call returns an array of its own";
    for (int i = 0; i < nosv_get_num_cpus(); ++i)
        EXPECT_EQ(cpus[i], again[i]);
    cpus[0] = -42; // the caller's copy: the runtime does not see it
    EXPECT_NE(available_cpus().at(0), -42);
    std::free(cpus);
    std::free(again);
    std::free(numas);
    EXPECT_GE(nosv_get_num_cpus(), 1);
}
