// The shared policy on a private segment: registration, grants, round-robin
// by quantum, idle CPUs, reaping of dead processes and repair.
#include "support.hpp"

#include "scheduler/cpu_bits.hpp"
#include "scheduler/holder_liveness.hpp"
#include "scheduler/invariants.hpp"
#include "scheduler/shared_scheduler.hpp"
#include "scheduler/thread_word.hpp"
#include "shm/clock.hpp"
#include "shm/liveness.hpp"

#include <atomic>
#include <thread>
#include <tuple>

using namespace coexec;
using namespace coexec::scheduler;
using namespace coexec::shm;

namespace {

class SchedulerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        SegmentOptions o;
        o.isolation = Isolation::Process;
        o.cpu_slots = 2;
        o.initialize = [](Segment& s) {
            SegmentConfig config{};
            config.quantum_ns = 1'000'000'000; // long: tests drive time explicitly
            Discovery two;
            two.cpus = {{0, 0, 0}, {1, 1, 0}};
            SharedScheduler(s).format_unpublished(two, config);
        };
        SegmentError e;
        map_ = SegmentMapping::open(o, e);
        ASSERT_TRUE(map_) << e.message;
        sched_ = std::make_unique<SharedScheduler>(*map_.get());
    }

    // A registered process with one pool thread; `alive` picks a real pid.
    int32_t add_process(bool alive = true) {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        pid_t pid = alive ? ::getpid() : dead_pid();
        uint64_t start = alive ? process_start_time(pid) : 12345;
        int32_t p = sched_->procs().register_process(pid, start, "test");
        int32_t t = sched_->procs().alloc_thread(p, 0, "worker", ThreadState::Blocked);
        sched_->procs().pool_push(t);
        return p;
    }
    static pid_t dead_pid() {
        pid_t child = test::fork_child([] { return 0; });
        test::wait_child(child);
        return child;
    }
    // Processes A and B running on CPU 0 and CPU 1, B with a spare pool
    // thread to take a second CPU; returns {A, B, A's thread on CPU 0}.
    std::tuple<int32_t, int32_t, int32_t> one_cpu_each() {
        const int32_t a = add_process(), b = add_process();
        add_pool_thread(b);
        const int32_t on_cpu0 = grant_cpu(a, 0);
        grant_cpu(b, 1);
        return {a, b, on_cpu0};
    }
    // Another pool thread for process `p`.
    void add_pool_thread(int32_t p) {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        sched_->procs().pool_push(
            sched_->procs().alloc_thread(p, 0, "worker", ThreadState::Blocked));
    }
    // Locked: a thread of `p` waiting for a CPU for its own task, queued as
    // p's only ready item and opened to a direct grant of `cpu` (kNone: any).
    int32_t open_receiver(int32_t p, int32_t cpu) COEXEC_REQUIRES(scheduler::segment_lock) {
        const int32_t t = sched_->procs().alloc_thread(p, 0, "attached", ThreadState::Waiting);
        add_ready(p);
        sched_->procs().open_receiver(p, t, cpu);
        return t;
    }
    void add_ready(int32_t p, int n = 1) {
        map_->procs[p].ready_total += n;
        map_->procs[p].ready_any += n;
    }
    Segment& seg() { return *map_.get(); }
    // A process dies holding the segment lock; the next lock repairs.
    void kill_a_lock_holder() {
        pid_t child = test::fork_child([&] {
            pthread_mutex_lock(&seg().header.lock);
            ::raise(SIGKILL);
            return 0;
        });
        ASSERT_EQ(test::wait_child(child), 128 + SIGKILL);
    }
    // Process `p`'s only pool thread, granted CPU `c` under the lock.
    int32_t grant_cpu(int32_t p, int32_t c) {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        EXPECT_EQ(sched_->policy().claim_unheld_cpu(p, {Placement::Kind::Cpu, c, true}, w), c);
        const int32_t t = seg().cpus[c].owner_thread.load();
        sched_->cpus().take_grant(t);
        return t;
    }

    SegmentMapping map_;
    std::unique_ptr<SharedScheduler> sched_;
};

} // namespace

TEST_F(SchedulerTest, ClaimGivesAFreeCpuToAPoolThread) {
    int32_t p = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    int32_t c = sched_->policy().claim_unheld_cpu(p, {}, w);
    ASSERT_NE(c, kNone);
    EXPECT_EQ(seg().cpus[c].state.load(), CpuState::Running);
    EXPECT_EQ(seg().cpus[c].owner_proc.load(), p);
    int32_t t = seg().cpus[c].owner_thread.load();
    EXPECT_EQ(seg().threads[t].grant.load(), c);
    EXPECT_EQ(seg().header.unheld_cpus.load(), 1);
    // The pool is empty now: nothing else can be claimed.
    EXPECT_EQ(sched_->policy().claim_unheld_cpu(p, {}, w), kNone);
}

// Free CPUs go to members with work for them and a pool thread to run it:
// not to one without work, nor to one with work but no pool thread, nor to
// one whose work is bound to another CPU; a member whose pool emptied takes
// no more.
TEST_F(SchedulerTest, FreeCpusGoOnlyToMembersThatCanRunWorkOnThem) {
    const int32_t idle = add_process();     // a pool thread, no work
    const int32_t taker = add_process();    // work for any CPU, one pool thread
    const int32_t bound = add_process();    // work for CPU 1 only
    const int32_t poolless = add_process(); // work, no pool thread left
    add_ready(taker, 2);
    seg().procs[bound].ready_total += 1;
    shm::ready_cpu_row(seg(), bound)[1] += 1;
    add_ready(poolless, 1);
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    const int32_t t = sched_->procs().pool_pop(poolless);
    ASSERT_NE(t, kNone);
    sched_->policy().distribute_free(w);
    EXPECT_EQ(seg().cpus[0].owner_proc.load(), taker);
    EXPECT_EQ(seg().cpus[1].owner_proc.load(), bound);
    EXPECT_EQ(seg().procs[idle].running_cpus.load(), 0);
    EXPECT_EQ(seg().procs[poolless].running_cpus.load(), 0);
    // No member can take a CPU that comes free now: it stays Free.
    seg().procs[bound].ready_total -= 1;
    shm::ready_cpu_row(seg(), bound)[1] -= 1;
    sched_->policy().release(1, w);
    sched_->policy().distribute_free(w);
    EXPECT_EQ(seg().cpus[1].state.load(), CpuState::Free);
    sched_->procs().pool_push(t);
}

