// The member process: driver threads do random operations through the C API
// while the main thread plays the outside world (it resumes paused tasks,
// ends waits early and releases task events). Every call's result is
// checked; an unexpected one ends the process with kExitApiError.
#include "member.hpp"

#include "board.hpp"
#include "inspect.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace coexec::torture {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto rlx = std::memory_order_relaxed;
constexpr auto acq = std::memory_order_acquire;
constexpr auto rel = std::memory_order_release;

constexpr int kTasksPerDriver = 6;
constexpr int kMaxSteps = 6;

[[noreturn]] void die(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void die(int code, const char* fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "torture member %d: %s\n", int(::getpid()), buf);
    std::fflush(stderr);
    // No destructors: other threads are still running.
    ::_exit(code);
}

// What a driver thread is calling now, for the report of a stuck member;
// null on other threads.
thread_local std::atomic<const char*>* t_doing = nullptr;

void doing(const char* what) {
    if (t_doing) t_doing->store(what, std::memory_order_relaxed);
}

// Fails the member unless `rc` is `want`.
#define EXPECT_RC(call, want)                                                                      \
    do {                                                                                           \
        doing(#call);                                                                              \
        const int rc_ = (call);                                                                    \
        doing("(between calls)");                                                                  \
        if (rc_ != (want))                                                                         \
            die(kExitApiError, "%s returned %d (%s), expected %d, at %s:%d", #call, rc_,           \
                nosv_get_error_string(rc_), int(want), __FILE__, __LINE__);                        \
    } while (0)
#define EXPECT_OK(call) EXPECT_RC(call, NOSV_SUCCESS)
#define ENSURE(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) die(kExitApiError, __VA_ARGS__);                                              \
    } while (0)

// What a task body does, one step after another.
enum class Step : uint8_t {
    Spin,        // user code on the CPU
    Yield,       // nosv_yield
    Schedpoint,  // nosv_schedpoint
    Waitfor,     // nosv_waitfor, not ended early
    Pause,       // nosv_pause, resumed by the main thread
    BlockEnter,  // coexec_block_enter, a wait outside coexec, coexec_block_exit
    Lend,        // coexec_lend_cpu, own code, coexec_block_exit
    Keep,        // coexec_keep_cpu, own code, coexec_block_exit
    Event,       // one event, released later by the main thread
    WaitforWake, // nosv_waitfor that the main thread may end early (last step)
};

struct TaskRec;

// A task's script, in its metadata.
struct Script {
    TaskRec* rec;
    uint32_t nsteps;
    Step steps[kMaxSteps];
    uint32_t arg_us[kMaxSteps];
};

// One task a driver owns, reused across submits.
struct TaskRec {
    nosv_task_t task = nullptr;
    int index = 0; // its slot in the request arrays
    // Set by the driver before a submit, cleared by the completed callback:
    // the driver submits or destroys the task only while it is clear.
    std::atomic<bool> in_flight{false};
    std::atomic<bool> running{false}; // its body runs (never twice at once)
    bool has_event = false;
    // For the report of a task that never completes.
    nosv_flags_t last_flags = 0;
    std::atomic<int> wake_rc{0}; // the last deadline-wake submit's result
};

// Requests from task bodies (and attached drivers) to the main thread, one
// cell per TaskRec or driver: a pointer set means "act on this task".
struct Requests {
    explicit Requests(size_t n)
        : pause(new std::atomic<nosv_task_t>[n]), wake(new std::atomic<nosv_task_t>[n]),
          event(new std::atomic<nosv_task_t>[n]), wake_done(new std::atomic<int>[n]), size(n) {
        for (size_t i = 0; i < n; ++i) {
            pause[i].store(nullptr, rlx);
            wake[i].store(nullptr, rlx);
            event[i].store(nullptr, rlx);
            wake_done[i].store(0, rlx);
        }
    }
    std::unique_ptr<std::atomic<nosv_task_t>[]> pause, wake, event;
    std::unique_ptr<std::atomic<int>[]> wake_done;
    size_t size;
};

struct Member {
    MemberSlot* stats = nullptr;
    // Every driver's TaskRecs, by request index (the drivers' own cells
    // have none).
    std::vector<TaskRec*> recs;
    // Each driver's current call (see doing()).
    std::unique_ptr<std::atomic<const char*>[]> doing;
    WorkloadArgs args;
    std::vector<int> cpus, numas; // system ids
    std::unique_ptr<Requests> req;
    std::atomic<bool> stop{false};
    std::atomic<int> drivers_done{0};
    nosv_task_type_t type = nullptr;
};

