// Empty-task throughput: the attached main thread creates and submits N tasks
// with no body, then pauses; the last completed callback (which also destroys
// its task) submits it again. A diagnostic variant creates the tasks before
// the clock starts, to separate the cost of nosv_create from the rest.
#include "benchmarks.hpp"
#include "child_process.hpp"
#include "nosv_util.hpp"

#include <atomic>
#include <vector>

namespace coexec::bench {
namespace {

// Shared by the callbacks of one run. acq_rel decrements: the one that reaches
// zero has seen every other completion, and nosv_submit/nosv_pause order the
// wake-up before the main thread resumes.
struct Run {
    std::atomic<int64_t> remaining{0};
    nosv_task_t waiter = nullptr;
};
Run g_run;

void run_empty(nosv_task_t) {}

void completed(nosv_task_t task) {
    check(nosv_destroy(task, NOSV_DESTROY_NONE), "nosv_destroy");
    if (g_run.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1)
        check(nosv_submit(g_run.waiter, NOSV_SUBMIT_NONE), "nosv_submit (wake main)");
}

void create_tasks(nosv_task_type_t type, std::vector<nosv_task_t>& tasks) {
    for (nosv_task_t& task : tasks)
        check(nosv_create(&task, type, 0, NOSV_CREATE_NONE), "nosv_create");
}

// Submits `tasks` (creating each first unless `created`), waits for them all
// and returns the elapsed nanoseconds.
uint64_t one_run(nosv_task_type_t type, nosv_task_t self, std::vector<nosv_task_t>& tasks,
                 bool created) {
    g_run.waiter = self;
    g_run.remaining.store(int64_t(tasks.size()), std::memory_order_relaxed);
    const uint64_t start = now_ns();
    for (nosv_task_t& task : tasks) {
        if (!created) check(nosv_create(&task, type, 0, NOSV_CREATE_NONE), "nosv_create");
        check(nosv_submit(task, NOSV_SUBMIT_NONE), "nosv_submit");
    }
    check(nosv_pause(NOSV_PAUSE_NONE), "nosv_pause");
    const uint64_t elapsed = now_ns() - start;
    if (g_run.remaining.load(std::memory_order_acquire) != 0)
        fail("throughput: main task resumed before every task completed");
    return elapsed;
}

template <bool kPrecreate>
void body(const Options& options, SampleBuffer& out) {
    Runtime runtime;
    TaskType type(run_empty, completed, "bench-empty");
    Attached main_thread("bench-main");
    auto measure = [&](std::vector<nosv_task_t>& batch) {
        if (kPrecreate) create_tasks(type.get(), batch);
        return one_run(type.get(), main_thread.task(), batch, kPrecreate);
    };
    std::vector<nosv_task_t> warm_up(size_t(std::max<int64_t>(1, options.tasks / 10)));
    measure(warm_up);
    std::vector<nosv_task_t> tasks(size_t(options.tasks));
    const LockCounter locks(options.segment);
    for (int r = 0; r < options.repeats; ++r) {
        const uint64_t before = locks.read();
        const uint64_t ns = std::max<uint64_t>(measure(tasks), 1);
        out.push(double(tasks.size()) * 1e9 / double(ns),
                 double(locks.read() - before) / double(tasks.size()));
    }
}

} // namespace

Outcome measure_task_throughput(const Options& options) {
    return run_in_child(options, body<false>);
}

Outcome measure_submit_throughput(const Options& options) {
    return run_in_child(options, body<true>);
}

} // namespace coexec::bench
