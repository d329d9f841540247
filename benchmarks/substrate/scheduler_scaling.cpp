// coexec-bench-scheduler-scaling: what the shared scheduler's locked
// operations cost as the segment grows. It drives SharedScheduler directly,
// in this one process, on a private segment (Isolation::Process: an
// anonymous mapping nobody else can attach) formatted with a synthetic
// topology: N CPUs, one per core, spread evenly over K NUMA nodes. P members
// are registered, each with a pool thread, as Membership::enter() and
// WorkerPool::spawn() register them.
//
// For every (N, P, K) and operation it repeats the operation as the runtime
// makes it: the lock-free check the runtime makes first, a WakeList, a
// SchedulerLock around the locked calls, and the wakes flushed after the
// lock. Outside the timed part each repetition is undone, so that the next
// one starts from the same state. Repetitions alternate between timing the
// whole operation (from the lock-free check to the flushed wakes) and timing
// the lock hold (from the SchedulerLock's constructor returning to its
// destructor starting), and each row prints the medians of both and the
// ratio of the whole operation to the same operation at N=2 (same P, K=1).
//
// What the figures leave out, because it cannot be driven from outside the
// runtime here:
//   - binding: the threads have no kernel tid, so a grant makes no
//     sched_setaffinity call (ThreadBinding::bind()); the runtime makes one
//     when the grantee was last bound to another CPU;
//   - waking: a grantee announces its sleep on its word, so the granter's
//     wake is a real futex_wake, but no thread sleeps there: the kernel's
//     wake-up of a sleeping thread is not counted;
//   - the process's private ready queue (a submit's push) and the /proc
//     look-ups that find a dead member (MemberWatch::find_dead()): neither is
//     in the segment, and neither runs under the lock.
#include "stats.hpp"

#include "scheduler/demand.hpp"
#include "scheduler/invariants.hpp"
#include "scheduler/shared_scheduler.hpp"
#include "scheduler/thread_word.hpp"
#include "shm/clock.hpp"
#include "shm/liveness.hpp"
#include "shm/segment.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace {

using namespace coexec::scheduler;
using coexec::bench::summarize;
using coexec::shm::kNone;
using coexec::shm::now_ns;
namespace shm = coexec::shm;

// The shapes of the full run. N = 2 comes first: it is every other row's
// reference. N larger than shm::kMaxCpus is announced and skipped.
constexpr int kCpuCounts[] = {2, 64, 256, 1024, 4096};
constexpr int kProcCounts[] = {1, 16, 128, 512}; // 512 = shm::kMaxProcs
constexpr int kNumaCounts[] = {1, 4, 16};

#ifdef NDEBUG
constexpr bool kCheckedBuild = false;
#else
// SchedulerLock's destructor runs the invariant checker at every release.
constexpr bool kCheckedBuild = true;
#endif

// The start time a dead member is registered with, as the scheduler test
// does; with the pid of a child already reaped, the member is dead to
// /proc (process_alive()) whatever the value.
constexpr uint64_t kDeadStartTime = 12345;

struct Shape {
    int cpus;  // N
    int procs; // P
    int numa;  // K
};

// Which row is being measured, for error messages.
std::string g_row;

[[noreturn]] void fail(const std::string& what) {
    std::fprintf(stderr, "coexec-bench-scheduler-scaling: %s%s%s\n", what.c_str(),
                 g_row.empty() ? "" : " in row ", g_row.c_str());
    std::exit(1);
}

// The benchmark measures only a state it built on purpose: a set-up or an
// undo that did not do what it should ends the run.
void require(bool ok, const char* what) {
    if (!ok) fail(what);
}

// A pid that names no process: a child that has exited and been reaped.
pid_t dead_pid() {
    const pid_t child = ::fork();
    if (child < 0) fail("fork failed");
    if (child == 0) ::_exit(0);
    int status = 0;
    ::waitpid(child, &status, 0);
    return child;
}

// N CPUs with system ids 0..N-1, one per core, node i*K/N: K nodes of N/K
// CPUs each.
Discovery synthetic_topology(const Shape& shape) {
    Discovery found;
    for (int i = 0; i < shape.cpus; ++i)
        found.cpus.push_back({i, i, i * shape.numa / shape.cpus});
    found.origin = "synthetic: " + std::to_string(shape.cpus) + " CPUs on " +
                   std::to_string(shape.numa) + " NUMA nodes";
    return found;
}