Member* g_member = nullptr;

void count(Op op, uint64_t n = 1) {
    torture::count(*g_member->stats, op, n);
}

uint64_t now_us() {
    return uint64_t(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
            .count());
}

void spin_us(uint32_t us) {
    const uint64_t end = now_us() + us;
    while (now_us() < end) {
    }
}

// Code of the thread's own while outside coexec: a short spin or a sleep.
void outside_work(uint32_t us) {
    if (us % 2)
        spin_us(us);
    else
        ::usleep(us);
}

// ---- task callbacks ----------------------------------------------------

void run_step(nosv_task_t t, TaskRec& rec, Step step, uint32_t us) {
    Requests& rq = *g_member->req;
    const size_t i = size_t(rec.index);
    switch (step) {
    case Step::Spin:
        spin_us(us);
        break;
    case Step::Yield:
        EXPECT_OK(nosv_yield(NOSV_YIELD_NONE));
        count(Op::Yield);
        break;
    case Step::Schedpoint:
        EXPECT_OK(nosv_schedpoint(NOSV_SCHEDPOINT_NONE));
        count(Op::Schedpoint);
        break;
    case Step::Waitfor: {
        uint64_t actual = 0;
        EXPECT_OK(nosv_waitfor(uint64_t(us) * 1000, &actual));
        ENSURE(actual >= uint64_t(us) * 1000, "nosv_waitfor(%u us) returned after %llu ns", us,
               (unsigned long long)actual);
        count(Op::Waitfor);
        break;
    }
    case Step::Pause:
        rq.pause[i].store(t, rel);
        EXPECT_OK(nosv_pause(NOSV_PAUSE_NONE));
        // The main thread takes the request before it submits: a pause that
        // returns with the request still there returned without a submit.
        ENSURE(rq.pause[i].load(acq) == nullptr, "nosv_pause returned without a submit");
        count(Op::Pause);
        break;
    case Step::BlockEnter:
        EXPECT_OK(coexec_block_enter());
        outside_work(us);
        EXPECT_OK(coexec_block_exit());
        count(Op::BlockEnter);
        count(Op::BlockExit);
        break;
    case Step::Lend:
        EXPECT_OK(coexec_lend_cpu());
        outside_work(us);
        EXPECT_OK(coexec_block_exit());
        count(Op::LendCpu);
        count(Op::BlockExit);
        break;
    case Step::Keep:
        EXPECT_OK(coexec_keep_cpu());
        outside_work(us);
        EXPECT_OK(coexec_block_exit());
        count(Op::KeepCpu);
        count(Op::BlockExit);
        break;
    case Step::Event:
        EXPECT_OK(nosv_increase_event_counter(1));
        ENSURE(nosv_has_events() == 1, "nosv_has_events() is not 1 after an increase");
        rq.event[i].store(t, rel);
        count(Op::EventIncrease);
        break;
    case Step::WaitforWake: {
        rq.wake[i].store(t, rel);
        uint64_t actual = 0;
        EXPECT_OK(nosv_waitfor(uint64_t(us) * 1000, &actual));
        count(Op::Waitfor);
        if (rq.wake[i].exchange(nullptr, acq) == nullptr) {
            // The main thread took the request: its submit may still be on
            // its way. The task must not end before it lands.
            const uint64_t give_up = now_us() + 30'000'000;
            while (rq.wake_done[i].load(acq) == 0) {
                ENSURE(now_us() < give_up, "a deadline-wake submit never returned");
                ::usleep(20);
            }
            rq.wake_done[i].store(0, rlx);
        }
        break;
    }
    }
}

void task_body(nosv_task_t t) {
    auto* s = static_cast<Script*>(nosv_get_task_metadata(t));
    ENSURE(s && s->rec && s->rec->task == t, "task metadata lost");
    TaskRec& rec = *s->rec;
    ENSURE(!rec.running.exchange(true, acq), "a task body runs twice at once");
    ENSURE(nosv_self() == t, "nosv_self() is not the running task");
    ENSURE(rec.in_flight.load(acq), "a task runs that was not submitted");
    count(Op::TaskRun);
    for (uint32_t k = 0; k < s->nsteps; ++k)
        run_step(t, rec, s->steps[k], s->arg_us[k]);
    ENSURE(nosv_self() == t, "nosv_self() changed inside the task");
    rec.running.store(false, rel);
}

void task_end(nosv_task_t t) {
    ENSURE(nosv_self() == t, "the end callback does not run as its task");
}

