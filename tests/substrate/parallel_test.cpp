// Parallel tasks (NOSV_CREATE_PARALLEL, degree, execution ids, nosv_cancel),
// the submit window and nosv/memory.h, against a real instance: the
// semantics of nOS-V 4.1's api/nosv.h and api/nosv/memory.h as include/nosv.h
// and include/nosv/memory.h document them for coexec.
#include "support.hpp"

#include <coexec/ext.h>
#include <nosv.h>
#include <nosv/compat.h>
#include <nosv/memory.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using namespace coexec;

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPatience = std::chrono::seconds(10);

// Spins until `done()` or kPatience passed; returns done().
template <class Pred>
bool spin_until(Pred done) {
    const auto deadline = Clock::now() + kPatience;
    while (!done() && Clock::now() < deadline)
        std::this_thread::yield();
    return done();
}

// A task type whose callbacks forward to the Probe in the task's metadata.
struct Probe;
using Body = void (*)(Probe&, nosv_task_t);

struct Probe {
    static constexpr int kMaxIds = 128;
    Body body = nullptr; // extra work of the run callback, after counting
    std::atomic<int> runs[kMaxIds] = {};
    std::atomic<int> bad_ids{0}; // ids out of [0, degree) or wrong nosv_self()
    std::atomic<int> started{0}; // run callbacks entered
    std::atomic<int> ends{0};    // end callbacks
    std::atomic<int> completions{0};
    std::atomic<int32_t> degree_at_completion{0};
    // Free for the bodies.
    std::atomic<int> arrived{0};
    std::atomic<bool> flag{false};
    std::atomic<int> cpu[kMaxIds] = {};
    std::atomic<int> rc[4] = {};
};

Probe& probe_of(nosv_task_t t) {
    return **static_cast<Probe**>(nosv_get_task_metadata(t));
}

class ProbeType {
  public:
    ProbeType() {
        EXPECT_EQ(nosv_type_init(&type_, &run, &end, &completed, "parallel", nullptr, nullptr,
                                 NOSV_TYPE_INIT_NONE),
                  NOSV_SUCCESS);
    }
    ~ProbeType() { nosv_type_destroy(type_, NOSV_TYPE_DESTROY_NONE); }
    // A task of this type reporting to `probe`.
    nosv_task_t create(Probe& probe, nosv_flags_t flags = NOSV_CREATE_PARALLEL) {
        nosv_task_t t = nullptr;
        EXPECT_EQ(nosv_create(&t, type_, sizeof(Probe*), flags), NOSV_SUCCESS);
        *static_cast<Probe**>(nosv_get_task_metadata(t)) = &probe;
        return t;
    }

  private:
    static void run(nosv_task_t t) {
        Probe& p = probe_of(t);
        p.started.fetch_add(1);
        const uint32_t id = nosv_get_execution_id();
        if (id >= uint32_t(Probe::kMaxIds) || nosv_self() != t)
            p.bad_ids.fetch_add(1);
        else
            p.runs[id].fetch_add(1);
        if (p.body) p.body(p, t);
    }
    static void end(nosv_task_t t) { probe_of(t).ends.fetch_add(1); }
    static void completed(nosv_task_t t) {
        Probe& p = probe_of(t);
        p.degree_at_completion = nosv_get_task_degree(t);
        p.completions.fetch_add(1);
    }
    nosv_task_type_t type_ = nullptr;
};

int total_runs(const Probe& p) {
    int n = 0;
    for (const auto& r : p.runs)
        n += r.load();
    return n;
}

// ---- executions ------------------------------------------------------