// A private segment of one shape, and the runtime's moves that build a state
// on it. Every helper takes the lock for itself.
class Bench {
  public:
    Bench(const Shape& shape, pid_t dead) : shape_(shape), dead_pid_(dead) {
        shm::SegmentOptions o;
        o.isolation = shm::Isolation::Process;
        o.cpu_slots = shape.cpus;
        const Discovery found = synthetic_topology(shape);
        o.initialize = [&found](shm::Segment& s) {
            shm::SegmentConfig config{};
            config.quantum_ns = kQuantumNs;
            config.preempt_after_ns = 100'000'000;
            SharedScheduler(s).format_unpublished(found, config);
        };
        shm::SegmentError e;
        map_ = shm::SegmentMapping::open(o, e);
        if (!map_) fail("cannot map a private segment: " + e.message);
        sched_ = std::make_unique<SharedScheduler>(*map_.get());
        require(seg().header.cpu_count == shape.cpus && seg().header.numa_count == shape.numa,
                "the segment was not formatted with the synthetic topology");
    }

    static constexpr uint64_t kQuantumNs = 20'000'000; // scheduler.quantum_ns's default

    const Shape& shape() const { return shape_; }
    SharedScheduler& sched() { return *sched_; }
    shm::Segment& seg() { return *map_.get(); }
    pid_t dead_pid() const { return dead_pid_; }

    // `count` members in the order they join (the alive list's order, which
    // round-robin follows), each with one pool thread; with `last_dead`, the
    // last one is a process that has died.
    std::vector<int32_t> add_members(int count, bool last_dead = false) {
        std::vector<int32_t> members;
        for (int i = 0; i < count; ++i)
            members.push_back(add_process(!(last_dead && i == count - 1)));
        return members;
    }

    // A member (this process's pid and start time, or the dead pid), with
    // one pool thread, as a process's entry and first worker make it.
    int32_t add_process(bool alive) {
        const pid_t pid = alive ? ::getpid() : dead_pid_;
        const uint64_t start = alive ? shm::process_start_time(pid) : kDeadStartTime;
        int32_t p;
        WakeList wakes;
        {
            SchedulerLock lock(*sched_, wakes);
            p = sched_->procs().register_process(pid, start, alive ? "member" : "dead");
        }
        require(p != kNone, "register_process found the process table full");
        add_pool_thread(p);
        return p;
    }

    // One more pool thread of `proc` (WorkerPool::spawn()).
    int32_t add_pool_thread(int32_t proc) {
        WakeList wakes;
        SchedulerLock lock(*sched_, wakes);
        const int32_t t =
            sched_->procs().alloc_thread(proc, 0, "worker", shm::ThreadState::Blocked);
        require(t != kNone, "alloc_thread found the thread table full");
        sched_->procs().pool_push(t);
        return t;
    }

    // The pool thread of `proc` that a grant would take next.
    int32_t next_pool_thread(int32_t proc) { return seg().procs[proc].pool_head; }

    // `proc`'s next pool thread claims `cpu`, Free, and takes the grant as
    // the woken thread would. Returns the thread.
    int32_t hold_cpu(int32_t proc, int32_t cpu) {
        const int32_t t = next_pool_thread(proc);
        {
            WakeList wakes;
            SchedulerLock lock(*sched_, wakes);
            require(sched_->policy().claim_unheld_cpu(proc, {Placement::Kind::Cpu, cpu, true},
                                                      wakes) == cpu,
                    "a pool thread could not claim a Free CPU");
        }
        require(owner(cpu) == t && sched_->cpus().take_grant(t) == cpu,
                "a claimed CPU went to another thread");
        return t;
    }

    // Counts `delta` items of ready work of `proc`, runnable anywhere, as
    // its queue does (scheduler::Demand).
    void add_ready(int32_t proc, int delta) { Demand(seg(), proc).add({}, delta); }