void task_completed(nosv_task_t t) {
    auto* s = static_cast<Script*>(nosv_get_task_metadata(t));
    TaskRec& rec = *s->rec;
    ENSURE(!rec.running.load(acq), "a task completed while its body runs");
    g_member->stats->in_flight.fetch_sub(1, rlx);
    count(Op::Completed);
    // Last: once clear, the driver may destroy the task.
    ENSURE(rec.in_flight.exchange(false, std::memory_order_acq_rel), "a task completed twice");
}

// ---- driver threads ----------------------------------------------------

class Rng {
  public:
    explicit Rng(uint64_t seed) : g_(seed) {}
    uint32_t below(uint32_t n) { return uint32_t(g_() % n); }
    bool one_in(uint32_t n) { return below(n) == 0; }
    uint32_t range(uint32_t lo, uint32_t hi) { return lo + below(hi - lo + 1); }
    // An index drawn with the given weights.
    template <size_t N>
    size_t pick(const uint32_t (&weights)[N]) {
        uint32_t total = 0;
        for (uint32_t w : weights)
            total += w;
        uint32_t x = below(total);
        for (size_t i = 0; i < N; ++i) {
            if (x < weights[i]) return i;
            x -= weights[i];
        }
        return N - 1;
    }

  private:
    std::mt19937_64 g_;
};

// A random affinity: none, or a CPU or NUMA node (system ids), strict or
// preferred. Counts what it chose.
bool random_affinity(Rng& rng, nosv_affinity_t& out) {
    const Member& m = *g_member;
    switch (rng.below(6)) {
    case 2:
        out = nosv_affinity_get(uint32_t(m.cpus[rng.below(uint32_t(m.cpus.size()))]),
                                NOSV_AFFINITY_LEVEL_CPU, NOSV_AFFINITY_TYPE_STRICT);
        count(Op::AffinityCpuStrict);
        return true;
    case 3:
        out = nosv_affinity_get(uint32_t(m.cpus[rng.below(uint32_t(m.cpus.size()))]),
                                NOSV_AFFINITY_LEVEL_CPU, NOSV_AFFINITY_TYPE_PREFERRED);
        count(Op::AffinityCpuPreferred);
        return true;
    case 4:
        out = nosv_affinity_get(uint32_t(m.numas[rng.below(uint32_t(m.numas.size()))]),
                                NOSV_AFFINITY_LEVEL_NUMA, NOSV_AFFINITY_TYPE_STRICT);
        count(Op::AffinityNumaStrict);
        return true;
    case 5:
        out = nosv_affinity_get(uint32_t(m.numas[rng.below(uint32_t(m.numas.size()))]),
                                NOSV_AFFINITY_LEVEL_NUMA, NOSV_AFFINITY_TYPE_PREFERRED);
        count(Op::AffinityNumaPreferred);
        return true;
    default:
        out = nosv_affinity_get(0, NOSV_AFFINITY_LEVEL_NONE, NOSV_AFFINITY_TYPE_PREFERRED);
        return false;
    }
}

bool same_affinity(const nosv_affinity_t& a, const nosv_affinity_t& b) {
    return a.level == b.level && a.type == b.type && a.index == b.index;
}

std::vector<std::string> report_pending();

// Stuck: reports what is pending. Under the harness, tells it so (it looks
// at the segment and the threads while they are still there, then kills
// us); alone, looks at itself with gdb and exits.
[[noreturn]] void stuck() {
    const std::vector<std::string> tasks = report_pending();
    if (!g_member->args.wait_when_stuck) {
        std::fprintf(stderr, "%s", inspect_process(::getpid(), tasks).c_str());
        die(kExitDrainTimeout, "stuck");
    }
    g_member->stats->phase.store(Phase::Stuck, rel);
    ::sleep(120);
    die(kExitDrainTimeout, "stuck, and nobody came to look");
}

class Driver {
  public:
    Driver(int id, uint64_t seed) : id_(id), rng_(seed) {
        const int per = kTasksPerDriver;
        for (int k = 0; k < per; ++k) {
            recs_[k].index = id * per + k;
            g_member->recs[size_t(id * per + k)] = &recs_[k];
        }
        self_index_ = g_member->args.threads * per + id;
    }
    void run();

  private:
    void attached_step();
    void detached_step();
    void attach();
    void detach();
    void submit(bool attached);
    void self_pause();
    void recreate();
    void create(TaskRec& rec);
    void nested_init();
    void queries(bool attached);
    void probes();
    void drain();
    TaskRec* idle_rec();
    void fill_script(Script& s, bool for_inline);

    int id_;
    Rng rng_;
    TaskRec recs_[kTasksPerDriver];
    bool attached_ = false;
    nosv_task_t self_ = nullptr;
    int self_index_ = 0;
};