TEST(ParallelTask, RunsDegreeExecutionsWithEveryIdOnce) {
    test::Instance instance;
    ProbeType type;
    Probe probe;
    nosv_task_t t = type.create(probe);
    EXPECT_EQ(nosv_get_task_degree(t), 1);
    nosv_set_task_degree(t, 16);
    EXPECT_EQ(nosv_get_task_degree(t), 16);
    // BLOCKING: this (ordinary) task waits, without its CPU, for completion.
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    for (int id = 0; id < 16; ++id)
        EXPECT_EQ(probe.runs[id].load(), 1) << "execution " << id;
    EXPECT_EQ(total_runs(probe), 16);
    EXPECT_EQ(probe.bad_ids.load(), 0);
    EXPECT_EQ(probe.ends.load(), 16); // the end callback follows each execution
    EXPECT_EQ(probe.completions.load(), 1);
    EXPECT_EQ(probe.degree_at_completion.load(), 16);

    // Completed, it runs anew when submitted again, with its new degree.
    Probe again;
    *static_cast<Probe**>(nosv_get_task_metadata(t)) = &again;
    nosv_set_task_degree(t, 3);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    EXPECT_EQ(total_runs(again), 3);
    EXPECT_EQ(again.runs[0] + again.runs[1] + again.runs[2], 3);
    EXPECT_EQ(again.completions.load(), 1);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
}

TEST(ParallelTask, DegreeOneIsAnOrdinaryTask) {
    test::Instance instance;
    ProbeType type;
    Probe probe;
    // An ordinary task may pause; a degree-1 parallel task is one (nOS-V).
    probe.body = [](Probe& p, nosv_task_t) { p.rc[0] = nosv_yield(NOSV_YIELD_NONE); };
    nosv_task_t t = type.create(probe);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    EXPECT_EQ(probe.rc[0].load(), NOSV_SUCCESS);
    EXPECT_EQ(probe.runs[0].load(), 1);
    EXPECT_EQ(probe.completions.load(), 1);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
}

// Two executions meet while both run: each waits for the other (bounded),
// so when both arrive they ran at the same time, on two CPUs.
TEST(ParallelTask, ExecutionsRunAtOnceOnDifferentCpus) {
    test::Instance instance;
    if (nosv_get_num_cpus() < 2) GTEST_SKIP() << "needs two CPUs";
    ProbeType type;
    Probe probe;
    probe.body = [](Probe& p, nosv_task_t) {
        const uint32_t id = nosv_get_execution_id();
        p.cpu[id] = nosv_get_current_system_cpu();
        p.arrived.fetch_add(1);
        p.rc[id] = spin_until([&] { return p.arrived.load() == 2; });
    };
    nosv_task_t t = type.create(probe);
    nosv_set_task_degree(t, 2);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    EXPECT_EQ(probe.rc[0].load(), 1) << "execution 0 never met execution 1";
    EXPECT_EQ(probe.rc[1].load(), 1) << "execution 1 never met execution 0";
    EXPECT_NE(probe.cpu[0].load(), probe.cpu[1].load());
    EXPECT_GE(probe.cpu[0].load(), 0);
    EXPECT_GE(probe.cpu[1].load(), 0);
    EXPECT_EQ(probe.completions.load(), 1);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
}

// Execution 0 (the first to start) cancels at once; every other one waits
// (bounded) until that cancel returned, so at most one per other CPU can
// have started before it. None starts after: of 64, at most one per CPU ran.
TEST(ParallelTask, CancelStopsExecutionsNotStarted) {
    test::Instance instance;
    ProbeType type;
    Probe probe;
    probe.body = [](Probe& p, nosv_task_t self) {
        if (nosv_get_execution_id() == 0) {
            p.rc[0] = nosv_cancel(NOSV_CANCEL_NONE);
            p.rc[1] = nosv_cancel(NOSV_CANCEL_NONE); // already cancelled
            p.rc[2] = nosv_get_task_degree(self);
            p.flag = true;
        } else {
            spin_until([&] { return p.flag.load(); });
        }
    };
    nosv_task_t t = type.create(probe);
    nosv_set_task_degree(t, 64);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    EXPECT_EQ(probe.rc[0].load(), NOSV_SUCCESS);
    EXPECT_EQ(probe.rc[1].load(), NOSV_ERR_INVALID_OPERATION);
    EXPECT_EQ(probe.rc[2].load(), -64);
    const int ran = total_runs(probe);
    EXPECT_GE(ran, 1);
    EXPECT_LE(ran, nosv_get_num_cpus());
    for (int id = 0; id < ran; ++id) // the ids that ran are 0..ran-1
        EXPECT_EQ(probe.runs[id].load(), 1) << "execution " << id;
    EXPECT_EQ(probe.ends.load(), ran);
    EXPECT_EQ(probe.completions.load(), 1);
    EXPECT_EQ(probe.degree_at_completion.load(), -64);
    EXPECT_EQ(nosv_get_task_degree(t), -64);

    // Submitted again, the degree is whole again and every execution runs.
    Probe again;
    *static_cast<Probe**>(nosv_get_task_metadata(t)) = &again;
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    EXPECT_EQ(total_runs(again), 64);
    EXPECT_EQ(again.completions.load(), 1);
    EXPECT_EQ(nosv_get_task_degree(t), 64);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
}