    // `thread` announces a sleep on its word, as a waiting thread does
    // before FUTEX_WAIT (ProcessTable::wait_word()): a move of the word then
    // asks for a futex_wake.
    void sleep_on_word(int32_t thread) {
        std::atomic<uint32_t>& word = seg().threads[thread].word;
        uint32_t expected;
        require(ThreadWord::announce_sleep(word, word.load(), expected),
                "a thread could not announce its sleep");
    }

    int32_t owner(int32_t cpu) { return seg().cpus[cpu].owner_thread.load(); }
    shm::CpuState state(int32_t cpu) { return seg().cpus[cpu].state.load(); }

    // Every violated invariant of the segment, read under the lock.
    std::vector<std::string> violations() {
        WakeList wakes;
        SchedulerLock lock(*sched_, wakes, SchedulerLock::Check::No);
        return check_invariants(seg());
    }

  private:
    Shape shape_;
    pid_t dead_pid_;
    shm::SegmentMapping map_;
    std::unique_ptr<SharedScheduler> sched_;
};

// ---- the operations ---------------------------------------------------

// One operation as the runtime makes it. set_up() builds the state each
// repetition starts from; before_lock() and locked() are timed; restore()
// checks what the operation did and undoes it, untimed.
class Operation {
  public:
    virtual ~Operation() = default;
    virtual const char* name() const = 0;
    // Why the operation cannot be made faithfully in `shape`, or nullptr.
    virtual const char* not_possible(const Shape&) const { return nullptr; }
    virtual void set_up(Bench& b) = 0;
    // The runtime's lock-free check before it takes the lock: whether it
    // goes on to take it (it must, in every state set up here).
    virtual bool before_lock(Bench&) { return true; }
    virtual void locked(Bench& b, WakeList& wakes) COEXEC_REQUIRES(segment_lock) = 0;
    virtual void restore(Bench& b) = 0;
};

// 1. A submit finds a Free CPU. make_ready() has counted A's work in its
// ready counters; kick() (core/tasks/ready_work.cpp) reads wakeable_cpus
// without the lock and, as one is Free, takes the lock and calls
// claim_unheld_cpu(), which grants a Free CPU to A's pool thread. Every CPU
// is Free at the start of each repetition (an otherwise idle machine): the
// claim scans every CPU slot and grants CPU 0.
class Grant : public Operation {
  public:
    const char* name() const override { return "grant"; }
    void set_up(Bench& b) override {
        a_ = b.add_members(b.shape().procs).front();
        thread_ = b.next_pool_thread(a_);
        b.add_ready(a_, 1);
        b.sleep_on_word(thread_); // a pool thread sleeps until it is granted a CPU
    }
    bool before_lock(Bench& b) override {
        return b.seg().header.wakeable_cpus.load(std::memory_order_seq_cst) != 0;
    }
    void locked(Bench& b, WakeList& wakes) COEXEC_REQUIRES(segment_lock) override {
        got_ = b.sched().policy().claim_unheld_cpu(a_, {}, wakes);
    }
    void restore(Bench& b) override {
        require(got_ != kNone && b.owner(got_) == thread_ &&
                    b.sched().cpus().take_grant(thread_) == got_,
                "claim_unheld_cpu did not grant a Free CPU to the pool thread");
        // The worker finds nothing to run, frees the CPU and goes back to its
        // pool (go_unheld(), WorkerPool::return_to_pool()).
        {
            WakeList wakes;
            SchedulerLock lock(b.sched(), wakes);
            b.sched().policy().release(got_, wakes);
            b.sched().procs().pool_push(thread_);
        }
        b.sleep_on_word(thread_);
    }

  private:
    int32_t a_ = kNone, thread_ = kNone, got_ = kNone;
};