void Driver::run() {
    t_doing = &g_member->doing[size_t(id_)];
    for (auto& r : recs_)
        create(r);
    while (!g_member->stop.load(acq)) {
        if (attached_)
            attached_step();
        else
            detached_step();
    }
    drain();
    doing("(done)");
    t_doing = nullptr;
    g_member->drivers_done.fetch_add(1, rel);
}

void Driver::attached_step() {
    enum {
        Submit,
        Yield,
        Schedpoint,
        Waitfor,
        Pause,
        Block,
        Lend,
        Keep,
        Spin,
        Detach,
        Init,
        Query,
        Recreate
    };
    static constexpr uint32_t weights[] = {30, 8, 8, 5, 5, 4, 4, 4, 5, 6, 2, 3, 2};
    switch (rng_.pick(weights)) {
    case Submit:
        submit(true);
        break;
    case Yield:
        EXPECT_OK(nosv_yield(rng_.one_in(2) ? NOSV_YIELD_NONE : NOSV_YIELD_NOFLUSH));
        count(Op::Yield);
        break;
    case Schedpoint:
        EXPECT_OK(nosv_schedpoint(NOSV_SCHEDPOINT_NONE));
        count(Op::Schedpoint);
        break;
    case Waitfor: {
        const uint64_t ns = uint64_t(rng_.range(1, 2000)) * 1000;
        uint64_t actual = 0;
        EXPECT_OK(nosv_waitfor(ns, &actual));
        ENSURE(actual >= ns, "nosv_waitfor(%llu ns) returned after %llu ns", (unsigned long long)ns,
               (unsigned long long)actual);
        count(Op::Waitfor);
        break;
    }
    case Pause:
        self_pause();
        break;
    case Block:
        EXPECT_OK(coexec_block_enter());
        ENSURE(nosv_self() == self_, "nosv_self() changed by coexec_block_enter");
        outside_work(rng_.below(500));
        EXPECT_OK(coexec_block_exit());
        count(Op::BlockEnter);
        count(Op::BlockExit);
        break;
    case Lend:
        EXPECT_OK(coexec_lend_cpu());
        outside_work(rng_.below(300));
        EXPECT_OK(coexec_block_exit());
        count(Op::LendCpu);
        count(Op::BlockExit);
        break;
    case Keep:
        EXPECT_OK(coexec_keep_cpu());
        // Now and then long enough for a monitor to take the CPU.
        outside_work(rng_.one_in(8) ? rng_.range(20'000, 40'000) : rng_.below(300));
        EXPECT_OK(coexec_block_exit());
        count(Op::KeepCpu);
        count(Op::BlockExit);
        break;
    case Spin:
        spin_us(rng_.below(100));
        break;
    case Detach:
        detach();
        break;
    case Init:
        nested_init();
        break;
    case Query:
        queries(true);
        break;
    case Recreate:
        recreate();
        break;
    }
}

void Driver::detached_step() {
    enum { Attach, Submit, Init, Query, Recreate, Sleep, Probe };
    static constexpr uint32_t weights[] = {40, 20, 3, 3, 3, 5, 2};
    switch (rng_.pick(weights)) {
    case Attach:
        attach();
        break;
    case Submit:
        submit(false);
        break;
    case Init:
        nested_init();
        break;
    case Query:
        queries(false);
        break;
    case Recreate:
        recreate();
        break;
    case Sleep:
        ::usleep(rng_.below(500));
        break;
    case Probe:
        probes();
        break;
    }
}

void Driver::attach() {
    nosv_affinity_t aff;
    const bool with = random_affinity(rng_, aff);
    const nosv_flags_t flags = rng_.one_in(4) ? COEXEC_ATTACH_KEEP_AFFINITY : NOSV_ATTACH_NONE;
    EXPECT_OK(nosv_attach(&self_, with ? &aff : nullptr, "torture-driver", flags));
    ENSURE(nosv_self() == self_, "nosv_self() is not the attached task");
    ENSURE(nosv_get_current_logical_cpu() >= 0, "an attached thread holds no CPU");
    attached_ = true;
    count(Op::Attach);
}

void Driver::detach() {
    EXPECT_OK(nosv_detach(rng_.one_in(3) ? NOSV_DETACH_NO_RESTORE_AFFINITY : NOSV_DETACH_NONE));
    ENSURE(nosv_self() == nullptr, "nosv_self() is set after nosv_detach");
    attached_ = false;
    self_ = nullptr;
    count(Op::Detach);
}