TEST(ParallelTask, CancelInAnOrdinaryTaskOnlyMarksIt) {
    test::Instance instance;
    ProbeType type;
    Probe probe;
    probe.body = [](Probe& p, nosv_task_t) { p.rc[0] = nosv_cancel(NOSV_CANCEL_NONE); };
    nosv_task_t t = type.create(probe, NOSV_CREATE_NONE);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    EXPECT_EQ(probe.rc[0].load(), NOSV_SUCCESS);
    EXPECT_EQ(probe.runs[0].load(), 1);
    EXPECT_EQ(probe.ends.load(), 1);
    EXPECT_EQ(probe.degree_at_completion.load(), -1);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS); // runs again
    EXPECT_EQ(probe.runs[0].load(), 2);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
}

// Events keep a parallel task from completing after its executions ended,
// as for an ordinary task.
TEST(ParallelTask, CompletesOnceItsEventsAreGone) {
    test::Instance instance;
    ProbeType type;
    Probe probe;
    probe.body = [](Probe& p, nosv_task_t) { p.rc[0] = nosv_increase_event_counter(1); };
    nosv_task_t t = type.create(probe);
    nosv_set_task_degree(t, 4);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    ASSERT_TRUE(spin_until([&] { return probe.ends.load() == 4; }));
    EXPECT_EQ(probe.rc[0].load(), NOSV_SUCCESS);
    EXPECT_EQ(probe.completions.load(), 0);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_ERR_BUSY);
    EXPECT_EQ(nosv_decrease_event_counter(t, 3), NOSV_SUCCESS);
    EXPECT_EQ(probe.completions.load(), 0);
    EXPECT_EQ(nosv_decrease_event_counter(t, 1), NOSV_SUCCESS);
    EXPECT_EQ(probe.completions.load(), 1);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
}

// Two processes on one instance each run parallel tasks at once; every
// execution of every task runs exactly once in both.
TEST(ParallelTask, TwoProcessesShareTheInstance) {
    test::ScopedSegment segment;
    auto child = [] {
        if (nosv_init() != NOSV_SUCCESS) return 11;
        int rc = 0;
        {
            nosv_task_t main_task;
            if (nosv_attach(&main_task, nullptr, "main", 0) != NOSV_SUCCESS) return 12;
            ProbeType type;
            constexpr int kTasks = 24, kDegree = 6;
            std::vector<Probe> probes(kTasks);
            std::vector<nosv_task_t> tasks;
            for (auto& p : probes) {
                p.body = [](Probe&, nosv_task_t) {
                    volatile uint64_t x = 0; // some work, so executions overlap
                    for (int i = 0; i < 20000; ++i)
                        x = x + uint64_t(i);
                };
                tasks.push_back(type.create(p));
                nosv_set_task_degree(tasks.back(), kDegree);
                if (nosv_submit(tasks.back(), NOSV_SUBMIT_NONE) != NOSV_SUCCESS) rc = 13;
            }
            // Wait for them from this task, which yields its CPU to them.
            auto all_done = [&] {
                return std::all_of(probes.begin(), probes.end(),
                                   [](const Probe& p) { return p.completions.load() == 1; });
            };
            const auto deadline = Clock::now() + std::chrono::seconds(30);
            while (!all_done() && Clock::now() < deadline)
                nosv_yield(NOSV_YIELD_NONE);
            if (!all_done()) rc = 14;
            for (auto& p : probes)
                for (int id = 0; id < kDegree; ++id)
                    if (p.runs[id].load() != 1 || p.bad_ids.load() != 0) rc = 15;
            for (nosv_task_t t : tasks)
                if (nosv_destroy(t, NOSV_DESTROY_NONE) != NOSV_SUCCESS) rc = 16;
            nosv_detach(NOSV_DETACH_NONE);
        }
        if (nosv_shutdown() != NOSV_SUCCESS) rc = 17;
        return rc;
    };
    pid_t a = test::fork_child(child);
    pid_t b = test::fork_child(child);
    EXPECT_EQ(test::wait_child(a), 0);
    EXPECT_EQ(test::wait_child(b), 0);
}