// 2. A holder that blocks with nothing else to run frees its CPU:
// CpuHandover::go_unheld() (core/cpu/cpu_handover.cpp) takes the lock and
// calls Policy::release(), which frees the CPU and offers it at once to work
// queued meanwhile (offer()). No member has ready work, so the offer walks
// the whole alive list and the CPU stays Free.
class Release : public Operation {
  public:
    const char* name() const override { return "release"; }
    void set_up(Bench& b) override {
        a_ = b.add_members(b.shape().procs).front();
        thread_ = b.hold_cpu(a_, 0);
    }
    void locked(Bench& b, WakeList& wakes) COEXEC_REQUIRES(segment_lock) override {
        taker_ = b.sched().policy().release(0, wakes);
    }
    void restore(Bench& b) override {
        require(taker_ == kNone && b.state(0) == shm::CpuState::Free,
                "release() did not leave the CPU Free");
        // The thread goes back to the pool and claims the CPU again.
        {
            WakeList wakes;
            SchedulerLock lock(b.sched(), wakes);
            b.sched().procs().pool_push(thread_);
        }
        require(b.hold_cpu(a_, 0) == thread_, "the holder did not get its CPU back");
    }

  private:
    int32_t a_ = kNone, thread_ = kNone, taker_ = kNone;
};

// 3. A cross-process hand-off. A holds CPU 0 and has more work, but its
// quantum was spent two quanta ago; B has work and runs on no CPU, so it is
// short of CPUs and need not wait for A's share turn (docs/design.md, "Share
// turns"). At its scheduling point A's thread calls leave_cpu()
// (core/cpu/cpu_handover.cpp): foreign_work() without the lock (a walk of
// the alive list), then decide() under it, whose next_turn() walks the alive
// list from A, the CPU's turn holder, and grants the CPU to B's pool thread.
// B is the member that joined last and the others have no work, so both
// walks pass every member: the farthest B can be in round-robin order.
class Handoff : public Operation {
  public:
    const char* name() const override { return "handoff"; }
    const char* not_possible(const Shape& shape) const override {
        return shape.procs < 2 ? "a hand-off needs a second process" : nullptr;
    }
    void set_up(Bench& b) override {
        const auto members = b.add_members(b.shape().procs);
        a_ = members.front();
        b_ = members.back();
        holder_ = b.hold_cpu(a_, 0);
        taker_ = b.next_pool_thread(b_);
        b.add_ready(a_, 1);
        b.add_ready(b_, 1);
        b.sleep_on_word(taker_);
        spend_quantum(b);
    }
    bool before_lock(Bench& b) override { return b.sched().policy().foreign_work(a_, 0); }
    void locked(Bench& b, WakeList& wakes) COEXEC_REQUIRES(segment_lock) override {
        next_ = b.sched().policy().decide(0, a_, false, wakes);
    }
    void restore(Bench& b) override {
        require(next_ == Policy::Next::Other && b.owner(0) == taker_ &&
                    b.sched().cpus().take_grant(taker_) == 0,
                "decide() did not hand the CPU to the other process");
        // Back to A: its thread returns to the pool, B's thread frees the
        // CPU, whose offer goes to A (first after B in round-robin order),
        // and B's thread returns to the pool.
        int32_t back;
        {
            WakeList wakes;
            SchedulerLock lock(b.sched(), wakes);
            b.sched().procs().pool_push(holder_);
            back = b.sched().policy().release(0, wakes);
            b.sched().procs().pool_push(taker_);
        }
        require(back == holder_ && b.sched().cpus().take_grant(holder_) == 0,
                "the CPU did not go back to the first process");
        b.sleep_on_word(taker_);
        spend_quantum(b);
    }

  private:
    // A's turn on CPU 0 began two quanta ago: its quantum is spent, its
    // share turn (8 quanta) is not.
    static void spend_quantum(Bench& b) {
        b.seg().cpus[0].turn_start_ns.store(now_ns() - 2 * Bench::kQuantumNs);
    }

    int32_t a_ = kNone, b_ = kNone, holder_ = kNone, taker_ = kNone;
    Policy::Next next_ = Policy::Next::None;
};