void Driver::self_pause() {
    Requests& rq = *g_member->req;
    rq.pause[size_t(self_index_)].store(self_, rel);
    EXPECT_OK(nosv_pause(NOSV_PAUSE_NONE));
    ENSURE(rq.pause[size_t(self_index_)].load(acq) == nullptr,
           "nosv_pause of an attached thread returned without a submit");
    ENSURE(nosv_self() == self_, "nosv_self() changed by nosv_pause");
    count(Op::Pause);
}

TaskRec* Driver::idle_rec() {
    const uint32_t start = rng_.below(kTasksPerDriver);
    for (uint32_t k = 0; k < kTasksPerDriver; ++k) {
        TaskRec& r = recs_[(start + k) % kTasksPerDriver];
        if (!r.in_flight.load(acq)) return &r;
    }
    return nullptr;
}

void Driver::create(TaskRec& rec) {
    EXPECT_OK(nosv_create(&rec.task, g_member->type, sizeof(Script), NOSV_CREATE_NONE));
    auto* s = static_cast<Script*>(nosv_get_task_metadata(rec.task));
    ENSURE(s != nullptr, "nosv_create gave no metadata");
    const auto* bytes = reinterpret_cast<const unsigned char*>(s);
    for (size_t i = 0; i < sizeof(Script); ++i)
        ENSURE(bytes[i] == 0, "fresh task metadata is not zeroed");
    ENSURE(nosv_get_task_type(rec.task) == g_member->type, "nosv_get_task_type is wrong");
    s->rec = &rec;
    count(Op::Create);
}

void Driver::recreate() {
    TaskRec* r = idle_rec();
    if (!r) return;
    EXPECT_OK(nosv_destroy(r->task, NOSV_DESTROY_NONE));
    count(Op::Destroy);
    create(*r);
}

void Driver::fill_script(Script& s, bool for_inline) {
    // Inline tasks run on the submitter's thread: no pause, no wait
    // outside coexec.
    static constexpr uint32_t all[] = {20, 10, 10, 8, 8, 6, 6, 6, 5, 5};
    static constexpr uint32_t inline_only[] = {20, 10, 10, 8, 0, 0, 0, 0, 5, 0};
    s.nsteps = rng_.range(1, kMaxSteps);
    bool has_event = false;
    for (uint32_t k = 0; k < s.nsteps; ++k) {
        auto step = Step(for_inline ? rng_.pick(inline_only) : rng_.pick(all));
        // One event per run (one request cell); the early-woken wait only
        // last (see run_step).
        if ((step == Step::Event && has_event) || (step == Step::WaitforWake && k + 1 != s.nsteps))
            step = Step::Spin;
        has_event |= step == Step::Event;
        uint32_t us = 0;
        switch (step) {
        case Step::Spin:
            us = rng_.below(200);
            break;
        case Step::Waitfor:
            us = rng_.range(10, 3000);
            break;
        case Step::BlockEnter:
            us = rng_.below(500);
            break;
        case Step::Lend:
            us = rng_.below(300);
            break;
        case Step::Keep:
            us = rng_.one_in(8) ? rng_.range(20'000, 40'000) : rng_.below(300);
            break;
        case Step::WaitforWake:
            us = rng_.range(2000, 20000);
            break;
        default:
            break;
        }
        s.steps[k] = step;
        s.arg_us[k] = us;
    }
    s.rec->has_event = has_event;
}