// ---- the submit window ---------------------------------------------------

// Submits held in the window are not ready: nothing runs them, not even a
// yield of the only CPU (which runs whatever is ready first), until the
// window fills or is flushed.
TEST(SubmitWindow, HoldsSubmitsUntilFullOrFlushed) {
    test::Instance instance("topology.binding=0");
    ProbeType type;
    std::vector<Probe> probes(8);
    std::vector<nosv_task_t> tasks;
    for (auto& p : probes)
        tasks.push_back(type.create(p, NOSV_CREATE_NONE));
    auto completed = [&](int from, int to) {
        int n = 0;
        for (int i = from; i < to; ++i)
            n += probes[size_t(i)].completions.load();
        return n;
    };
    auto wait_completed = [&](int from, int to) {
        const auto deadline = Clock::now() + kPatience;
        while (completed(from, to) < to - from && Clock::now() < deadline)
            nosv_yield(NOSV_YIELD_NOFLUSH); // lets them run here too with one CPU
        return completed(from, to);
    };
    // The default window is one: a submit is ready at once.
    ASSERT_EQ(nosv_submit(tasks[0], NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    EXPECT_EQ(wait_completed(0, 1), 1);

    // Three of four held: they stay unrun; the fourth fills the window.
    ASSERT_EQ(nosv_set_submit_window_size(4), NOSV_SUCCESS);
    for (int i = 1; i < 4; ++i)
        ASSERT_EQ(nosv_submit(tasks[size_t(i)], NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_yield(NOSV_YIELD_NOFLUSH), NOSV_SUCCESS);
    EXPECT_EQ(completed(1, 4), 0);
    ASSERT_EQ(nosv_submit(tasks[4], NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    EXPECT_EQ(wait_completed(1, 5), 4);

    // Two held, then flushed explicitly.
    ASSERT_EQ(nosv_submit(tasks[5], NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(tasks[6], NOSV_SUBMIT_UNLOCKED), NOSV_SUCCESS);
    EXPECT_EQ(nosv_yield(NOSV_YIELD_NOFLUSH), NOSV_SUCCESS);
    EXPECT_EQ(completed(5, 7), 0);
    ASSERT_EQ(nosv_flush_submit_window(), NOSV_SUCCESS);
    EXPECT_EQ(wait_completed(5, 7), 2);

    // One held, then a window of one submits what it held.
    ASSERT_EQ(nosv_submit(tasks[7], NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_yield(NOSV_YIELD_NOFLUSH), NOSV_SUCCESS);
    EXPECT_EQ(completed(7, 8), 0);
    ASSERT_EQ(nosv_set_submit_window_size(1), NOSV_SUCCESS);
    EXPECT_EQ(wait_completed(7, 8), 1);
    for (nosv_task_t t : tasks)
        EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
}

nosv_task_t g_sleeper = nullptr;

// A task that leaves its CPU flushes its window first: here a waitfor (a
// pause would never return if the held task, which wakes it, stayed held).
TEST(SubmitWindow, FlushedWhenTheTaskWaits) {
    test::Instance instance;
    nosv_task_type_t type;
    ASSERT_EQ(nosv_type_init(
                  &type, [](nosv_task_t) {}, nullptr,
                  [](nosv_task_t) { nosv_submit(g_sleeper, NOSV_SUBMIT_DEADLINE_WAKE); }, "waker",
                  nullptr, nullptr, 0),
              NOSV_SUCCESS);
    nosv_task_t waker;
    ASSERT_EQ(nosv_create(&waker, type, 0, NOSV_CREATE_NONE), NOSV_SUCCESS);
    g_sleeper = nosv_self();
    ASSERT_EQ(nosv_set_submit_window_size(16), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(waker, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    const uint64_t ten_s = 10'000'000'000ULL;
    uint64_t away = 0;
    ASSERT_EQ(nosv_waitfor(ten_s, &away), NOSV_SUCCESS);
    EXPECT_LT(away, ten_s) << "the held task never ran to wake us";
    // Its completed callback may still be returning: destroyed once it did.
    bool destroyed = false;
    EXPECT_TRUE(spin_until([&] { return destroyed || (destroyed = nosv_destroy(waker, 0) == 0); }));
    nosv_type_destroy(type, 0);
}

// A window set by a task body ends with the body: its held submits become
// ready then, and none of them ran before (they were not ready: a yield of
// the only CPU runs whatever is ready first).
TEST(SubmitWindow, FlushedWhenTheBodyEnds) {
    test::Instance instance("topology.binding=0");
    ProbeType type;
    static std::vector<Probe> children(3);
    static std::vector<nosv_task_t> child_tasks;
    static ProbeType* child_type;
    child_type = &type;
    child_tasks.clear();
    Probe parent;
    parent.body = [](Probe& p, nosv_task_t) {
        p.rc[0] = nosv_set_submit_window_size(8);
        for (auto& c : children) {
            c.completions = 0;
            child_tasks.push_back(child_type->create(c, NOSV_CREATE_NONE));
            if (nosv_submit(child_tasks.back(), NOSV_SUBMIT_NONE) != NOSV_SUCCESS) p.rc[1] = 1;
        }
        if (nosv_yield(NOSV_YIELD_NOFLUSH) != NOSV_SUCCESS) p.rc[1] = 2;
        for (auto& c : children)
            p.rc[2] += c.completions.load();
    };
    nosv_task_t t = type.create(parent, NOSV_CREATE_NONE);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    EXPECT_EQ(parent.rc[0].load(), NOSV_SUCCESS);
    EXPECT_EQ(parent.rc[1].load(), 0);
    EXPECT_EQ(parent.rc[2].load(), 0) << "a held submit ran before the body ended";
    ASSERT_TRUE(spin_until([&] {
        return std::all_of(children.begin(), children.end(),
                           [](const Probe& c) { return c.completions.load() == 1; });
    }));
    for (nosv_task_t c : child_tasks)
        EXPECT_EQ(nosv_destroy(c, NOSV_DESTROY_NONE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
}

// A parallel task can be held too (a yield of the only CPU does not run
// it): flushed, all its executions run.
TEST(SubmitWindow, HoldsParallelTasks) {
    test::Instance instance("topology.binding=0");
    ProbeType type;
    Probe probe, other;
    nosv_task_t par = type.create(probe);
    nosv_set_task_degree(par, 5);
    nosv_task_t t = type.create(other, NOSV_CREATE_NONE);
    ASSERT_EQ(nosv_set_submit_window_size(2), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(par, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_yield(NOSV_YIELD_NOFLUSH), NOSV_SUCCESS);
    EXPECT_EQ(probe.started.load(), 0);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_NONE), NOSV_SUCCESS); // fills the window
    ASSERT_TRUE(spin_until([&] {
        nosv_yield(NOSV_YIELD_NONE);
        return probe.completions.load() == 1 && other.completions.load() == 1;
    }));
    EXPECT_EQ(total_runs(probe), 5);
    EXPECT_EQ(nosv_destroy(par, NOSV_DESTROY_NONE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
}

// ---- nosv/memory.h ----------------------------------------------------------

TEST(Memory, ReportsTheSegmentsUseAndSize) {
    test::Instance instance;
    size_t size = 0, used = 0;
    float pressure = -1;
    ASSERT_EQ(nosv_memory_get_size(&size), NOSV_SUCCESS);
    ASSERT_EQ(nosv_memory_get_used(&used), NOSV_SUCCESS);
    ASSERT_EQ(nosv_memory_get_pressure(&pressure), NOSV_SUCCESS);
    EXPECT_EQ(size, shm::segment_layout(shm::cpu_slots_for(shm::SegmentOptions{})).total);
    EXPECT_GT(used, sizeof(shm::Header)); // this process and its threads at least
    EXPECT_LT(used, size);
    EXPECT_GT(pressure, 0.0f);
    EXPECT_LT(pressure, 1.0f);
    // Another attached thread holds one more thread slot while attached.
    size_t used_while_attached = 0;
    std::thread([&] {
        nosv_task_t t;
        ASSERT_EQ(nosv_attach(&t, nullptr, "second", 0), NOSV_SUCCESS);
        EXPECT_EQ(nosv_memory_get_used(&used_while_attached), NOSV_SUCCESS);
        EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
    }).join();
    EXPECT_GE(used_while_attached, used + sizeof(shm::ThreadSlot));
}

// ---- errors: each new call with bad arguments or in a wrong state -------

enum class Where { BeforeInit, OutsideTask, InTask, InParallelExecution, InBlockedTask };

struct Handles {
    nosv_task_t task = nullptr;     // ordinary, created
    nosv_task_t parallel = nullptr; // NOSV_CREATE_PARALLEL, degree 2, created
    std::vector<char> fake = std::vector<char>(4096, 0);
    nosv_task_t fake_task() { return reinterpret_cast<nosv_task_t>(fake.data()); }
    int fake_written() const {
        return int(std::count_if(fake.begin(), fake.end(), [](char c) { return c; }));
    }
};

struct Row {
    const char* name;
    Where where;
    int expected;
    int (*call)(Handles&);
};

void PrintTo(const Row& row, std::ostream* os) {
    *os << row.name;
}

int degree_after(nosv_task_t t, int32_t degree) {
    nosv_set_task_degree(t, degree);
    return nosv_get_task_degree(t);
}

// clang-format off
const std::vector<Row> kRows = {
    {"create_ParallelFlag", Where::OutsideTask, NOSV_SUCCESS,
     [](Handles& h) {
         nosv_task_t t;
         int rc = nosv_create(&t, nosv_get_task_type(h.task), 0, NOSV_CREATE_PARALLEL);
         if (rc == NOSV_SUCCESS) nosv_destroy(t, 0);
         return rc;
     }},
    {"get_task_degree_Null", Where::OutsideTask, 0,
     [](Handles&) { return int(nosv_get_task_degree(nullptr)); }},
    {"get_task_degree_NotATask", Where::OutsideTask, 0,
     [](Handles& h) { return int(nosv_get_task_degree(h.fake_task())); }},
    {"get_task_degree_OrdinaryTask", Where::OutsideTask, 1,
     [](Handles& h) { return int(nosv_get_task_degree(h.task)); }},
    {"set_task_degree_ParallelTask", Where::OutsideTask, 7,
     [](Handles& h) { return degree_after(h.parallel, 7); }},
    {"set_task_degree_OrdinaryTaskIsIgnored", Where::OutsideTask, 1,
     [](Handles& h) { return degree_after(h.task, 7); }},
    {"set_task_degree_ZeroIsIgnored", Where::OutsideTask, 2,
     [](Handles& h) { return degree_after(h.parallel, 0); }},
    {"set_task_degree_NegativeIsIgnored", Where::OutsideTask, 2,
     [](Handles& h) { return degree_after(h.parallel, -3); }},
    {"set_task_degree_NotATaskIsIgnored", Where::OutsideTask, 0,
     [](Handles& h) {
         nosv_set_task_degree(nullptr, 4);
         nosv_set_task_degree(h.fake_task(), 4);
         return h.fake_written();
     }},
    {"get_execution_id_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return int(nosv_get_execution_id()); }},
    {"get_execution_id_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return int(nosv_get_execution_id()); }},
    {"get_execution_id_OrdinaryTask", Where::InTask, 0,
     [](Handles&) { return int(nosv_get_execution_id()); }},
    {"cancel_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_cancel(NOSV_CANCEL_NONE); }},
    {"cancel_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_cancel(NOSV_CANCEL_NONE); }},
    {"cancel_WhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_cancel(NOSV_CANCEL_NONE); }},
    {"cancel_UnknownFlag", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_cancel(1); }},
    {"cancel_Twice", Where::InParallelExecution, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { nosv_cancel(NOSV_CANCEL_NONE); return nosv_cancel(NOSV_CANCEL_NONE); }},
    {"set_submit_window_size_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_set_submit_window_size(4); }},
    {"set_submit_window_size_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_set_submit_window_size(4); }},
    {"set_submit_window_size_WhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_set_submit_window_size(4); }},
    {"set_submit_window_size_Zero", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_set_submit_window_size(0); }},
    {"flush_submit_window_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_flush_submit_window(); }},
    {"flush_submit_window_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_flush_submit_window(); }},
    {"flush_submit_window_WhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_flush_submit_window(); }},
    // What an execution of a parallel task may not do (nOS-V's rules).
    {"pause_InParallelExecution", Where::InParallelExecution, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return nosv_pause(NOSV_PAUSE_NONE); }},
    {"yield_InParallelExecution", Where::InParallelExecution, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return nosv_yield(NOSV_YIELD_NONE); }},
    {"schedpoint_InParallelExecution", Where::InParallelExecution, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return nosv_schedpoint(NOSV_SCHEDPOINT_NONE); }},
    {"waitfor_InParallelExecution", Where::InParallelExecution, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return nosv_waitfor(1000, nullptr); }},
    {"submit_BlockingFromParallelExecution", Where::InParallelExecution, NOSV_ERR_INVALID_OPERATION,
     [](Handles& h) { return nosv_submit(h.task, NOSV_SUBMIT_BLOCKING); }},
    {"block_enter_InParallelExecution", Where::InParallelExecution, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return coexec_block_enter(); }},
    {"lend_cpu_InParallelExecution", Where::InParallelExecution, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return coexec_lend_cpu(); }},
    {"keep_cpu_InParallelExecution", Where::InParallelExecution, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return coexec_keep_cpu(); }},
    // An execution has no body of its own to run again.
    {"suspend_InParallelExecution", Where::InParallelExecution, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return nosv_suspend(); }},
    // nosv/compat.h: a task that cannot be blocked gets EINVAL (POSIX codes)
    // from the calls that may wait, before it looks at the object.
    {"compat_mutex_lock_InParallelExecution", Where::InParallelExecution, EINVAL,
     [](Handles&) {
         nosv_mutex_t m = NOSV_MUTEX_INITIALIZER;
         return nosv_mutex_lock(&m);
     }},
    {"compat_barrier_wait_InParallelExecution", Where::InParallelExecution, EINVAL,
     [](Handles&) {
         nosv_barrier_t b;
         nosv_barrier_init(&b, nullptr, 2);
         return nosv_barrier_wait(&b);
     }},
    {"compat_rwlock_wrlock_InParallelExecution", Where::InParallelExecution, EINVAL,
     [](Handles&) {
         nosv_rwlock_t l = NOSV_RWLOCK_INITIALIZER;
         return nosv_rwlock_wrlock(&l);
     }},
    {"get_execution_id_InParallelExecution", Where::InParallelExecution, 0,
     [](Handles&) { return int(nosv_get_execution_id()); }},
    // How a parallel task may not be submitted.
    {"submit_InlineParallelTask", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles& h) { return nosv_submit(h.parallel, NOSV_SUBMIT_INLINE); }},
    {"submit_DeadlineWakeParallelTask", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles& h) { return nosv_submit(h.parallel, NOSV_SUBMIT_DEADLINE_WAKE); }},
    // nosv/memory.h
    {"memory_get_used_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { size_t n; return nosv_memory_get_used(&n); }},
    {"memory_get_used_Null", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_memory_get_used(nullptr); }},
    {"memory_get_size_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { size_t n; return nosv_memory_get_size(&n); }},
    {"memory_get_size_Null", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_memory_get_size(nullptr); }},
    {"memory_get_pressure_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { float f; return nosv_memory_get_pressure(&f); }},
    {"memory_get_pressure_Null", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_memory_get_pressure(nullptr); }},
};
// clang-format on

void run_nothing(nosv_task_t) {}

// Runs a row in execution 0 of a parallel task (Where::InParallelExecution).
struct ExecutionCall {
    const Row* row;
    Handles* handles;
    std::atomic<int> result;
};

class ParallelApiErrors : public testing::TestWithParam<Row> {
  protected:
    void SetUp() override {
        const Row& row = GetParam();
        ASSERT_EQ(nosv_type_init(&type_, run_nothing, nullptr, nullptr, "row", nullptr, nullptr,
                                 NOSV_TYPE_INIT_NONE),
                  NOSV_SUCCESS);
        if (row.where == Where::BeforeInit) return;
        ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
        initialized_ = true;
        ASSERT_EQ(nosv_create(&h_.task, type_, 0, NOSV_CREATE_NONE), NOSV_SUCCESS);
        ASSERT_EQ(nosv_create(&h_.parallel, type_, 0, NOSV_CREATE_PARALLEL), NOSV_SUCCESS);
        nosv_set_task_degree(h_.parallel, 2);
        if (row.where == Where::OutsideTask) return;
        ASSERT_EQ(nosv_attach(&main_, nullptr, "main", NOSV_ATTACH_NONE), NOSV_SUCCESS);
        if (row.where == Where::InBlockedTask) {
            ASSERT_EQ(coexec_block_enter(), NOSV_SUCCESS);
            blocked_ = true;
        }
    }

    void TearDown() override {
        if (blocked_) {
            EXPECT_EQ(coexec_block_exit(), NOSV_SUCCESS);
        }
        if (main_) {
            EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
        }
        if (initialized_) {
            EXPECT_EQ(nosv_destroy(h_.task, NOSV_DESTROY_NONE), NOSV_SUCCESS);
            EXPECT_EQ(nosv_destroy(h_.parallel, NOSV_DESTROY_NONE), NOSV_SUCCESS);
            EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
        }
        EXPECT_EQ(coexec_is_active(), 0);
        nosv_type_destroy(type_, NOSV_TYPE_DESTROY_NONE);
    }

    int call() {
        const Row& row = GetParam();
        if (row.where != Where::InParallelExecution) return row.call(h_);
        nosv_task_type_t type;
        nosv_task_t t;
        EXPECT_EQ(nosv_type_init(
                      &type,
                      [](nosv_task_t self) {
                          auto* c = static_cast<ExecutionCall*>(nosv_get_task_metadata(self));
                          if (nosv_get_execution_id() == 0) c->result = c->row->call(*c->handles);
                      },
                      nullptr, nullptr, "execution", nullptr, nullptr, 0),
                  0);
        EXPECT_EQ(nosv_create(&t, type, sizeof(ExecutionCall), NOSV_CREATE_PARALLEL), 0);
        nosv_set_task_degree(t, 2);
        auto* c = new (nosv_get_task_metadata(t)) ExecutionCall{&row, &h_, {INT_MIN}};
        EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
        int result = c->result;
        EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
        nosv_type_destroy(type, 0);
        return result;
    }

    test::ScopedSegment segment_;
    nosv_task_type_t type_ = nullptr;
    Handles h_;
    nosv_task_t main_ = nullptr;
    bool initialized_ = false;
    bool blocked_ = false;
};

TEST_P(ParallelApiErrors, ReturnsTheDocumentedResult) {
    EXPECT_EQ(call(), GetParam().expected) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(Table, ParallelApiErrors, testing::ValuesIn(kRows),
                         [](const testing::TestParamInfo<Row>& info) {
                             return std::string(info.param.name);
                         });

} // namespace