TEST_F(SchedulerTest, StrictPlacementOnlyClaimsItsCpu) {
    int32_t p = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    EXPECT_EQ(sched_->policy().claim_unheld_cpu(p, {Placement::Kind::Cpu, 1, true}, w), 1);
}

TEST_F(SchedulerTest, RoundRobinByQuantumBetweenProcesses) {
    int32_t a = add_process(), b = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    ASSERT_EQ(sched_->policy().claim_unheld_cpu(a, {Placement::Kind::Cpu, 0, true}, w), 0);
    add_ready(a);
    add_ready(b);
    // A's turn on CPU 0 has just begun: A keeps it.
    EXPECT_EQ(sched_->policy().decide(0, a, false, w), Policy::Next::Own);
    // Once A's quantum is spent, B (with work and a pool thread) gets it.
    seg().cpus[0].turn_start_ns.store(now_ns() - 2'000'000'000ULL);
    EXPECT_EQ(sched_->policy().decide(0, a, false, w), Policy::Next::Other);
    EXPECT_EQ(seg().cpus[0].owner_proc.load(), b);
    EXPECT_EQ(seg().cpus[0].turn_proc.load(), b);
}

// A thread of B waits for CPU 0 for its own task, B's only ready item.
TEST_F(SchedulerTest, ACpuGivenToAProcessGoesStraightToItsOpenReceiver) {
    int32_t a = add_process(), b = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    ASSERT_EQ(sched_->policy().claim_unheld_cpu(a, {Placement::Kind::Cpu, 0, true}, w), 0);
    const int32_t waiter = open_receiver(b, 0);
    seg().cpus[0].turn_start_ns.store(now_ns() - 2'000'000'000ULL); // A's quantum is spent
    EXPECT_EQ(sched_->policy().decide(0, a, false, w), Policy::Next::Other);
    EXPECT_EQ(seg().cpus[0].owner_thread.load(), waiter); // not B's pool thread
    EXPECT_EQ(seg().threads[waiter].grant.load(), 0);
    EXPECT_EQ(seg().procs[b].pool_size.load(), 1);
    EXPECT_EQ(seg().procs[b].receiver.load(), kNone); // used up
    // The task is still queued: the thread takes it out, no popper hands it on.
    EXPECT_TRUE(sched_->procs().receive_claimed(waiter));
    EXPECT_TRUE(sched_->procs().close_receiver(waiter));  // claimed: the popper drops the task
    EXPECT_FALSE(sched_->procs().close_receiver(waiter)); // the popper closed the word first
}

TEST_F(SchedulerTest, AReceiverTakesOnlyTheCpuItsTaskAllows) {
    int32_t b = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    const int32_t waiter = open_receiver(b, 1);
    EXPECT_EQ(sched_->procs().claim_receiver(0, b), kNone);
    EXPECT_EQ(sched_->procs().claim_receiver(1, b), waiter);
    EXPECT_TRUE(sched_->procs().close_receiver(waiter)); // woke to Claimed: withdraw the task
    EXPECT_EQ(sched_->procs().claim_receiver(1, b), kNone);
}

// Something queued after the receiver's task (a preempted task, which must
// get its CPU back first) goes through the pool thread, in queue order.
TEST_F(SchedulerTest, AReceiverIsPassedOverOnceItsTaskIsNotTheOnlyReadyItem) {
    int32_t b = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    const int32_t waiter = open_receiver(b, kNone);
    add_ready(b);
    EXPECT_EQ(sched_->procs().claim_receiver(0, b), kNone);
    EXPECT_EQ(sched_->policy().claim_unheld_cpu(b, {}, w), 0); // to the pool thread
    EXPECT_NE(seg().cpus[0].owner_thread.load(), waiter);
    EXPECT_FALSE(sched_->procs().close_receiver(waiter)); // the word stayed open for the popper
}

TEST_F(SchedulerTest, APopperThatTakesTheTaskFirstClosesTheReceiver) {
    int32_t b = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    const int32_t waiter = open_receiver(b, kNone);
    EXPECT_FALSE(sched_->procs().close_receiver(waiter)); // the popper hands the thread a CPU
    EXPECT_EQ(sched_->procs().claim_receiver(0, b), kNone);
    EXPECT_FALSE(sched_->procs().close_receiver(waiter));
}

TEST_F(SchedulerTest, AYieldingHolderKeepsItsTurn) {
    int32_t a = add_process(), b = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    ASSERT_EQ(sched_->policy().claim_unheld_cpu(a, {Placement::Kind::Cpu, 0, true}, w), 0);
    add_ready(b);
    // A's task yields (it is ready, not queued): its turn is not over yet.
    EXPECT_EQ(sched_->policy().decide(0, a, true, w), Policy::Next::Own);
    EXPECT_EQ(seg().cpus[0].owner_proc.load(), a);
    // Once the quantum is spent, B gets the CPU.
    seg().cpus[0].turn_start_ns.store(now_ns() - 2'000'000'000ULL);
    EXPECT_EQ(sched_->policy().decide(0, a, true, w), Policy::Next::Other);
    EXPECT_EQ(seg().cpus[0].owner_proc.load(), b);
}

// Two processes that each run on one CPU and both have more work keep their
// CPUs through the share turn (8 quanta) instead of swapping them every
// quantum; then the turn passes as before.
TEST_F(SchedulerTest, AProcessOnAsManyCpusWaitsForTheShareTurn) {
    const auto [a, b, on_cpu0] = one_cpu_each();
    add_ready(a);
    add_ready(b);
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    const uint64_t began = now_ns() - 2'000'000'000ULL; // 2 quanta ago
    seg().cpus[0].turn_start_ns.store(began);
    EXPECT_FALSE(sched_->policy().turn_over(0, a, now_ns())); // a schedpoint need not yield
    EXPECT_EQ(sched_->policy().decide(0, a, false, w), Policy::Next::Own);
    EXPECT_EQ(seg().cpus[0].owner_proc.load(), a);
    EXPECT_EQ(seg().cpus[0].turn_start_ns.load(), began); // the share turn goes on
    seg().cpus[0].turn_start_ns.store(now_ns() - 9'000'000'000ULL);
    EXPECT_TRUE(sched_->policy().turn_over(0, a, now_ns()));
    EXPECT_EQ(sched_->policy().decide(0, a, false, w), Policy::Next::Other);
    EXPECT_EQ(seg().cpus[0].owner_proc.load(), b);
}

TEST_F(SchedulerTest, AProcessShortOfCpusGetsOneAfterAQuantum) {
    int32_t a = add_process(), b = add_process();
    add_pool_thread(a);
    grant_cpu(a, 0);
    grant_cpu(a, 1);
    add_ready(a);
    add_ready(b);
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    seg().cpus[0].turn_start_ns.store(now_ns() - 2'000'000'000ULL);
    EXPECT_TRUE(sched_->policy().turn_over(0, a, now_ns()));
    EXPECT_EQ(sched_->policy().decide(0, a, false, w), Policy::Next::Other);
    EXPECT_EQ(seg().cpus[0].owner_proc.load(), b);
}

// B's work is bound to CPU 0: the CPU B runs on does not serve it.
TEST_F(SchedulerTest, WorkBoundToTheCpuIsNotPassedOver) {
    const auto [a, b, on_cpu0] = one_cpu_each();
    add_ready(a);
    map_->procs[b].ready_total += 1;
    shm::ready_cpu_row(*map_.get(), b)[0] += 1;
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    seg().cpus[0].turn_start_ns.store(now_ns() - 2'000'000'000ULL);
    EXPECT_EQ(sched_->policy().decide(0, a, false, w), Policy::Next::Other);
    EXPECT_EQ(seg().cpus[0].owner_proc.load(), b);
}

// The safety net asks a holder to give way only once decide() would have
// passed its CPU on: after a quantum for a process short of CPUs, after the
// share turn for one that is not.
TEST_F(SchedulerTest, PreemptionWaitsForTheShareTurnOfAWaiterThatHasItsShare) {
    const auto [a, b, holder] = one_cpu_each();
    add_ready(b);
    seg().procs[a].preemptible.store(1);
    seg().header.config.preempt_after_ns = 1'000'000'000;
    const uint64_t now = now_ns();
    seg().cpus[0].turn_start_ns.store(now - 3'000'000'000ULL); // quantum + 2 s
    EXPECT_EQ(sched_->policy().overdue_holder(0, b, now), kNone);
    seg().cpus[0].turn_start_ns.store(now - 10'000'000'000ULL); // share turn + 2 s
    EXPECT_EQ(sched_->policy().overdue_holder(0, b, now), holder);
    // Once B runs on no CPU, a quantum is its wait. (As release() would
    // free CPU 1, without offering it to B's spare pool thread.)
    seg().cpus[1].state.store(CpuState::Free);
    seg().cpus[1].counted_proc = kNone;
    seg().procs[b].running_cpus.fetch_sub(1);
    seg().cpus[0].preempt_asked_ns.store(0);
    seg().cpus[0].turn_start_ns.store(now - 3'000'000'000ULL);
    EXPECT_EQ(sched_->policy().overdue_holder(0, b, now), holder);
}

TEST_F(SchedulerTest, NoWorkAnywhereMeansNone) {
    int32_t a = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    ASSERT_NE(sched_->policy().claim_unheld_cpu(a, {}, w), kNone);
    EXPECT_EQ(sched_->policy().decide(0, a, false, w), Policy::Next::None);
}

TEST_F(SchedulerTest, IdleHolderIsEvictedForAnotherProcessesWork) {
    int32_t a = add_process(), b = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    int32_t c = sched_->policy().claim_unheld_cpu(a, {Placement::Kind::Cpu, 0, true}, w);
    int32_t holder = seg().cpus[c].owner_thread.load();
    sched_->policy().hold_idle(c, false, w);
    EXPECT_EQ(seg().cpus[c].state.load(), CpuState::Idle);
    add_ready(b);
    int32_t got = sched_->policy().offer(c, w);
    ASSERT_NE(got, kNone);
    EXPECT_EQ(seg().threads[got].proc, b);
    // The old holder went back to its process's pool.
    EXPECT_EQ(seg().threads[holder].state.load(), ThreadState::Pool);
    EXPECT_EQ(seg().procs[a].pool_size.load(), 1);
}

TEST_F(SchedulerTest, DeadProcessIsReapedAndItsCpusRedistributed) {
    int32_t dead = add_process(false);
    int32_t live = add_process();
    WakeList w;
    {
        scheduler::SchedulerLock lock(*sched_, w);
        ASSERT_EQ(sched_->policy().claim_unheld_cpu(dead, {Placement::Kind::Cpu, 0, true}, w), 0);
    }
    add_ready(live);
    // Looked up without the lock; only the dead member is named.
    const auto found = sched_->watch().find_dead(now_ns(), 0);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].proc, dead);
    scheduler::SchedulerLock lock(*sched_, w);
    EXPECT_TRUE(sched_->reap(found, w));
    EXPECT_EQ(seg().procs[dead].state.load(), ProcState::Unused);
    EXPECT_EQ(seg().cpus[0].owner_proc.load(), live); // given to the live process's work
    EXPECT_EQ(seg().header.alive_count, 1);
}

TEST_F(SchedulerTest, AWaiterFindsADeadHolderOnceItFallsSilent) {
    int32_t dead = add_process(false);
    int32_t live = add_process();
    {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        ASSERT_EQ(sched_->policy().claim_unheld_cpu(dead, {Placement::Kind::Cpu, 0, true}, w), 0);
    }
    ASSERT_EQ(seg().cpus[0].state.load(), CpuState::Running);
    const uint64_t t0 = now_ns(), stale = MemberWatch::kAliveStaleNs;
    sched_->watch().beat(dead, t0);
    EXPECT_TRUE(sched_->watch().dead_holders(live, t0 + stale / 2, stale).empty()); // beat recently
    EXPECT_EQ(sched_->watch().dead_holders(live, t0 + stale, stale).size(),
              1u); // silent: /proc says dead
    EXPECT_TRUE(
        sched_->watch().dead_holders(dead, t0 + 2 * stale, stale).empty()); // never its own CPUs
}

TEST_F(SchedulerTest, ALiveHolderFoundInProcIsVouchedFor) {
    int32_t holder = add_process();
    int32_t waiter = add_process();
    {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        ASSERT_EQ(sched_->policy().claim_unheld_cpu(holder, {Placement::Kind::Cpu, 1, true}, w), 1);
    }
    const uint64_t t0 = now_ns(), stale = MemberWatch::kAliveStaleNs;
    sched_->watch().beat(holder, t0);
    EXPECT_TRUE(sched_->watch().dead_holders(waiter, t0 + stale, stale).empty());
    // Vouched for at that time: other waiters skip it for another period.
    EXPECT_EQ(seg().procs[holder].alive_ns.load(), t0 + stale);
}

// A CPU whose holder died is a violation only while another process waits
// for it, and only if it is still held after the grace period.
TEST_F(SchedulerTest, HolderCheckNamesADeadHolderThatOthersWaitFor) {
    const int32_t dead = add_process(false);
    const int32_t live = add_process();
    grant_cpu(dead, 0);
    const HolderCheckOptions quick{1'000'000};
    EXPECT_TRUE(check_holders(*sched_, quick).empty()); // nobody waits for it
    add_ready(live);
    const auto found = check_holders(*sched_, quick);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_NE(found[0].find("CPU 0 is held by thread slot"), std::string::npos) << found[0];
    EXPECT_NE(found[0].find("which is gone"), std::string::npos) << found[0];
}

// A holder asleep in the kernel past its turn while others wait is named;
// one that runs is not.
TEST_F(SchedulerTest, HolderCheckNamesAHolderAsleepInTheKernelPastItsTurn) {
    seg().header.config.quantum_ns = 1'000; // its turn is over within microseconds
    seg().header.config.preempt_after_ns = 0;
    std::atomic<pid_t> sleeper_tid{0}, spinner_tid{0};
    std::atomic<bool> stop{false};
    std::atomic<uint32_t> never{0};
    std::thread sleeper([&] {
        sleeper_tid = ::gettid();
        while (!stop.load())
            never.wait(0); // asleep in FUTEX_WAIT
    });
    std::thread spinner([&] {
        spinner_tid = ::gettid();
        while (!stop.load()) {
        }
    });
    while (sleeper_tid.load() == 0 || spinner_tid.load() == 0)
        std::this_thread::yield();
    // The sleeper is asleep in the kernel from here on (std::atomic::wait
    // may spin first, and a loaded machine may keep it runnable a while).
    while (thread_on_cpu(::getpid(), sleeper_tid.load()))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const int32_t holder = add_process(), spinning = add_process(), waiter = add_process();
    sched_->procs().set_tid(seg().procs[holder].pool_head, sleeper_tid.load());
    sched_->procs().set_tid(seg().procs[spinning].pool_head, spinner_tid.load());
    grant_cpu(holder, 0);
    grant_cpu(spinning, 1);
    add_ready(waiter);
    std::this_thread::sleep_for(std::chrono::milliseconds(2)); // past the turn
    const auto found = check_holders(*sched_, HolderCheckOptions{20'000'000});
    stop = true;
    never = 1;
    never.notify_all();
    sleeper.join();
    spinner.join();
    ASSERT_EQ(found.size(), 1u) << testing::PrintToString(found);
    EXPECT_NE(found[0].find("CPU 0 is held by thread " + std::to_string(sleeper_tid.load())),
              std::string::npos)
        << found[0];
    EXPECT_NE(found[0].find("asleep in the kernel"), std::string::npos) << found[0];
}

TEST_F(SchedulerTest, RepairRebuildsListsAfterADeadLockHolder) {
    int32_t a = add_process();
    int32_t freed;
    {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        freed = sched_->procs().alloc_thread(a, 0, "worker", ThreadState::Blocked);
        sched_->release_thread(freed, w);
    }
    // Corrupt the derived state as a half-done update would.
    seg().procs[a].pool_head = kNone;
    seg().procs[a].pool_size.store(0);
    seg().header.thread_free_head = kNone;
    seg().header.unheld_cpus.store(-3);
    kill_a_lock_holder();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w); // EOWNERDEAD: repair runs
    EXPECT_EQ(seg().header.recoveries.load(), 1u);
    EXPECT_EQ(seg().procs[a].pool_size.load(), 1);
    EXPECT_EQ(seg().header.thread_free_head, freed);
    EXPECT_EQ(seg().header.unheld_cpus.load(), 2);
}

// Share turns ask how many CPUs a process runs at every schedpoint: a count
// kept with each CPU's state, not a scan of the CPUs.
TEST_F(SchedulerTest, EachProcessCountsTheCpusItRuns) {
    const int32_t a = add_process(), b = add_process();
    grant_cpu(a, 0);
    grant_cpu(b, 1);
    EXPECT_EQ(seg().procs[a].running_cpus.load(), 1);
    EXPECT_EQ(seg().procs[b].running_cpus.load(), 1);
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    sched_->policy().hold_idle(0, /*sleeping=*/false, w); // held, but not Running
    EXPECT_EQ(seg().procs[a].running_cpus.load(), 0);
    sched_->policy().release(1, w);
    EXPECT_EQ(seg().procs[b].running_cpus.load(), 0);
    EXPECT_EQ(sched_->policy().claim_unheld_cpu(a, {}, w), 0); // A's idle holder runs again
    EXPECT_EQ(seg().procs[a].running_cpus.load(), 1);
}

TEST_F(SchedulerTest, RepairCountsEveryProcessesRunningCpusAgain) {
    const int32_t a = add_process();
    grant_cpu(a, 0);
    seg().procs[a].running_cpus.store(5); // a recount cut short, or worse
    seg().cpus[1].counted_proc = a;
    kill_a_lock_holder();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w); // EOWNERDEAD: repair runs
    EXPECT_EQ(seg().procs[a].running_cpus.load(), 1);
    EXPECT_EQ(seg().cpus[1].counted_proc, kNone);
}

TEST_F(SchedulerTest, ProcessSlotsRunOutWithAnErrorNotACrash) {
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    int registered = 0;
    while (sched_->procs().register_process(::getpid(), 1, "x") != kNone)
        ++registered;
    EXPECT_EQ(registered, kMaxProcs);
}

TEST_F(SchedulerTest, ThreadSlotsRunOutWithAnErrorNotACrash) {
    int32_t p = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    int n = 0;
    while (sched_->procs().alloc_thread(p, 0, "x", ThreadState::Blocked) != kNone)
        ++n;
    EXPECT_EQ(n, kMaxThreads - 1);
}

// Regression: a worker that stopped while holding its CPU idle freed its
// slot, and the CPU went on naming it; the next claim of that CPU pushed the
// freed slot (process -1) onto a pool, writing before the process table.
TEST_F(SchedulerTest, ReleasingAThreadReleasesTheCpusItHolds) {
    int32_t a = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    int32_t c = sched_->policy().claim_unheld_cpu(a, {}, w);
    ASSERT_NE(c, kNone);
    int32_t t = seg().cpus[c].owner_thread.load();
    for (bool lent : {false, true}) {
        if (lent)
            sched_->policy().lend(c, w);
        else
            sched_->policy().hold_idle(c, /*sleeping=*/true, w);
        sched_->release_thread(t, w);
        EXPECT_EQ(seg().cpus[c].state.load(), CpuState::Free);
        EXPECT_EQ(seg().cpus[c].owner_thread.load(), kNone);
        EXPECT_EQ(seg().cpus[c].owner_proc.load(), kNone);
        EXPECT_EQ(seg().threads[t].state.load(), ThreadState::Unused);
        EXPECT_EQ(seg().header.unheld_cpus.load(), 2);
        // The slot is reused at once; the CPU must not reach its new owner.
        t = sched_->procs().alloc_thread(a, 0, "worker", ThreadState::Blocked);
        sched_->procs().pool_push(t);
        ASSERT_EQ(sched_->policy().claim_unheld_cpu(a, {Placement::Kind::Cpu, c, true}, w), c);
        ASSERT_EQ(seg().cpus[c].owner_thread.load(), t);
    }
}

TEST_F(SchedulerTest, ReleasingAPoolThreadTakesItOffThePool) {
    int32_t a = add_process();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    int32_t first = seg().procs[a].pool_head;
    int32_t second = sched_->procs().alloc_thread(a, 0, "worker", ThreadState::Blocked);
    sched_->procs().pool_push(second);
    ASSERT_EQ(seg().procs[a].pool_size.load(), 2);
    sched_->release_thread(first, w); // the bottom of the stack
    EXPECT_EQ(seg().procs[a].pool_size.load(), 1);
    EXPECT_EQ(seg().procs[a].pool_head, second);
    EXPECT_EQ(seg().threads[second].next, kNone);
}

// Regression: a monitor takes a kept CPU (coexec_keep_cpu) by winning the
// thread's keep word, then frees the CPU in the same locked section. The
// thread, losing the word without the lock, queued itself while the CPU
// still named it (torture: make_ready's "holds a CPU" assertion).
TEST_F(SchedulerTest, ALostKeepReturnsOnlyOnceTheTakerFreedTheCpu) {
    int32_t a = add_process();
    std::atomic<int> result{-1};
    std::atomic<pid_t> keeper_tid{0};
    std::thread keeper;
    int32_t c, t;
    {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        c = sched_->policy().claim_unheld_cpu(a, {}, w);
        ASSERT_NE(c, kNone);
        t = seg().cpus[c].owner_thread.load();
        const KeepWord word = sched_->begin_keep(t);
        KeepWord seen;
        ASSERT_EQ(sched_->cpus().keeping_holder(c, seen), t);
        ASSERT_TRUE(sched_->policy().take_kept(c, t, seen, w));
        // Still inside the taker's section: the thread must not come back.
        keeper = std::thread([&, word] {
            keeper_tid = ::gettid();
            result = sched_->end_keep(t, word) ? 1 : 0;
        });
        // Until end_keep returns, or the keeper sleeps in the kernel: on
        // this lock, the only place where end_keep waits.
        EXPECT_TRUE(test::wait_until([&] {
            return result.load() != -1 ||
                   (keeper_tid.load() != 0 && !thread_on_cpu(::getpid(), keeper_tid.load()));
        }));
        EXPECT_EQ(result.load(), -1) << "end_keep returned inside the taker's locked section";
    }
    keeper.join();
    EXPECT_EQ(result.load(), 0);
    EXPECT_FALSE(sched_->cpus().holds(t, c));
    EXPECT_FALSE(sched_->cpus().runs_elsewhere(t, kNone));
}

// A park (CpuTable::park()): the CPU stays Running and its holder's, marked
// and counted as parked; the parker takes it back with no lock.
TEST_F(SchedulerTest, AParkerThatTakesItsCpuBackFindsItAsItLeftIt) {
    const int32_t a = add_process();
    const int32_t t = grant_cpu(a, 0);
    const uint64_t locks = seg().header.lock_acquisitions.load();
    const KeepWord word = sched_->cpus().park(0, t);
    EXPECT_EQ(seg().header.parked_cpus.load(), 1);
    EXPECT_TRUE(contains(seg().header.parked, 0));
    EXPECT_EQ(seg().cpus[0].state.load(), CpuState::Running);
    EXPECT_EQ(seg().procs[a].running_cpus.load(), 1);
    KeepWord seen;
    EXPECT_EQ(sched_->cpus().parked_holder(0, seen), t);
    EXPECT_EQ(seen, word);
    EXPECT_TRUE(sched_->end_park(t, 0, word));
    EXPECT_EQ(seg().header.lock_acquisitions.load(), locks);
    EXPECT_TRUE(sched_->cpus().holds(t, 0));
    EXPECT_EQ(seg().header.parked_cpus.load(), 0);
    EXPECT_FALSE(contains(seg().header.parked, 0));
    EXPECT_EQ(sched_->cpus().parked_holder(0, seen), kNone);
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w); // its release checks the invariants
}

// Work that may run only on a parked CPU takes it at once; the parker learns
// it when it comes back, and holds no CPU then.
TEST_F(SchedulerTest, AParkedCpuGoesToWorkBoundToItAndItsParkerLearnsIt) {
    const auto [a, b, parker] = one_cpu_each();
    const KeepWord word = sched_->cpus().park(0, parker);
    {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        add_ready(b);
        EXPECT_EQ(sched_->policy().claim_unheld_cpu(b, {Placement::Kind::Cpu, 0, true}, w), 0);
        EXPECT_EQ(seg().cpus[0].owner_proc.load(), b);
        EXPECT_EQ(seg().cpus[0].state.load(), CpuState::Running);
        EXPECT_EQ(seg().threads[parker].state.load(), ThreadState::Blocked);
        EXPECT_EQ(seg().header.parked_cpus.load(), 0);
        EXPECT_FALSE(contains(seg().header.parked, 0));
    }
    EXPECT_FALSE(sched_->end_park(parker, 0, word));
    EXPECT_FALSE(sched_->cpus().runs_elsewhere(parker, kNone));
    EXPECT_EQ(KeepWord(seg().threads[parker].serial.load()).mode(), KeepWord::Mode::Inside);
}

// An unheld CPU goes first: a parked one's holder may want it back soon.
TEST_F(SchedulerTest, WorkTakesAnUnheldCpuBeforeAParkedOne) {
    const int32_t a = add_process();
    add_pool_thread(a);
    const int32_t parker = grant_cpu(a, 0);
    const KeepWord word = sched_->cpus().park(0, parker);
    {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        add_ready(a);
        EXPECT_EQ(sched_->policy().claim_unheld_cpu(a, {}, w), 1);
        EXPECT_EQ(seg().header.parked_cpus.load(), 1);
    }
    EXPECT_TRUE(sched_->end_park(parker, 0, word));
}

// A process that leaves (or dies) with a parked CPU leaves no mark behind.
TEST_F(SchedulerTest, AProcessThatLeavesTakesItsParkedCpuOutOfTheSet) {
    const int32_t a = add_process();
    const int32_t t = grant_cpu(a, 0);
    sched_->cpus().park(0, t);
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    sched_->unregister_process(a, w);
    EXPECT_EQ(seg().cpus[0].state.load(), CpuState::Free);
    EXPECT_EQ(seg().header.parked_cpus.load(), 0);
    EXPECT_FALSE(contains(seg().header.parked, 0));
}

// A lock holder killed between the stores of one CPU slot: repair makes the
// slot whole, whichever store it stopped after.
TEST_F(SchedulerTest, RepairFreesACpuWhoseOwnerWasClearedButNotItsState) {
    int32_t a = add_process();
    grant_cpu(a, 0);
    seg().cpus[0].owner_thread.store(kNone); // set_free(), cut short
    seg().cpus[0].owner_proc.store(kNone);
    kill_a_lock_holder();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    EXPECT_EQ(seg().cpus[0].state.load(), CpuState::Free);
    EXPECT_EQ(seg().header.unheld_cpus.load(), 2);
}

TEST_F(SchedulerTest, RepairPutsBackAThreadWhoseGrantNeverReachedIt) {
    int32_t a = add_process();
    const int32_t t = grant_cpu(a, 0);
    seg().threads[t].state.store(ThreadState::Pool); // popped; grant() cut short
    kill_a_lock_holder();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    EXPECT_EQ(seg().cpus[0].state.load(), CpuState::Free);
    EXPECT_EQ(seg().cpus[0].owner_thread.load(), kNone);
    EXPECT_EQ(seg().procs[a].pool_head, t);
    EXPECT_EQ(seg().procs[a].pool_size.load(), 1);
}

TEST_F(SchedulerTest, RepairClearsTheOwnerOfACpuLeftFree) {
    int32_t a = add_process();
    seg().cpus[1].owner_proc.store(a); // grant() cut short on a Free CPU
    seg().cpus[1].owner_thread.store(seg().procs[a].pool_head);
    kill_a_lock_holder();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    EXPECT_EQ(seg().cpus[1].owner_thread.load(), kNone);
    EXPECT_EQ(seg().cpus[1].owner_proc.load(), kNone);
}

TEST_F(SchedulerTest, RepairFreesACpuATakerMarkedBlocked) {
    int32_t a = add_process();
    const int32_t t = grant_cpu(a, 0);
    seg().threads[t].state.store(ThreadState::Blocked); // take_kept(), cut short
    kill_a_lock_holder();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    EXPECT_EQ(seg().cpus[0].state.load(), CpuState::Free);
}

// take_kept() killed after it won the keep word, before its first store:
// the keeper has lost its period, so repair must free the CPU before the
// keeper, back from end_keep(), queues its task (torture: make_ready's
// "holds a CPU" assertion).
TEST_F(SchedulerTest, RepairFinishesATakeCutShortAfterItWonTheKeepWord) {
    int32_t a = add_process();
    const int32_t t = grant_cpu(a, 0);
    const KeepWord word = sched_->begin_keep(t);
    seg().threads[t].serial.store(word.in(KeepWord::Mode::Taken).bits()); // the taker's CAS
    kill_a_lock_holder();
    EXPECT_FALSE(sched_->end_keep(t, word)); // its lock repairs
    EXPECT_FALSE(sched_->cpus().runs_elsewhere(t, kNone));
    EXPECT_EQ(seg().cpus[0].state.load(), CpuState::Free);
    EXPECT_EQ(seg().threads[t].state.load(), ThreadState::Blocked);
}

TEST_F(SchedulerTest, RepairTellsAnIdleHolderOfAGrantCutShort) {
    int32_t a = add_process();
    const int32_t t = grant_cpu(a, 0);
    {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        sched_->policy().hold_idle(0, /*sleeping=*/true, w);
    }
    ASSERT_EQ(seg().threads[t].state.load(), ThreadState::Holding);
    seg().cpus[0].state.store(CpuState::Running); // grant() to the holder, cut short
    kill_a_lock_holder();
    WakeList w;
    scheduler::SchedulerLock lock(*sched_, w);
    EXPECT_EQ(seg().threads[t].state.load(), ThreadState::Running);
    EXPECT_EQ(sched_->cpus().take_grant(t), 0);
    EXPECT_EQ(seg().header.unheld_cpus.load(), 1);
}

// A locked section can grant more often than the wake list holds (a reap of
// many dead processes): the threads whose wakes did not fit are still woken.
TEST_F(SchedulerTest, AWakeListThatOverflowsStillWakesEveryGrantee) {
    const int32_t t = grant_cpu(add_process(), 0);
    const int32_t other = grant_cpu(add_process(), 1);
    const uint32_t seen = seg().threads[t].word.load();
    constexpr uint64_t kLongWaitNs = 60'000'000'000ULL;
    std::atomic<pid_t> waiter_tid{0};
    std::atomic<bool> woke{false};
    std::thread waiter([&] {
        waiter_tid = ::gettid();
        sched_->procs().wait_word(t, seen, kLongWaitNs);
        woke = true;
    });
    // The waiter announced its sleep and sleeps in the kernel.
    EXPECT_TRUE(test::wait_until([&] {
        return (seg().threads[t].word.load() & ThreadWord::kSleeper) != 0 &&
               !thread_on_cpu(::getpid(), waiter_tid.load());
    }));
    // A grant to `t`, published as publish_grant() does, whose wake does not
    // fit in a list full of another thread's wakes.
    seg().threads[t].grant.store(0, std::memory_order_release);
    EXPECT_TRUE(ThreadWord::move(seg().threads[t].word)) << "the waiter announced no sleep";
    WakeList w;
    for (size_t i = 0; i < WakeList::kCapacity; ++i)
        w.add(other);
    w.add(t);
    EXPECT_FALSE(w.empty());
    w.flush(seg());
    EXPECT_TRUE(w.empty());
    // Only a wake ends the 60 s wait within the patience of wait_until.
    EXPECT_TRUE(test::wait_until([&] { return woke.load(); }))
        << "the grantee slept through its grant";
    waiter.join();
    EXPECT_EQ(sched_->cpus().take_grant(t), 0);
}

// A thread's word: a mover wakes (makes the system call) only for a thread
// that announced its sleep, and the announcement fails once the word moved.
TEST(ThreadWordTest, AMoverWakesOnlyAnAnnouncedSleeper) {
    std::atomic<uint32_t> word{0};
    EXPECT_FALSE(ThreadWord::move(word)) << "nobody sleeps: no wake";
    uint32_t seen = word.load(), expected = 0;
    ASSERT_TRUE(ThreadWord::announce_sleep(word, seen, expected));
    EXPECT_EQ(word.load(), expected);
    EXPECT_TRUE(ThreadWord::announce_sleep(word, expected, expected)) << "announced twice";
    EXPECT_TRUE(ThreadWord::move(word)) << "the sleeper must be woken";
    EXPECT_NE(word.load(), expected) << "the move must be seen by FUTEX_WAIT";
    EXPECT_FALSE(ThreadWord::move(word)) << "the move cleared the announcement";
    EXPECT_FALSE(ThreadWord::announce_sleep(word, seen, expected)) << "the word moved past seen";
    // A quiet move (an eviction) wakes nobody, so the sleeper stays asleep
    // and the next move must still wake it.
    seen = word.load();
    ASSERT_TRUE(ThreadWord::announce_sleep(word, seen, expected));
    ThreadWord::move_quietly(word);
    EXPECT_NE(word.load(), expected);
    EXPECT_TRUE(ThreadWord::move(word)) << "a quiet move lost the sleeper";
}

// Ping-pong between two threads that each sleep on their own word through
// ProcessTable::wait_word and are woken by wake_thread(), with no
// timeout to fall back on: a lost wake hangs the test (ctest's timeout
// fails it). Each side sometimes yields first, as wait_for_cpu() does, so
// moves land both before and after the announcement.
TEST_F(SchedulerTest, ThreadWordsLoseNoWakeInAPingPong) {
    const int32_t a = grant_cpu(add_process(), 0);
    const int32_t b = grant_cpu(add_process(), 1);
    constexpr int kRounds = 20'000;
    std::atomic<int> turn{0}; // even: a's turn, odd: b's
    auto player = [&](int32_t self, int32_t other, int parity) {
        for (int i = 0; i < kRounds; ++i) {
            for (;;) {
                const uint32_t seen = seg().threads[self].word.load(std::memory_order_acquire);
                if (turn.load(std::memory_order_acquire) % 2 == parity) break;
                if (i % 3 == 0)
                    std::this_thread::yield();
                else
                    sched_->procs().wait_word(self, seen, 0);
            }
            turn.fetch_add(1, std::memory_order_acq_rel);
            sched_->procs().wake_thread(other);
        }
    };
    std::thread tb(player, b, a, 1);
    player(a, b, 0);
    tb.join();
    EXPECT_EQ(turn.load(), 2 * kRounds);
}

// A thread that keeps its own affinity (COEXEC_ATTACH_KEEP_AFFINITY) is
// moved by a granter only while coexec pins it: before, its mask is its
// own; once it pinned itself, a grant of another CPU binds it before the
// wake, so that it does not wake behind its old CPU's holder.
TEST_F(SchedulerTest, AThreadThatKeepsItsAffinityIsBoundByGrantersOnlyWhilePinned) {
    const cpu_set_t wide = test::kernel_affinity();
    if (!CPU_ISSET(0, &wide) || !CPU_ISSET(1, &wide)) GTEST_SKIP() << "needs system CPUs 0 and 1";
    std::atomic<pid_t> tid{0};
    std::atomic<bool> done{false};
    std::thread keeper([&] {
        tid.store(pid_t(::syscall(SYS_gettid)));
        while (!done.load())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    while (tid.load() == 0)
        std::this_thread::yield();
    const int32_t p = add_process();
    int32_t t;
    {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        t = sched_->procs().alloc_thread(p, tid.load(), "keeper", ThreadState::Waiting, true);
    }
    auto mask = [&] { return test::kernel_affinity(tid.load()); };
    const cpu_set_t only1 = [] {
        cpu_set_t s;
        CPU_ZERO(&s);
        CPU_SET(1, &s);
        return s;
    }();

    sched_->binding().bind(t, 1);
    cpu_set_t now = mask();
    EXPECT_TRUE(CPU_EQUAL(&now, &wide)) << "moved before coexec pinned it";
    EXPECT_EQ(sched_->binding().bound_cpu(t), kNone);

    sched_->binding().note(t, 0); // it pinned itself to CPU 0
    {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        add_ready(p);
        sched_->procs().open_receiver(p, t, 1);
        EXPECT_EQ(sched_->policy().claim_unheld_cpu(p, {Placement::Kind::Cpu, 1, true}, w), 1);
    }
    EXPECT_EQ(sched_->cpus().take_grant(t), 1);
    now = mask();
    EXPECT_TRUE(CPU_EQUAL(&now, &only1)) << "a grant of CPU 1 left the pinned keeper elsewhere";
    EXPECT_EQ(sched_->binding().bound_cpu(t), 1);

    sched_->binding().forget(t); // it left coexec and restored its own mask
    ASSERT_EQ(::syscall(SYS_sched_setaffinity, tid.load(), sizeof wide, &wide), 0);
    sched_->binding().bind(t, 0);
    now = mask();
    EXPECT_TRUE(CPU_EQUAL(&now, &wide)) << "moved after it left coexec";
    done.store(true);
    keeper.join();
}

// A CPU that comes free goes to work bound to it or to its NUMA node before
// work that may run anywhere, whatever the round-robin order says.
TEST_F(SchedulerTest, AFreedCpuPrefersAProcessWhoseWorkIsLocalToIt) {
    for (bool numa : {false, true}) {
        SCOPED_TRACE(numa ? "bound to the NUMA node" : "bound to the CPU");
        SetUp();
        const auto [a, b, on_cpu0] = one_cpu_each();
        const int32_t any = add_process(), local = add_process();
        add_ready(any); // registered before `local`: first in the round-robin
        map_->procs[local].ready_total += 1;
        if (numa)
            map_->procs[local].ready_numa[seg().cpus[1].numa] += 1;
        else
            shm::ready_cpu_row(*map_.get(), local)[1] += 1;
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        sched_->policy().release(1, w);
        EXPECT_EQ(seg().cpus[1].owner_proc.load(), local);
        // Without local work the round-robin order rules.
        map_->procs[local].ready_total -= 1;
        if (numa)
            map_->procs[local].ready_numa[seg().cpus[1].numa] -= 1;
        else
            shm::ready_cpu_row(*map_.get(), local)[1] -= 1;
        sched_->policy().release(1, w);
        EXPECT_EQ(seg().cpus[1].owner_proc.load(), any);
        (void)a;
        (void)b;
        (void)on_cpu0;
    }
}

// A private segment of 4 CPUs: 0 and 1 on NUMA node 0, 2 and 3 on node 1.
SegmentMapping two_node_segment() {
    SegmentOptions o;
    o.isolation = Isolation::Process;
    o.cpu_slots = 4;
    o.initialize = [](Segment& s) {
        Discovery two_nodes;
        two_nodes.cpus = {{0, 0, 0}, {1, 1, 0}, {2, 2, 1}, {3, 3, 1}};
        SharedScheduler(s).format_unpublished(two_nodes, SegmentConfig{});
    };
    SegmentError e;
    SegmentMapping map = SegmentMapping::open(o, e);
    EXPECT_TRUE(map) << e.message;
    return map;
}

// Work that may run anywhere goes to an unheld CPU on its process's home
// NUMA node (the node its affinity or memory policy names) when there is
// one; a non-strict node placement prefers its node the same way.
TEST(SchedulerNuma, UnboundWorkPrefersItsHomeNode) {
    SegmentMapping map = two_node_segment();
    ASSERT_TRUE(map);
    Segment& s = *map.get();
    ASSERT_EQ(s.header.numa_count, 2);
    SharedScheduler sched(s);
    WakeList w;
    scheduler::SchedulerLock lock(sched, w);
    const pid_t pid = ::getpid();
    const uint64_t start = process_start_time(pid);
    auto member = [&](int32_t home) COEXEC_REQUIRES(scheduler::segment_lock) {
        const int32_t p = sched.procs().register_process(pid, start, "numa", home);
        for (int i = 0; i < 2; ++i)
            sched.procs().pool_push(
                sched.procs().alloc_thread(p, 0, "worker", ThreadState::Blocked));
        return p;
    };
    const int32_t homeless = member(kNone), on_node1 = member(1), anywhere = member(kNone);
    EXPECT_EQ(sched.policy().claim_unheld_cpu(on_node1, {}, w), 2);
    EXPECT_EQ(sched.policy().claim_unheld_cpu(homeless, {}, w), 0);
    // A non-strict placement on node 1 prefers it too; node 1's last CPU.
    EXPECT_EQ(sched.policy().claim_unheld_cpu(anywhere, {Placement::Kind::Numa, 1, false}, w), 3);
    // Node 1 full: the home node is a preference, not a bound.
    EXPECT_EQ(sched.policy().claim_unheld_cpu(on_node1, {}, w), 1);
    EXPECT_EQ(check_invariants(s), std::vector<std::string>{});
    // A node 1 CPU that comes free goes to the process at home there, though
    // the round-robin order names another first.
    sched.procs().pool_push(
        sched.procs().alloc_thread(on_node1, 0, "worker", ThreadState::Blocked));
    for (int32_t p : {homeless, on_node1}) {
        s.procs[p].ready_total += 1;
        s.procs[p].ready_any += 1;
    }
    sched.policy().release(3, w);
    EXPECT_EQ(s.cpus[3].owner_proc.load(), on_node1);
}

// A segment laid out again (reclaimed from dead members) with another
// topology keeps nothing of the old one's node sets.
TEST(SchedulerNuma, ALayoutAgainClearsTheOldNodeSets) {
    SegmentMapping map = two_node_segment();
    ASSERT_TRUE(map);
    Segment& s = *map.get();
    ASSERT_EQ(check_invariants(s), std::vector<std::string>{});
    Discovery one_node;
    one_node.cpus = {{5, 5, 0}, {7, 7, 0}};
    WakeList w;
    SharedScheduler sched(s);
    {
        scheduler::SchedulerLock lock(sched, w);
        sched.format(one_node, SegmentConfig{});
    }
    EXPECT_EQ(s.header.numa_count, 1);
    EXPECT_EQ(check_invariants(s), std::vector<std::string>{});
    EXPECT_FALSE(contains(s.numa_cpus[1], 2));
    EXPECT_FALSE(contains(s.numa_cpus[0], 2));
}