void Driver::submit(bool attached) {
    TaskRec* r = idle_rec();
    if (!r) return;
    enum { None, Unlocked, Immediate, ImmediateUnlocked, Blocking, BlockingUnlocked, Inline };
    static constexpr uint32_t in_task[] = {30, 15, 15, 5, 15, 5, 10};
    static constexpr uint32_t outside[] = {30, 15, 0, 0, 0, 0, 0};
    const size_t kind = rng_.pick(attached ? in_task : outside);
    static constexpr nosv_flags_t flag_of[] = {
        NOSV_SUBMIT_NONE,      NOSV_SUBMIT_UNLOCKED,
        NOSV_SUBMIT_IMMEDIATE, NOSV_SUBMIT_IMMEDIATE | NOSV_SUBMIT_UNLOCKED,
        NOSV_SUBMIT_BLOCKING,  NOSV_SUBMIT_BLOCKING | NOSV_SUBMIT_UNLOCKED,
        NOSV_SUBMIT_INLINE};
    static constexpr Op op_of[] = {Op::SubmitNone,      Op::SubmitUnlocked, Op::SubmitImmediate,
                                   Op::SubmitImmediate, Op::SubmitBlocking, Op::SubmitBlocking,
                                   Op::SubmitInline};
    auto* s = static_cast<Script*>(nosv_get_task_metadata(r->task));
    fill_script(*s, kind == Inline);

    const int prio = rng_.one_in(3) ? int(rng_.range(0, 8)) - 3 : 0;
    nosv_set_task_priority(r->task, prio);
    ENSURE(nosv_get_task_priority(r->task) == prio, "nosv_get_task_priority is wrong");
    if (prio != 0) count(Op::Priority);
    nosv_affinity_t aff;
    random_affinity(rng_, aff);
    nosv_set_task_affinity(r->task, &aff);
    ENSURE(same_affinity(nosv_get_task_affinity(r->task), aff), "nosv_get_task_affinity is wrong");

    r->last_flags = flag_of[kind];
    r->wake_rc.store(0, rlx);
    r->in_flight.store(true, rel);
    g_member->stats->in_flight.fetch_add(1, rlx);
    EXPECT_OK(nosv_submit(r->task, flag_of[kind]));
    count(op_of[kind]);
    if (kind == Blocking || kind == BlockingUnlocked)
        ENSURE(!r->in_flight.load(acq), "a blocking submit returned before its task completed");
    if (kind == Inline && !r->has_event)
        ENSURE(!r->in_flight.load(acq), "an inline submit returned before its task completed");
    if (attached) ENSURE(nosv_self() == self_, "nosv_self() changed by nosv_submit");
}

void Driver::nested_init() {
    EXPECT_OK(nosv_init());
    EXPECT_OK(nosv_shutdown());
    ENSURE(coexec_is_active(), "a nested nosv_shutdown left the instance");
    count(Op::InitNested);
}

void Driver::queries(bool attached) {
    int spare = 0;
    EXPECT_OK(coexec_spare_cpus(&spare));
    ENSURE(spare <= int(g_member->cpus.size()), "coexec_spare_cpus says %d of %zu CPUs", spare,
           g_member->cpus.size());
    ENSURE(nosv_get_num_cpus() == int(g_member->cpus.size()), "nosv_get_num_cpus changed");
    const int wanted = coexec_cpu_wanted();
    ENSURE(attached || wanted == 0, "coexec_cpu_wanted() outside a task is %d", wanted);
    ENSURE((nosv_self() != nullptr) == attached, "nosv_self() is wrong");
    count(Op::Query);
}