// 4. A submit while the process's own worker sleeps holding a CPU (it found
// no work: IdlePolicy::sleep_holding() made the CPU Sleeping, and the worker
// sleeps on its word). make_ready() counts the work (Demand::add; the push
// onto the process's private ready queue is not in the segment and is left
// out), then kick() reads wakeable_cpus, takes the lock and calls
// claim_unheld_cpu(), which prefers the process's own idle holder: the CPU
// is Running again for the same thread, which is woken after the lock. The
// other CPUs are Free, so the claim still scans every CPU slot.
class SubmitWake : public Operation {
  public:
    const char* name() const override { return "submit-wake"; }
    void set_up(Bench& b) override {
        a_ = b.add_members(b.shape().procs).front();
        thread_ = b.hold_cpu(a_, 0);
        go_to_sleep(b);
    }
    bool before_lock(Bench& b) override {
        b.add_ready(a_, 1);
        return b.seg().header.wakeable_cpus.load(std::memory_order_seq_cst) != 0;
    }
    void locked(Bench& b, WakeList& wakes) COEXEC_REQUIRES(segment_lock) override {
        got_ = b.sched().policy().claim_unheld_cpu(a_, {}, wakes);
    }
    void restore(Bench& b) override {
        require(got_ == 0 && b.owner(0) == thread_ && b.state(0) == shm::CpuState::Running &&
                    b.sched().cpus().take_grant(thread_) == 0,
                "the submit did not wake the process's sleeping holder");
        b.add_ready(a_, -1); // the worker pops the task
        go_to_sleep(b);
    }

  private:
    // The worker has no work: its CPU goes Sleeping, and it sleeps on its word.
    void go_to_sleep(Bench& b) {
        int32_t taker;
        {
            WakeList wakes;
            SchedulerLock lock(b.sched(), wakes);
            taker = b.sched().policy().hold_idle(0, /*sleeping=*/true, wakes);
        }
        require(taker == kNone && b.state(0) == shm::CpuState::Sleeping,
                "the holder could not sleep holding its CPU");
        b.sleep_on_word(thread_);
    }

    int32_t a_ = kNone, thread_ = kNone, got_ = kNone;
};

// 5. A member died holding CPU 0, and another member's monitor found it
// (MemberWatch::find_dead(), which reads /proc without the lock: called once
// in set_up(), not timed). Runtime::monitor_main() (core/runtime/runtime.cpp)
// then takes the lock and calls SharedScheduler::reap() and
// Policy::distribute_free(); the monitor's own claim (when its process wants
// a CPU) is left out. reap() frees the dead member's CPUs, threads and slot
// and offers every Free CPU to the members' work (unregister()); the monitor
// offers every Free CPU once more. A, the first member, has ready work and
// one pool thread: the dead member's CPU goes to it, and every other Free CPU
// is offered in vain, each offer walking the alive list (with P = 1 the dead
// member is the only one, and the offers find nobody). With `busy`, the
// other CPUs are Running, held by the live members in turn (a loaded
// machine); otherwise they are Free (an idle one).
class Reap : public Operation {
  public:
    explicit Reap(bool busy) : busy_(busy) {}
    const char* name() const override { return busy_ ? "reap-busy" : "reap"; }
    const char* not_possible(const Shape& shape) const override {
        return busy_ && shape.procs < 2 ? "no live member to hold the other CPUs" : nullptr;
    }
    void set_up(Bench& b) override {
        const auto members = b.add_members(b.shape().procs, /*last_dead=*/true);
        dead_ = members.back();
        live_.assign(members.begin(), members.end() - 1);
        if (!live_.empty()) {
            taker_ = b.next_pool_thread(live_.front());
            b.add_ready(live_.front(), 1);
            b.sleep_on_word(taker_);
        }
        if (busy_)
            for (int32_t c = 1; c < b.shape().cpus; ++c) {
                const int32_t p = live_[size_t(c - 1) % live_.size()];
                b.add_pool_thread(p);
                b.hold_cpu(p, c);
            }
        b.hold_cpu(dead_, 0);
        found_ = b.sched().watch().find_dead(now_ns(), 0);
        require(found_.size() == 1 && found_.front().proc == dead_,
                "find_dead() did not name exactly the dead member");
    }
    void locked(Bench& b, WakeList& wakes) COEXEC_REQUIRES(segment_lock) override {
        reaped_ = b.sched().reap(found_, wakes);
        b.sched().policy().distribute_free(wakes);
    }
    void restore(Bench& b) override {
        require(reaped_, "reap() freed nobody");
        if (!live_.empty()) {
            require(b.owner(0) == taker_ && b.sched().cpus().take_grant(taker_) == 0,
                    "the dead member's CPU did not go to the waiting work");
        }
        // The taker frees the CPU and goes back to its pool, and the dead
        // member joins again (in the slot it had, last in the alive list) and
        // takes CPU 0.
        int32_t again;
        {
            WakeList wakes;
            SchedulerLock lock(b.sched(), wakes);
            if (!live_.empty()) {
                b.sched().policy().release(0, wakes);
                b.sched().procs().pool_push(taker_);
            }
            again = b.sched().procs().register_process(b.dead_pid(), kDeadStartTime, "dead");
        }
        require(again == dead_, "the dead member did not get its slot back");
        b.add_pool_thread(dead_);
        b.hold_cpu(dead_, 0);
        if (!live_.empty()) b.sleep_on_word(taker_);
    }

