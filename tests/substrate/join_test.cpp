// Joinable tasks (NOSV_CREATE_JOINABLE, nosv_join*, nosv_wait*,
// nosv_set_result) against a real instance: results, timeouts, joining
// from a task without holding its CPU, from plain threads, and many
// joiners racing many completions.
#include "support.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

using namespace coexec;

namespace {

using test::Instance;

constexpr uint64_t kForever = UINT64_MAX;
constexpr uint64_t kPatienceNs = 20'000'000'000ULL; // far beyond any correct run

// What a test task does, in its metadata.
struct Job {
    void* result = nullptr;                  // handed to nosv_set_result
    const std::atomic<bool>* gate = nullptr; // the body waits (off-CPU) until set
    uint64_t sleep_ns = 0;                   // then sleeps this long (nosv_waitfor)
    std::atomic<int>* completed = nullptr;   // counted by the completed callback
};

Job& job_of(nosv_task_t t) {
    return *static_cast<Job*>(nosv_get_task_metadata(t));
}

void run_job(nosv_task_t self) {
    Job& j = job_of(self);
    if (j.gate) {
        while (!j.gate->load(std::memory_order_acquire)) {
            EXPECT_EQ(nosv_waitfor(200'000, nullptr), NOSV_SUCCESS);
        }
    }
    if (j.sleep_ns) {
        EXPECT_EQ(nosv_waitfor(j.sleep_ns, nullptr), NOSV_SUCCESS);
    }
    if (j.result) {
        EXPECT_EQ(nosv_set_result(j.result), NOSV_SUCCESS);
    }
}

void count_completion(nosv_task_t self) {
    if (auto* c = job_of(self).completed) c->fetch_add(1);
}

class Join : public testing::Test {
  protected:
    explicit Join(const std::string& config = "") : in_(config) {
        EXPECT_EQ(nosv_type_init(&type_, run_job, nullptr, count_completion, "job", nullptr,
                                 nullptr, NOSV_TYPE_INIT_NONE),
                  NOSV_SUCCESS);
    }
    ~Join() override { EXPECT_EQ(nosv_type_destroy(type_, NOSV_TYPE_DESTROY_NONE), NOSV_SUCCESS); }

    nosv_task_t joinable(Job job = {}) {
        nosv_task_t t = nullptr;
        EXPECT_EQ(nosv_create(&t, type_, sizeof(Job), NOSV_CREATE_JOINABLE), NOSV_SUCCESS);
        job_of(t) = job;
        return t;
    }
    nosv_task_t submitted(Job job = {}) {
        nosv_task_t t = joinable(job);
        EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
        return t;
    }

    Instance in_;
    nosv_task_type_t type_ = nullptr;
};

void* as_result(uintptr_t v) {
    return reinterpret_cast<void*>(v);
}

TEST_F(Join, ReturnsTheResultOnceTheCompletedCallbackRan) {
    std::atomic<int> completed{0};
    nosv_task_t t = submitted({as_result(1234), nullptr, 2'000'000, &completed});
    void* r = nullptr;
    ASSERT_EQ(nosv_join(t, &r, kForever), NOSV_SUCCESS);
    EXPECT_EQ(r, as_result(1234));
    EXPECT_EQ(completed.load(), 1);
}

TEST_F(Join, WithoutASetResultGivesNull) {
    nosv_task_t t = submitted();
    void* r = as_result(7);
    ASSERT_EQ(nosv_join(t, &r, kForever), NOSV_SUCCESS);
    EXPECT_EQ(r, nullptr);
    // resval may be NULL.
    ASSERT_EQ(nosv_join(submitted({as_result(1)}), nullptr, kForever), NOSV_SUCCESS);
}

TEST_F(Join, TimeoutsReturnTimeoutAndTheTaskCanStillBeJoined) {
    std::atomic<bool> gate{false};
    std::atomic<int> completed{0};
    nosv_task_t t = submitted({as_result(5), &gate, 0, &completed});
    EXPECT_EQ(nosv_join(t, nullptr, 0), NOSV_ERR_TIMEOUT); // only a check
    const uint64_t start = test::now_ns();
    EXPECT_EQ(nosv_join(t, nullptr, 3'000'000), NOSV_ERR_TIMEOUT);
    EXPECT_GE(test::now_ns() - start, 3'000'000u);
    EXPECT_EQ(nosv_wait(t, 1'000'000), NOSV_ERR_TIMEOUT);
    EXPECT_EQ(nosv_wait(t, 0), NOSV_ERR_TIMEOUT);
    EXPECT_EQ(completed.load(), 0);
    gate = true;
    void* r = nullptr;
    ASSERT_EQ(nosv_join(t, &r, kPatienceNs), NOSV_SUCCESS);
    EXPECT_EQ(r, as_result(5));
    EXPECT_EQ(completed.load(), 1);
}

TEST_F(Join, ATimeoutZeroSucceedsOnceComplete) {
    nosv_task_t t = submitted({as_result(9)});
    void* r = nullptr;
    int rc;
    const uint64_t give_up = test::now_ns() + kPatienceNs;
    while ((rc = nosv_join(t, &r, 0)) == NOSV_ERR_TIMEOUT && test::now_ns() < give_up)
        ASSERT_EQ(nosv_yield(NOSV_YIELD_NONE), NOSV_SUCCESS);
    ASSERT_EQ(rc, NOSV_SUCCESS);
    EXPECT_EQ(r, as_result(9));
}

TEST_F(Join, WaitKeepsTheTaskForResubmitAndDestroy) {
    std::atomic<int> completed{0};
    std::atomic<bool> gate{true};
    nosv_task_t t = submitted({nullptr, &gate, 0, &completed});
    ASSERT_EQ(nosv_wait(t, kForever), NOSV_SUCCESS);
    EXPECT_EQ(completed.load(), 1);
    ASSERT_EQ(nosv_wait(t, 0), NOSV_SUCCESS); // still complete, still there
    // A new run: the wait is for it, not the finished one.
    gate = false;
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_wait(t, 2'000'000), NOSV_ERR_TIMEOUT);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_ERR_BUSY);
    gate = true;
    ASSERT_EQ(nosv_wait(t, kPatienceNs), NOSV_SUCCESS);
    EXPECT_EQ(completed.load(), 2);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
}

TEST_F(Join, JoinAllGathersEveryResultInOrder) {
    constexpr size_t n = 64;
    std::vector<nosv_task_t> tasks;
    for (size_t i = 0; i < n; ++i)
        tasks.push_back(submitted({as_result(i + 100), nullptr, (i % 4) * 100'000}));
    std::vector<void*> results(n, nullptr);
    ASSERT_EQ(nosv_join_all(tasks.data(), results.data(), n, kForever), NOSV_SUCCESS);
    for (size_t i = 0; i < n; ++i)
        EXPECT_EQ(results[i], as_result(i + 100)) << i;
    EXPECT_EQ(nosv_join_all(nullptr, nullptr, 0, kForever), NOSV_SUCCESS); // nothing to wait for
}

TEST_F(Join, JoinAllIsAllOrNothingOnTimeout) {
    constexpr size_t n = 16;
    std::atomic<bool> gate{false};
    std::vector<nosv_task_t> tasks;
    for (size_t i = 0; i < n; ++i)
        tasks.push_back(submitted({as_result(i), i == n / 2 ? &gate : nullptr}));
    std::vector<void*> results(n, as_result(77));
    EXPECT_EQ(nosv_join_all(tasks.data(), results.data(), n, 2'000'000), NOSV_ERR_TIMEOUT);
    EXPECT_EQ(nosv_wait_all(tasks.data(), n, 0), NOSV_ERR_TIMEOUT);
    for (void* r : results)
        EXPECT_EQ(r, as_result(77)); // nothing gathered
    // The others completed and are still there: waiting for them succeeds.
    for (size_t i = 0; i < n; ++i) {
        if (i != n / 2) {
            EXPECT_EQ(nosv_wait(tasks[i], kPatienceNs), NOSV_SUCCESS) << i;
        }
    }
    gate = true;
    ASSERT_EQ(nosv_join_all(tasks.data(), results.data(), n, kPatienceNs), NOSV_SUCCESS);
    for (size_t i = 0; i < n; ++i)
        EXPECT_EQ(results[i], as_result(i));
}

TEST_F(Join, WaitAllThenDestroy) {
    constexpr size_t n = 32;
    std::atomic<int> completed{0};
    std::vector<nosv_task_t> tasks;
    for (size_t i = 0; i < n; ++i)
        tasks.push_back(submitted({nullptr, nullptr, 50'000, &completed}));
    ASSERT_EQ(nosv_wait_all(tasks.data(), n, kForever), NOSV_SUCCESS);
    EXPECT_EQ(completed.load(), int(n));
    for (auto t : tasks)
        EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
}

// nOS-V's own check: a task that waits for a task another one is joining
// gets NOSV_ERR_INVALID_PARAMETER, whatever its timeout.
TEST_F(Join, ASecondJoinerIsRefused) {
    std::atomic<bool> gate{false};
    nosv_task_t target = submitted({as_result(3), &gate});
    static std::atomic<nosv_task_t> g_target;
    static std::atomic<int> g_rc[3];
    g_target = target;
    for (auto& rc : g_rc)
        rc = INT32_MIN;
    nosv_task_type_t second_type;
    ASSERT_EQ(nosv_type_init(
                  &second_type,
                  [](nosv_task_t) {
                      g_rc[0] = nosv_wait(g_target, 0);
                      g_rc[1] = nosv_wait(g_target, 100);
                      g_rc[2] = nosv_join(g_target, nullptr, kForever);
                  },
                  nullptr, nullptr, "second", nullptr, nullptr, 0),
              NOSV_SUCCESS);
    nosv_task_t second;
    ASSERT_EQ(nosv_create(&second, second_type, 0, NOSV_CREATE_JOINABLE), NOSV_SUCCESS);
    // A plain thread joins first; the second joiner runs once it waits.
    std::thread first([&] {
        void* r = nullptr;
        EXPECT_EQ(nosv_join(target, &r, kPatienceNs), NOSV_SUCCESS);
        EXPECT_EQ(r, as_result(3));
    });
    // The first joiner is registered once a check from here says so.
    const uint64_t give_up = test::now_ns() + kPatienceNs;
    while (nosv_wait(target, 0) != NOSV_ERR_INVALID_PARAMETER && test::now_ns() < give_up)
        ASSERT_EQ(nosv_yield(NOSV_YIELD_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(second, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_join(second, nullptr, kPatienceNs), NOSV_SUCCESS);
    for (auto& rc : g_rc)
        EXPECT_EQ(rc.load(), NOSV_ERR_INVALID_PARAMETER);
    gate = true;
    first.join();
    EXPECT_EQ(nosv_type_destroy(second_type, 0), NOSV_SUCCESS);
}

TEST_F(Join, MisusesGetTheirErrors) {
    // Not joinable.
    nosv_task_t plain;
    ASSERT_EQ(nosv_create(&plain, type_, sizeof(Job), NOSV_CREATE_NONE), NOSV_SUCCESS);
    job_of(plain) = {};
    EXPECT_EQ(nosv_join(plain, nullptr, 0), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_wait(plain, kForever), NOSV_ERR_INVALID_PARAMETER);
    ASSERT_EQ(nosv_submit(plain, NOSV_SUBMIT_INLINE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_destroy(plain, 0), NOSV_SUCCESS);
    // Never submitted: it would never complete.
    nosv_task_t fresh = joinable();
    EXPECT_EQ(nosv_join(fresh, nullptr, kForever), NOSV_ERR_INVALID_OPERATION);
    EXPECT_EQ(nosv_destroy(fresh, 0), NOSV_SUCCESS);
    // The same task twice in one list.
    nosv_task_t t = submitted();
    nosv_task_t twice[] = {t, t};
    EXPECT_EQ(nosv_join_all(twice, nullptr, 2, kForever), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_join_all(nullptr, nullptr, 1, kForever), NOSV_ERR_INVALID_PARAMETER);
    EXPECT_EQ(nosv_join(t, nullptr, kForever), NOSV_SUCCESS);
    EXPECT_EQ(nosv_set_result(nullptr), NOSV_ERR_INVALID_OPERATION); // the attached thread
}

// A task body that joins itself would wait forever.
TEST_F(Join, JoiningItselfIsAnInvalidOperation) {
    static std::atomic<int> rc;
    rc = INT32_MIN;
    nosv_task_type_t type;
    ASSERT_EQ(nosv_type_init(
                  &type, [](nosv_task_t self) { rc = nosv_join(self, nullptr, kForever); }, nullptr,
                  nullptr, "self", nullptr, nullptr, 0),
              NOSV_SUCCESS);
    nosv_task_t t;
    ASSERT_EQ(nosv_create(&t, type, 0, NOSV_CREATE_JOINABLE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_join(t, nullptr, kPatienceNs), NOSV_SUCCESS);
    EXPECT_EQ(rc.load(), NOSV_ERR_INVALID_OPERATION);
    EXPECT_EQ(nosv_type_destroy(type, 0), NOSV_SUCCESS);
}

// nOS-V: a joinable task "cannot call nosv_destroy of itself"; its joiner
// destroys it.
TEST_F(Join, ItsCompletedCallbackCannotDestroyIt) {
    static std::atomic<int> rc;
    rc = INT32_MIN;
    nosv_task_type_t type;
    ASSERT_EQ(nosv_type_init(
                  &type, [](nosv_task_t) {}, nullptr,
                  [](nosv_task_t self) { rc = nosv_destroy(self, NOSV_DESTROY_NONE); },
                  "selfdestroy", nullptr, nullptr, 0),
              NOSV_SUCCESS);
    nosv_task_t t;
    ASSERT_EQ(nosv_create(&t, type, 0, NOSV_CREATE_JOINABLE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_join(t, nullptr, kPatienceNs), NOSV_SUCCESS);
    EXPECT_EQ(rc.load(), NOSV_ERR_BUSY);
    EXPECT_EQ(nosv_type_destroy(type, 0), NOSV_SUCCESS);
}

TEST_F(Join, InlineRunsCanBeJoined) {
    nosv_task_t t = joinable({as_result(11)});
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_INLINE), NOSV_SUCCESS);
    void* r = nullptr;
    ASSERT_EQ(nosv_join(t, &r, 0), NOSV_SUCCESS);
    EXPECT_EQ(r, as_result(11));
}

// Joiners outside coexec sleep on the thread; a blocked task
// (coexec_block_enter) is outside coexec too.
TEST_F(Join, PlainThreadsAndBlockedTasksJoin) {
    std::atomic<bool> gate_a{false}, gate_b{false};
    nosv_task_t a = submitted({as_result(1), &gate_a});
    nosv_task_t b = submitted({as_result(2), &gate_b});
    std::thread plain([&] {
        EXPECT_EQ(nosv_join(a, nullptr, 1'000'000), NOSV_ERR_TIMEOUT);
        gate_a = true;
        void* r = nullptr;
        EXPECT_EQ(nosv_join(a, &r, kPatienceNs), NOSV_SUCCESS);
        EXPECT_EQ(r, as_result(1));
    });
    ASSERT_EQ(coexec_block_enter(), NOSV_SUCCESS);
    EXPECT_EQ(nosv_wait(b, 1'000'000), NOSV_ERR_TIMEOUT);
    gate_b = true;
    void* r = nullptr;
    EXPECT_EQ(nosv_join(b, &r, kPatienceNs), NOSV_SUCCESS);
    EXPECT_EQ(r, as_result(2));
    ASSERT_EQ(coexec_block_exit(), NOSV_SUCCESS);
    plain.join();
}

// Joins many short tasks right after their submit, so completions land on
// every step of the joiner's way to sleep: none may be missed.
TEST_F(Join, NoWakeUpIsLostAgainstQuickCompletions) {
    std::thread plain([&] {
        for (int i = 0; i < 500; ++i) {
            void* r = nullptr;
            nosv_task_t t = submitted({as_result(i)});
            ASSERT_EQ(nosv_join(t, &r, kPatienceNs), NOSV_SUCCESS);
            ASSERT_EQ(r, as_result(i));
        }
    });
    for (int i = 0; i < 1000; ++i) {
        void* r = nullptr;
        nosv_task_t t = submitted({as_result(i)});
        ASSERT_EQ(nosv_join(t, &r, i % 2 ? kPatienceNs : kForever), NOSV_SUCCESS);
        ASSERT_EQ(r, as_result(i));
    }
    plain.join();
}

// On one CPU, held by the test's attached thread.
class JoinOnOneCpu : public Join {
  protected:
    JoinOnOneCpu() : Join("topology.binding=0") {}
};

// A joiner that kept its CPU would deadlock here: the task it joins needs
// that CPU. The attached thread joins a worker task A, which joins B.
TEST_F(JoinOnOneCpu, AJoiningTaskGivesItsCpuToTheTaskItJoins) {
    ASSERT_EQ(nosv_get_num_cpus(), 1);
    struct Chain {
        nosv_task_t inner;
        std::atomic<int> inner_rc{INT32_MIN};
        void* inner_result = nullptr;
    };
    static Chain chain;
    nosv_task_type_t outer_type;
    ASSERT_EQ(nosv_type_init(
                  &outer_type,
                  [](nosv_task_t) {
                      ASSERT_EQ(nosv_submit(chain.inner, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
                      chain.inner_rc = nosv_join(chain.inner, &chain.inner_result, kPatienceNs);
                      EXPECT_EQ(nosv_set_result(as_result(42)), NOSV_SUCCESS);
                  },
                  nullptr, nullptr, "outer", nullptr, nullptr, 0),
              NOSV_SUCCESS);
    chain.inner = joinable({as_result(24), nullptr, 1'000'000});
    chain.inner_rc = INT32_MIN;
    chain.inner_result = nullptr;
    nosv_task_t outer;
    ASSERT_EQ(nosv_create(&outer, outer_type, 0, NOSV_CREATE_JOINABLE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_submit(outer, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    void* r = nullptr;
    ASSERT_EQ(nosv_join(outer, &r, kPatienceNs), NOSV_SUCCESS);
    EXPECT_EQ(r, as_result(42));
    EXPECT_EQ(chain.inner_rc.load(), NOSV_SUCCESS);
    EXPECT_EQ(chain.inner_result, as_result(24));
    EXPECT_EQ(nosv_type_destroy(outer_type, 0), NOSV_SUCCESS);
}

// A timed join on one CPU: the task joined runs meanwhile, and the joiner
// gets the CPU back after its deadline.
TEST_F(JoinOnOneCpu, ATimedJoinLetsTheCpuRunOtherWork) {
    std::atomic<int> completed{0};
    std::atomic<bool> gate{false};
    nosv_task_t gated = submitted({nullptr, &gate, 0, &completed});
    nosv_task_t quick = submitted({nullptr, nullptr, 0, &completed});
    // `quick` can only run while we wait without the CPU.
    EXPECT_EQ(nosv_join(gated, nullptr, 5'000'000), NOSV_ERR_TIMEOUT);
    EXPECT_EQ(nosv_join(quick, nullptr, kPatienceNs), NOSV_SUCCESS);
    gate = true;
    EXPECT_EQ(nosv_join(gated, nullptr, kPatienceNs), NOSV_SUCCESS);
    EXPECT_EQ(completed.load(), 2);
}

// Many joiners (worker tasks and plain threads) join many tasks that end
// in random order, with random timeouts; every result arrives exactly
// once. Seeded, bounded.
TEST_F(Join, ManyJoinersManyTasksRandomOrder) {
    constexpr int kJoiners = 6, kPerJoiner = 16, kRounds = 3;
    struct Plan {
        std::vector<nosv_task_t> tasks;
        std::vector<uint64_t> timeouts; // per join attempt: 0, short, or forever
        std::vector<uintptr_t> expected;
        std::atomic<int> failures{0};
    };
    static std::vector<Plan>* g_plans;
    std::mt19937_64 rng(20261124);
    for (int round = 0; round < kRounds; ++round) {
        std::vector<Plan> plans(kJoiners);
        g_plans = &plans;
        std::vector<std::atomic<bool>> gates(kJoiners * kPerJoiner);
        for (int j = 0; j < kJoiners; ++j)
            for (int k = 0; k < kPerJoiner; ++k) {
                const int id = j * kPerJoiner + k;
                Job job{as_result(uintptr_t(id) + 1), nullptr, rng() % 3 * 200'000};
                if (rng() % 4 == 0) job.gate = &gates[id];
                plans[j].tasks.push_back(submitted(job));
                plans[j].expected.push_back(uintptr_t(id) + 1);
                const uint64_t choices[] = {0, 50'000, kForever};
                plans[j].timeouts.push_back(choices[rng() % 3]);
            }
        // Each joiner joins its tasks in its own random order, retrying
        // after a timeout.
        for (auto& p : plans) {
            std::vector<size_t> order(p.tasks.size());
            for (size_t i = 0; i < order.size(); ++i)
                order[i] = i;
            std::shuffle(order.begin(), order.end(), rng);
            std::vector<nosv_task_t> tasks;
            std::vector<uint64_t> timeouts;
            std::vector<uintptr_t> expected;
            for (size_t i : order) {
                tasks.push_back(p.tasks[i]);
                timeouts.push_back(p.timeouts[i]);
                expected.push_back(p.expected[i]);
            }
            p.tasks = tasks;
            p.timeouts = timeouts;
            p.expected = expected;
        }
        auto join_plan = [](Plan& p) {
            for (size_t i = 0; i < p.tasks.size(); ++i) {
                void* r = nullptr;
                int rc;
                const uint64_t give_up = test::now_ns() + kPatienceNs;
                while ((rc = nosv_join(p.tasks[i], &r, p.timeouts[i])) == NOSV_ERR_TIMEOUT &&
                       test::now_ns() < give_up) {
                    if (nosv_self())
                        nosv_yield(NOSV_YIELD_NONE);
                    else
                        std::this_thread::sleep_for(std::chrono::microseconds(50));
                }
                if (rc != NOSV_SUCCESS || r != as_result(p.expected[i])) p.failures++;
            }
        };
        static void (*g_join_plan)(Plan&);
        g_join_plan = +join_plan;
        nosv_task_type_t joiner_type;
        ASSERT_EQ(nosv_type_init(
                      &joiner_type,
                      [](nosv_task_t self) {
                          g_join_plan((*g_plans)[*static_cast<int*>(nosv_get_task_metadata(self))]);
                      },
                      nullptr, nullptr, "joiner", nullptr, nullptr, 0),
                  NOSV_SUCCESS);
        // Joiners 0 and 1 are plain threads, the rest worker tasks.
        std::vector<std::thread> threads;
        std::vector<nosv_task_t> joiner_tasks;
        for (int j = 0; j < kJoiners; ++j) {
            if (j < 2) {
                threads.emplace_back(join_plan, std::ref(plans[j]));
                continue;
            }
            nosv_task_t t;
            ASSERT_EQ(nosv_create(&t, joiner_type, sizeof(int), NOSV_CREATE_JOINABLE),
                      NOSV_SUCCESS);
            *static_cast<int*>(nosv_get_task_metadata(t)) = j;
            ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
            joiner_tasks.push_back(t);
        }
        // Open the gates in random order while the joiners wait.
        std::vector<size_t> gate_order(gates.size());
        for (size_t i = 0; i < gate_order.size(); ++i)
            gate_order[i] = i;
        std::shuffle(gate_order.begin(), gate_order.end(), rng);
        for (size_t g : gate_order) {
            gates[g] = true;
            if (g % 8 == 0) {
                EXPECT_EQ(nosv_waitfor(100'000, nullptr), NOSV_SUCCESS);
            }
        }
        ASSERT_EQ(nosv_join_all(joiner_tasks.data(), nullptr, joiner_tasks.size(), kPatienceNs),
                  NOSV_SUCCESS);
        for (auto& t : threads)
            t.join();
        for (int j = 0; j < kJoiners; ++j)
            EXPECT_EQ(plans[j].failures.load(), 0) << "joiner " << j << " round " << round;
        EXPECT_EQ(nosv_type_destroy(joiner_type, 0), NOSV_SUCCESS);
    }
}

} // namespace