void Driver::probes() {
    // The documented errors for calls that need a task, from a thread that
    // has none.
    EXPECT_RC(nosv_pause(NOSV_PAUSE_NONE), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_RC(nosv_yield(NOSV_YIELD_NONE), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_RC(nosv_waitfor(1000, nullptr), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_RC(coexec_block_exit(), NOSV_ERR_OUTSIDE_TASK);
    EXPECT_RC(nosv_detach(NOSV_DETACH_NONE), NOSV_ERR_OUTSIDE_TASK);
    if (TaskRec* r = idle_rec())
        EXPECT_RC(nosv_submit(r->task, NOSV_SUBMIT_BLOCKING), NOSV_ERR_OUTSIDE_TASK);
    count(Op::Query);
}

void Driver::drain() {
    if (attached_) detach();
    doing("(waiting for its tasks)");
    const uint64_t give_up = now_us() + uint64_t(g_member->args.drain_ms) * 1000;
    for (;;) {
        int pending = 0;
        for (auto& r : recs_)
            pending += r.in_flight.load(acq);
        if (pending == 0) break;
        if (now_us() > give_up) {
            std::fprintf(stderr,
                         "torture member %d: driver %d: %d tasks did not complete within %u ms\n",
                         int(::getpid()), id_, pending, g_member->args.drain_ms);
            stuck();
        }
        ::usleep(500);
    }
    for (auto& r : recs_) {
        EXPECT_OK(nosv_destroy(r.task, NOSV_DESTROY_NONE));
        count(Op::Destroy);
    }
}

// ---- the main thread ---------------------------------------------------

std::vector<std::string> report_pending() {
    static std::atomic<bool> once{false};
    std::vector<std::string> addresses;
    if (once.exchange(true)) return addresses;
    const Requests& rq = *g_member->req;
    for (int d = 0; d < g_member->args.threads; ++d) {
        const size_t self = size_t(g_member->args.threads * kTasksPerDriver + d);
        std::fprintf(stderr, "torture member %d: driver %d is in %s%s\n", int(::getpid()), d,
                     g_member->doing[size_t(d)].load(),
                     rq.pause[self].load() ? " (pause request pending)" : "");
    }
    for (TaskRec* r : g_member->recs) {
        // Tasks in flight, and every task of a driver still in a call.
        if (!r) continue;
        const int driver = r->index / kTasksPerDriver;
        const bool busy =
            std::strcmp(g_member->doing[size_t(driver)].load(), "(done)") != 0 &&
            std::strcmp(g_member->doing[size_t(driver)].load(), "(waiting for its tasks)") != 0;
        if (!r->in_flight.load(acq) && !busy) continue;
        const auto* s = static_cast<const Script*>(nosv_get_task_metadata(r->task));
        static const char* names[] = {"spin",  "yield", "schedpoint", "waitfor", "pause",
                                      "block", "lend",  "keep",       "event",   "waitfor-wake"};
        std::string steps;
        for (uint32_t k = 0; k < s->nsteps; ++k)
            steps +=
                std::string(" ") + names[size_t(s->steps[k])] + "/" + std::to_string(s->arg_us[k]);
        const size_t i = size_t(r->index);
        char address[32];
        std::snprintf(address, sizeof address, "%p", static_cast<void*>(r->task));
        addresses.push_back(address);
        std::fprintf(stderr,
                     "torture member %d: task %d (%s) %s: submit flags %#llx, body "
                     "running %d, steps%s; requests pending: pause %d, wake %d, event %d; last "
                     "deadline-wake result %d\n",
                     int(::getpid()), r->index, address,
                     r->in_flight.load() ? "not completed" : "completed",
                     (unsigned long long)r->last_flags, int(r->running.load()), steps.c_str(),
                     rq.pause[i].load() != nullptr, rq.wake[i].load() != nullptr,
                     rq.event[i].load() != nullptr, r->wake_rc.load());
    }
    std::fflush(stderr);
    return addresses;
}

// Resumes, wakes and releases what the tasks asked for, until every driver
// has drained; ends the drivers' lifetime at `stop_at_us`.
void serve_requests(Rng& rng, uint64_t stop_at_us) {
    Member& m = *g_member;
    Requests& rq = *m.req;
    const uint64_t give_up = stop_at_us + uint64_t(m.args.drain_ms) * 1000;
    while (m.drivers_done.load(acq) < m.args.threads) {
        if (!m.stop.load(rlx) && now_us() >= stop_at_us) {
            m.stop.store(true, rel);
            m.stats->phase.store(Phase::Draining, rlx);
        }
        if (now_us() > give_up) {
            // A driver is stuck in a call (a blocking submit, a pause).
            std::fprintf(stderr,
                         "torture member %d: %d of %d drivers did not finish within %u ms\n",
                         int(::getpid()), m.args.threads - m.drivers_done.load(), m.args.threads,
                         m.args.drain_ms);
            stuck();
        }
        for (size_t i = 0; i < rq.size; ++i) {
            if (rq.pause[i].load(rlx) && rng.one_in(2))
                if (nosv_task_t t = rq.pause[i].exchange(nullptr, acq)) {
                    EXPECT_OK(
                        nosv_submit(t, rng.one_in(2) ? NOSV_SUBMIT_NONE : NOSV_SUBMIT_UNLOCKED));
                    count(Op::Resume);
                }
            if (rq.wake[i].load(rlx) && rng.one_in(4))
                if (nosv_task_t t = rq.wake[i].exchange(nullptr, acq)) {
                    const int rc = nosv_submit(t, NOSV_SUBMIT_DEADLINE_WAKE);
                    // Too late is allowed: the wait's own deadline passed and
                    // the task is ready again (INVALID_OPERATION).
                    if (rc != NOSV_SUCCESS && rc != NOSV_ERR_INVALID_OPERATION)
                        die(kExitApiError, "nosv_submit(DEADLINE_WAKE) returned %d (%s)", rc,
                            nosv_get_error_string(rc));
                    count(rc == NOSV_SUCCESS ? Op::SubmitDeadlineWake : Op::DeadlineWakeLate);
                    if (TaskRec* r = m.recs[i]) r->wake_rc.store(rc, rlx);
                    rq.wake_done[i].store(1, rel);
                }
            if (rq.event[i].load(rlx) && rng.one_in(2))
                if (nosv_task_t t = rq.event[i].exchange(nullptr, acq)) {
                    EXPECT_OK(nosv_decrease_event_counter(t, 1));
                    count(Op::EventDecrease);
                }
        }
        ::usleep(50 + rng.below(200));
    }
}

void run_round(Rng& rng, uint32_t lifetime_ms) {
    Member& m = *g_member;
    EXPECT_OK(nosv_init());
    EXPECT_OK(nosv_init());
    count(Op::InitNested);
    count(Op::InitCycle);
    ENSURE(coexec_is_active(), "coexec_is_active() is 0 after nosv_init");
    const int ncpus = nosv_get_num_cpus();
    const int nnuma = nosv_get_num_numa_nodes();
    ENSURE(ncpus > 0 && nnuma > 0, "no CPUs (%d) or NUMA nodes (%d)", ncpus, nnuma);
    int* cpus = nosv_get_available_cpus(); // both arrays are ours to free
    int* numas = nosv_get_available_numa_nodes();
    ENSURE(cpus && numas, "no topology arrays");
    m.cpus.assign(cpus, cpus + ncpus);
    m.numas.assign(numas, numas + nnuma);
    std::free(cpus);
    std::free(numas);
    EXPECT_OK(nosv_type_init(&m.type, task_body, task_end, task_completed, "torture", &m, nullptr,
                             NOSV_TYPE_INIT_NONE));
    ENSURE(nosv_get_task_type_metadata(m.type) == &m, "nosv_get_task_type_metadata is wrong");
    m.req = std::make_unique<Requests>(size_t(m.args.threads) * (kTasksPerDriver + 1));
    m.recs.assign(m.req->size, nullptr);
    m.doing.reset(new std::atomic<const char*>[size_t(m.args.threads)]);
    for (int d = 0; d < m.args.threads; ++d)
        m.doing[size_t(d)].store("(starting)", rlx);
    m.stop.store(false, rlx);
    m.drivers_done.store(0, rlx);
    m.stats->phase.store(Phase::Running, rlx);
    const uint64_t stop_at = now_us() + uint64_t(lifetime_ms) * 1000;
    // The drivers outlive their threads: report_pending() reads their tasks.
    std::vector<std::unique_ptr<Driver>> drivers;
    std::vector<std::thread> threads;
    for (int d = 0; d < m.args.threads; ++d)
        drivers.push_back(std::make_unique<Driver>(d, rng.below(UINT32_MAX) ^ (uint64_t(d) << 32)));
    for (auto& d : drivers)
        threads.emplace_back([&d] { d->run(); });
    serve_requests(rng, stop_at);
    for (auto& t : threads)
        t.join();
    drivers.clear();
    m.recs.clear();
    m.req.reset();
    EXPECT_OK(nosv_type_destroy(m.type, NOSV_TYPE_DESTROY_NONE));
    EXPECT_OK(nosv_shutdown());
    ENSURE(coexec_is_active(), "the first of two nosv_shutdown calls left the instance");
    EXPECT_OK(nosv_shutdown());
    ENSURE(!coexec_is_active(), "the last nosv_shutdown did not leave the instance");
    EXPECT_RC(nosv_shutdown(), NOSV_ERR_NOT_INITIALIZED);
}

int sweep() {
    nosv_task_t self = nullptr;
    EXPECT_OK(nosv_init());
    EXPECT_OK(nosv_attach(&self, nullptr, "torture-sweep", NOSV_ATTACH_NONE));
    EXPECT_OK(nosv_detach(NOSV_DETACH_NONE));
    EXPECT_OK(nosv_shutdown());
    return 0;
}

} // namespace

int run_workload(const WorkloadArgs& args, MemberSlot& stats) {
    if (args.threads < 1 || args.rounds < 1) {
        std::fprintf(stderr, "torture workload: bad arguments\n");
        return kExitSetup;
    }
    static Member member; // outlives every thread that may still read it
    member.args = args;
    member.stats = &stats;
    g_member = &member;
    Rng rng(args.seed);
    for (int round = 0; round < args.rounds; ++round)
        run_round(rng, args.lifetime_ms / uint32_t(args.rounds));
    stats.phase.store(Phase::Done, rel);
    g_member = nullptr;
    return 0;
}

int run_member(const MemberArgs& args) {
    // Die with the harness: a member left behind would hold the segment.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != args.parent) return kExitSetup;
    if (args.sweep) return sweep();
    if (args.board_fd < 0 || args.slot < 0 || args.slot >= kBoardSlots) {
        std::fprintf(stderr, "torture member: bad arguments\n");
        return kExitSetup;
    }
    void* p = ::mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED, args.board_fd, 0);
    if (p == MAP_FAILED) {
        std::perror("torture member: cannot map the board");
        return kExitSetup;
    }
    ::close(args.board_fd);
    const int rc = run_workload(args.work, static_cast<Board*>(p)->slots[size_t(args.slot)]);
    ::munmap(p, sizeof(Board));
    return rc;
}

} // namespace coexec::torture