  private:
    bool busy_;
    int32_t dead_ = kNone, taker_ = kNone;
    std::vector<int32_t> live_;
    DeadMembers found_;
    bool reaped_ = false;
};

// 6. The invariant checker over the whole segment, under the lock, as
// `coexec check` and an entering member (Membership::enter(), one per
// second) run it. Every CPU is Running, CPU c held by member c mod P, and
// each member keeps a pool thread: a loaded segment, where the checker has
// every CPU's holder to verify.
class Check : public Operation {
  public:
    const char* name() const override { return "check"; }
    void set_up(Bench& b) override {
        const auto members = b.add_members(b.shape().procs);
        for (int32_t c = 0; c < b.shape().cpus; ++c) {
            const int32_t p = members[size_t(c) % members.size()];
            b.add_pool_thread(p);
            b.hold_cpu(p, c);
        }
    }
    void locked(Bench& b, WakeList&) COEXEC_REQUIRES(segment_lock) override {
        found_ = check_invariants(b.seg()).size();
    }
    void restore(Bench&) override { require(found_ == 0, "the checker found violations"); }

  private:
    size_t found_ = 0;
};

std::vector<std::unique_ptr<Operation>> all_operations() {
    std::vector<std::unique_ptr<Operation>> ops;
    ops.push_back(std::make_unique<Grant>());
    ops.push_back(std::make_unique<Release>());
    ops.push_back(std::make_unique<Handoff>());
    ops.push_back(std::make_unique<SubmitWake>());
    ops.push_back(std::make_unique<Reap>(false));
    ops.push_back(std::make_unique<Reap>(true));
    ops.push_back(std::make_unique<Check>());
    return ops;
}

// ---- measuring --------------------------------------------------------

struct Budget {
    int reps = 2000;          // at most this many repetitions per row
    int min_reps = 60;        // at least this many, whatever the time
    uint64_t ns = 50'000'000; // stop after this long (set-up excluded)
    int warmup = 8;           // untimed repetitions first
};

struct Figures {
    double op_ns = 0;   // median, whole operation
    double hold_ns = 0; // median, lock held
    size_t samples = 0; // of each
};

// Repeats `op` on a fresh segment of `shape`.
Figures measure(Operation& op, const Shape& shape, pid_t dead, const Budget& budget) {
    Bench b(shape, dead);
    op.set_up(b);
    if (const auto v = b.violations(); !v.empty()) fail("set-up broke an invariant: " + v.front());
    std::vector<double> whole, hold;
    const uint64_t start = now_ns();
    for (int rep = 0; rep < budget.warmup + budget.reps; ++rep) {
        const int counted = rep - budget.warmup;
        if (counted >= budget.min_reps && now_ns() - start >= budget.ns) break;
        const bool time_hold = rep % 2 == 1;
        const uint64_t t0 = now_ns();
        uint64_t t1 = 0, t2 = 0;
        // As a runtime call site: the lock-free check, a WakeList of its
        // own, the locked section, the wakes after the lock.
        require(op.before_lock(b), "the runtime would not take the lock in this state");
        WakeList wakes;
        {
            SchedulerLock lock(b.sched(), wakes);
            if (time_hold) t1 = now_ns();
            op.locked(b, wakes);
            if (time_hold) t2 = now_ns();
        }
        wakes.flush(b.seg());
        const uint64_t t3 = now_ns();
        if (counted >= 0) {
            if (time_hold)
                hold.push_back(double(t2 - t1));
            else
                whole.push_back(double(t3 - t0));
        }
        op.restore(b);
    }
    if (const auto v = b.violations(); !v.empty())
        fail("the repetitions broke an invariant: " + v.front());
    return {summarize(whole).median, summarize(hold).median, std::min(whole.size(), hold.size())};
}

// What one now_ns() costs: every figure includes about one. The median of
// batches, so that a batch the machine interrupted does not count.
double clock_read_ns() {
    constexpr int kBatches = 21, kReads = 1000;
    std::vector<double> per_read;
    for (int b = 0; b < kBatches; ++b) {
        const uint64_t t0 = now_ns();
        uint64_t last = t0;
        for (int i = 0; i < kReads; ++i)
            last = now_ns();
        per_read.push_back(double(last - t0) / kReads);
    }
    return summarize(per_read).median;
}

// What creating a segment for N CPU slots costs, as the first process to
// enter creates one: a named segment in /dev/shm, opened with an
// initializer that lays out the CPU table (SegmentMapping::open()), then
// its name removed again. Its size, the memory the creation allocated
// (st_blocks: tmpfs allocates a page when it is first written), and the
// median time of the open over `reps` creations, with min and max.
struct Creation {
    size_t bytes = 0;
    size_t allocated = 0;
    coexec::bench::Summary ns;
};

Creation measure_creation(int n, int reps) {
    const Discovery found = synthetic_topology({n, 1, 1});
    shm::SegmentOptions o;
    o.name = "bench-create." + std::to_string(::getpid());
    o.cpu_slots = n;
    o.initialize = [&found](shm::Segment& s) {
        shm::SegmentConfig config{};
        config.quantum_ns = Bench::kQuantumNs;
        SharedScheduler(s).format_unpublished(found, config);
    };
    const std::string path = "/dev/shm" + shm::segment_shm_name(o);
    Creation c;
    std::vector<double> ns;
    for (int i = 0; i < reps; ++i) {
        shm::SegmentError e;
        const uint64_t start = now_ns();
        shm::SegmentMapping m = shm::SegmentMapping::open(o, e);
        const uint64_t end = now_ns();
        if (!m) fail("cannot create segment " + path + ": " + e.message);
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) fail("cannot stat " + path);
        c.bytes = size_t(st.st_size);
        c.allocated = size_t(st.st_blocks) * 512;
        if (!m.remove_if_last()) fail("cannot remove " + path);
        ns.push_back(double(end - start));
    }
    c.ns = summarize(ns);
    return c;
}

void print_creation(const std::vector<int>& cpu_counts, int reps) {
    std::printf("\nsegment creation (named, in /dev/shm, CPU table laid out; %d creations each, "
                "median [min-max])\n",
                reps);
    std::printf("%5s %12s %12s %24s\n", "N", "size KiB", "alloc KiB", "create us");
    for (int n : cpu_counts) {
        if (n > shm::kMaxCpus) continue;
        const Creation c = measure_creation(n, reps);
        char us[64];
        std::snprintf(us, sizeof us, "%.0f [%.0f-%.0f]", c.ns.median / 1e3, c.ns.min / 1e3,
                      c.ns.max / 1e3);
        std::printf("%5d %12zu %12zu %24s\n", n, c.bytes / 1024, c.allocated / 1024, us);
    }
    std::printf("\n");
}

struct Options {
    bool quick = false;
    Budget budget;
};

Options parse(int argc, char** argv) {
    Options o;
    int budget_ms = 50;
    CLI::App app{"The cost of the shared scheduler's locked operations (grant, release, "
                 "cross-process hand-off, submit with a wake, reap, the invariant check) for N "
                 "CPUs, P processes and K NUMA nodes, on a private segment in this one process. "
                 "One row per (N, P, K, operation): median ns per operation, median ns of lock "
                 "hold, and the ratio to the same operation at N=2.",
                 "coexec-bench-scheduler-scaling"};
    app.add_flag("--quick", o.quick,
                 "A small subset (N in {2, 64}, P in {1, 16}, K = 1) with a 10 ms budget per row");
    app.add_option("-r,--reps", o.budget.reps, "Most repetitions per row (half time the lock hold)")
        ->check(CLI::Range(2, 1'000'000))
        ->capture_default_str();
    app.add_option("--budget-ms", budget_ms,
                   "Time per row after which repetitions stop (at least 60 run); 10 with --quick")
        ->check(CLI::Range(1, 60'000))
        ->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        std::exit(rc == 0 ? 0 : 2);
    }
    if (o.quick && app.count("--budget-ms") == 0) budget_ms = 10;
    o.budget.ns = uint64_t(budget_ms) * 1'000'000;
    o.budget.min_reps = std::min(o.budget.min_reps, o.budget.reps);
    return o;
}

} // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    const pid_t dead = dead_pid();

    std::vector<int> cpu_counts, proc_counts, numa_counts;
    if (o.quick) {
        cpu_counts = {2, 64};
        proc_counts = {1, 16};
        numa_counts = {1};
    } else {
        cpu_counts.assign(std::begin(kCpuCounts), std::end(kCpuCounts));
        proc_counts.assign(std::begin(kProcCounts), std::end(kProcCounts));
        numa_counts.assign(std::begin(kNumaCounts), std::end(kNumaCounts));
    }

    std::printf("coexec-bench-scheduler-scaling: the shared scheduler driven directly, on a "
                "private segment, in one process\n");
    std::printf("build: %s\n",
                kCheckedBuild ? "without NDEBUG: every lock release runs the invariant checker, "
                                "and ns/op includes it"
                              : "NDEBUG (no invariant check at lock release, as in the default "
                                "build)");
    std::printf("clock: one now_ns() costs %.0f ns; every figure includes about one\n",
                clock_read_ns());
    std::printf("repetitions: %d warm-up, then up to %d or %.0f ms per row (at least %d), "
                "alternately timing the whole operation and the lock hold: `samples` of each; "
                "medians\n",
                o.budget.warmup, o.budget.reps, double(o.budget.ns) / 1e6, o.budget.min_reps);
    std::printf("left out: the grantee's sched_setaffinity (no kernel tid), the kernel's wake-up "
                "of a sleeper (futex_wake finds none), /proc look-ups (reap)\n");
    for (int n : cpu_counts)
        if (n > shm::kMaxCpus)
            std::printf("N=%d: NOT RUN: a segment has room for at most shm::kMaxCpus = %d CPU "
                        "slots\n",
                        n, shm::kMaxCpus);
    print_creation(cpu_counts, o.quick ? 5 : 31);
    std::printf("%5s %4s %3s  %-12s %10s %10s %8s %8s\n", "N", "P", "K", "operation", "ns/op",
                "hold ns", "x N=2", "samples");

    auto ops = all_operations();
    std::map<std::pair<int, std::string>, double> at_two; // (P, op) -> ns/op at N=2
    for (int n : cpu_counts) {
        if (n > shm::kMaxCpus) continue;
        for (int k : numa_counts) {
            if (k > n || k > shm::kMaxNuma) continue;
            for (int p : proc_counts) {
                if (p > shm::kMaxProcs) continue;
                const Shape shape{n, p, k};
                for (auto& op : ops) {
                    std::printf("%5d %4d %3d  %-12s ", n, p, k, op->name());
                    if (const char* why = op->not_possible(shape)) {
                        std::printf("n/a: %s\n", why);
                        continue;
                    }
                    std::fflush(stdout);
                    g_row = "N=" + std::to_string(n) + " P=" + std::to_string(p) +
                            " K=" + std::to_string(k) + " " + op->name();
                    const Figures f = measure(*op, shape, dead, o.budget);
                    g_row.clear();
                    const auto key = std::make_pair(p, std::string(op->name()));
                    if (n == 2) at_two[key] = f.op_ns;
                    const auto ref = at_two.find(key);
                    char ratio[16] = "-";
                    if (ref != at_two.end() && ref->second > 0)
                        std::snprintf(ratio, sizeof ratio, "%.2f", f.op_ns / ref->second);
                    std::printf("%10.0f %10.0f %8s %8zu\n", f.op_ns, f.hold_ns, ratio, f.samples);
                }
            }
        }
    }
    return 0;
}
