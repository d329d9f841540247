// The segment invariant checker on a real segment: sound after every
// scheduler operation, precise about each kind of corruption, and safe on
// arbitrary bytes.
#include "support.hpp"

#include "scheduler/cpu_bits.hpp"
#include "scheduler/invariants.hpp"
#include "scheduler/shared_scheduler.hpp"
#include "shm/liveness.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <random>

using namespace coexec;
using namespace coexec::scheduler;
using namespace coexec::shm;

// Counts this program's operator new calls, for the check that a sound
// segment is checked without allocating (builds without a sanitizer only:
// the sanitizers bring their own allocator).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) // gcc
#define COEXEC_SANITIZED 1
#elif defined(__has_feature) // clang
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define COEXEC_SANITIZED 1
#endif
#endif
#ifndef COEXEC_SANITIZED
#define COEXEC_COUNTS_NEW 1
static std::atomic<uint64_t> g_news{0};
void* operator new(size_t n) {
    g_news.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, size_t) noexcept {
    std::free(p);
}
#endif

namespace {

std::string joined(const std::vector<std::string>& violations) {
    std::string text;
    for (const auto& v : violations)
        text += "\n  " + v;
    return text;
}

// Whether some violation contains `needle`.
bool reports(const std::vector<std::string>& violations, const std::string& needle) {
    return std::any_of(violations.begin(), violations.end(),
                       [&](const std::string& v) { return v.find(needle) != std::string::npos; });
}

#define EXPECT_SOUND(segment)                                                                      \
    do {                                                                                           \
        auto found_ = check_invariants(segment);                                                   \
        EXPECT_TRUE(found_.empty()) << joined(found_);                                             \
    } while (0)

#define EXPECT_REPORTS(segment, needle)                                                            \
    do {                                                                                           \
        auto found_ = check_invariants(segment);                                                   \
        EXPECT_TRUE(reports(found_, needle)) << "no \"" << (needle) << "\" in:" << joined(found_); \
    } while (0)

// Formats the segment as core does: two CPUs on one NUMA node, both Free.
void format_two_cpus(Segment& s) {
    SegmentConfig config{};
    config.quantum_ns = 1'000'000'000; // long: no turn expires by itself
    Discovery two;
    two.cpus = {{0, 0, 0}, {1, 1, 0}};
    SharedScheduler(s).format_unpublished(two, config);
}

class InvariantsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        SegmentOptions o;
        o.isolation = Isolation::Process;
        o.cpu_slots = 2;
        o.initialize = format_two_cpus;
        SegmentError e;
        map_ = SegmentMapping::open(o, e);
        ASSERT_TRUE(map_) << e.message;
        sched_ = std::make_unique<SharedScheduler>(*map_.get());
    }

    Segment& seg() { return *map_.get(); }

    // A live process (this one) with `pool` pool threads.
    int32_t add_process(int pool) {
        int32_t p =
            sched_->procs().register_process(::getpid(), process_start_time(::getpid()), "test");
        EXPECT_NE(p, kNone);
        for (int i = 0; i < pool; ++i)
            sched_->procs().pool_push(
                sched_->procs().alloc_thread(p, 0, "worker", ThreadState::Blocked));
        return p;
    }
    void add_ready(int32_t p) {
        seg().procs[p].ready_total += 1;
        seg().procs[p].ready_any += 1;
    }

    // Two processes; process a runs on CPU 0, b holds CPU 1 idle. Each
    // keeps one more thread in its pool.
    void populate() {
        a_ = add_process(2);
        b_ = add_process(2);
        ASSERT_EQ(sched_->policy().claim_unheld_cpu(a_, {Placement::Kind::Cpu, 0, true}, wakes_),
                  0);
        ASSERT_EQ(sched_->policy().claim_unheld_cpu(b_, {Placement::Kind::Cpu, 1, true}, wakes_),
                  1);
        sched_->policy().hold_idle(1, false, wakes_);
        ASSERT_EQ(seg().cpus[1].state.load(), CpuState::Idle);
        EXPECT_SOUND(seg());
    }
    int32_t holder(int32_t cpu) { return seg().cpus[cpu].owner_thread.load(); }

    SegmentMapping map_;
    std::unique_ptr<SharedScheduler> sched_;
    WakeList wakes_; // the threads are not real: nothing is ever flushed
    int32_t a_ = kNone, b_ = kNone;
};

// ---- sound segments -------------------------------------------------------

TEST_F(InvariantsTest, AFreshSegmentIsSound) {
    EXPECT_SOUND(seg());
}

// The check runs at every lock release in builds with assertions: on a
// sound segment it allocates nothing, however many CPUs are held.
TEST_F(InvariantsTest, ASoundSegmentIsCheckedWithoutAllocating) {
#ifndef COEXEC_COUNTS_NEW
    GTEST_SKIP() << "a sanitizer replaces operator new";
#else
    populate(); // CPU 0 Running, CPU 1 Idle
    // Asleep: "CPU 1 (Sleeping)" would not fit a short string's own room.
    EXPECT_EQ(sched_->policy().hold_idle(1, true, wakes_), kNone);
    ASSERT_EQ(seg().cpus[1].state.load(), CpuState::Sleeping);
    const uint64_t before = g_news.load();
    const auto found = check_invariants(seg());
    EXPECT_EQ(g_news.load() - before, 0u);
    EXPECT_TRUE(found.empty()) << joined(found);
#endif
}

TEST_F(InvariantsTest, StaysSoundThroughEveryOperation) {
    int32_t a = add_process(2);
    EXPECT_SOUND(seg());
    int32_t b = add_process(1);
    EXPECT_SOUND(seg());

    // a claims both CPUs with its pool threads.
    ASSERT_EQ(sched_->policy().claim_unheld_cpu(a, {}, wakes_), 0);
    ASSERT_EQ(sched_->policy().claim_unheld_cpu(a, {}, wakes_), 1);
    EXPECT_SOUND(seg());

    // CPU 0 goes idle, then to sleep, then back to a's own work.
    EXPECT_EQ(sched_->policy().hold_idle(0, false, wakes_), kNone);
    EXPECT_SOUND(seg());
    add_ready(a);
    EXPECT_EQ(sched_->policy().hold_idle(0, true, wakes_), holder(0));
    EXPECT_SOUND(seg());

    // b has work; a's quantum on CPU 0 ends: b's pool thread gets it.
    add_ready(b);
    seg().cpus[0].turn_start_ns.store(0);
    const int32_t left = holder(0);
    EXPECT_EQ(sched_->policy().decide(0, a, false, wakes_), Policy::Next::Other);
    EXPECT_EQ(seg().cpus[0].owner_proc.load(), b);
    EXPECT_SOUND(seg());
    sched_->procs().pool_push(left); // as the worker that left does
    EXPECT_SOUND(seg());

    // a's CPU 1 holder lends it, takes it back, lends it again; b's work
    // then evicts the lender.
    for (int32_t p : {a, b}) { // no work left: nobody takes what is let go
        seg().procs[p].ready_total = 0;
        seg().procs[p].ready_any = 0;
    }
    const int32_t lender = holder(1);
    EXPECT_EQ(sched_->policy().lend(1, wakes_), kNone);
    EXPECT_SOUND(seg());
    EXPECT_TRUE(sched_->cpus().reclaim_lent(1, lender));
    EXPECT_SOUND(seg());
    EXPECT_EQ(sched_->policy().lend(1, wakes_), kNone);
    sched_->procs().pool_push(sched_->procs().alloc_thread(b, 0, "worker", ThreadState::Blocked));
    EXPECT_EQ(sched_->policy().claim_unheld_cpu(b, {}, wakes_), 1);
    EXPECT_EQ(seg().threads[lender].state.load(), ThreadState::Blocked);
    EXPECT_SOUND(seg());

    // An attached thread of a gets CPU 0 directly, evicting b's idle holder.
    EXPECT_EQ(sched_->policy().hold_idle(0, false, wakes_), kNone);
    int32_t attached = sched_->procs().alloc_thread(a, 0, "attached", ThreadState::Waiting);
    EXPECT_SOUND(seg());
    EXPECT_EQ(sched_->policy().grant_unheld_cpu(attached, {Placement::Kind::Cpu, 0, true}, wakes_),
              0);
    EXPECT_SOUND(seg());

    // Everything is let go: CPUs freed, a thread freed, processes leave.
    EXPECT_EQ(sched_->policy().release(0, wakes_), kNone);
    EXPECT_EQ(sched_->policy().release(1, wakes_), kNone);
    EXPECT_SOUND(seg());
    sched_->release_thread(attached, wakes_);
    EXPECT_SOUND(seg());
    sched_->unregister_process(a, wakes_);
    EXPECT_SOUND(seg());
    sched_->unregister_process(b, wakes_);
    EXPECT_SOUND(seg());
    EXPECT_TRUE(sched_->empty());
}

TEST_F(InvariantsTest, RepairLeavesASoundSegment) {
    populate();
    // What a holder that died mid-change may leave: lists and counters
    // broken, slot states intact.
    seg().header.alive_count = 0;
    seg().header.thread_free_head = kNone;
    seg().procs[a_].pool_head = kNone;
    seg().procs[a_].thread_head = kNone;
    seg().header.unheld_cpus.store(0);
    EXPECT_FALSE(check_invariants(seg()).empty());
    // repair() runs when the lock is taken after its holder died.
    pid_t child = test::fork_child([&] {
        WakeList w;
        scheduler::SchedulerLock lock(*sched_, w);
        std::_Exit(0);
        return 0;
    });
    ASSERT_EQ(test::wait_child(child), 0);
    scheduler::SchedulerLock lock(*sched_, wakes_);
    EXPECT_EQ(seg().header.recoveries.load(), 1u);
    EXPECT_SOUND(seg());
}

// ---- one corruption at a time --------------------------------------------------

TEST_F(InvariantsTest, CpuHeldByAFreedThread) {
    populate();
    seg().threads[holder(0)].state.store(ThreadState::Unused); // freed, CPU not released
    EXPECT_REPORTS(seg(), "CPU 0 (Running) is held by thread slot " + std::to_string(holder(0)) +
                              ", which is freed (Unused)");
}

TEST_F(InvariantsTest, CpuHeldByAPoolThread) {
    populate();
    // As pool_push would, but pool_push asserts against this very mistake.
    const int32_t t = holder(0);
    seg().threads[t].state.store(ThreadState::Pool);
    seg().threads[t].next = seg().procs[a_].pool_head;
    seg().procs[a_].pool_head = t;
    seg().procs[a_].pool_size += 1;
    EXPECT_REPORTS(seg(), "held by thread slot " + std::to_string(t) + ", which is in state Pool");
}

TEST_F(InvariantsTest, CpuOwnerProcDisagreesWithItsThread) {
    populate();
    seg().cpus[0].owner_proc.store(b_);
    EXPECT_REPORTS(seg(), "CPU 0 (Running) has owner_proc " + std::to_string(b_) +
                              " but its holder, thread slot " + std::to_string(holder(0)) +
                              ", belongs to process slot " + std::to_string(a_));
}

TEST_F(InvariantsTest, CpuHeldByAProcessThatLeft) {
    populate();
    seg().procs[a_].state.store(ProcState::Unused);
    EXPECT_REPORTS(seg(), "CPU 0 (Running) is held by process slot " + std::to_string(a_) +
                              ", which is not Alive");
    EXPECT_REPORTS(seg(),
                   "alive list: process slot " + std::to_string(a_) + " is listed but not Alive");
}

TEST_F(InvariantsTest, HeldCpuWithOutOfRangeOwner) {
    populate();
    seg().cpus[1].owner_thread.store(kMaxThreads);
    seg().cpus[0].owner_proc.store(-7);
    EXPECT_REPORTS(seg(), "CPU 1 (Idle) has owner_thread 8192, not a used thread slot");
    EXPECT_REPORTS(seg(), "CPU 0 (Running) has owner_proc -7, not a used process slot");
}

TEST_F(InvariantsTest, FreeCpuWithAnOwner) {
    populate();
    seg().cpus[1].state.store(CpuState::Free); // as if set_free forgot the owner
    EXPECT_REPORTS(seg(), "CPU 1 is Free but names owner_thread " + std::to_string(holder(1)));
}

TEST_F(InvariantsTest, ThreadOnTwoCpus) {
    populate();
    const int32_t t = holder(0);
    seg().cpus[1].owner_thread.store(t);
    seg().cpus[1].owner_proc.store(a_);
    EXPECT_REPORTS(seg(), "thread slot " + std::to_string(t) + " holds 2 CPUs (0 Running, 1 Idle)");
}

// A thread hands its Running CPU to a teammate without the lock, so a
// checker may read one thread as the owner of two Running CPUs, each at a
// different moment. That read is no violation; any other pair is.
TEST_F(InvariantsTest, ThreadReadOnTwoRunningCpusIsLeftToTheLockFreeHandOff) {
    populate();
    const int32_t t = holder(0);
    seg().cpus[1].owner_thread.store(t);
    seg().cpus[1].owner_proc.store(a_);
    assign(proc_cpus_row(seg(), a_), 1, true); // as its grant would have
    seg().cpus[1].state.store(CpuState::Running);
    seg().header.unheld_cpus.fetch_sub(1);    // Idle counted as unheld, Running not
    assign(seg().header.idle_cpus, 1, false); // and in the idle set
    seg().cpus[1].counted_proc = a_;          // and Running CPUs by owner
    seg().procs[a_].running_cpus.fetch_add(1);
    EXPECT_SOUND(seg());
}

TEST_F(InvariantsTest, ACpuMissingFromTheRowOfAProcessItNames) {
    populate();
    // CPU 0 is Running for a_: granted, so in a_'s row.
    ASSERT_TRUE(contains(proc_cpus_row(seg(), a_), 0));
    assign(proc_cpus_row(seg(), a_), 0, false);
    EXPECT_REPORTS(seg(), "CPU 0 names process slot " + std::to_string(a_) +
                              " as owner_proc but is not in its row of proc_cpus");
}

TEST_F(InvariantsTest, UnheldSetsDisagreeingWithTheStates) {
    populate();
    assign(seg().header.free_cpus, 1, true); // CPU 1 is Idle
    EXPECT_REPORTS(seg(),
                   "CPU 1 is Idle but in the header's unheld sets as free 1, idle 1, lent 0");
    assign(seg().header.free_cpus, 1, false);
    EXPECT_SOUND(seg());
    assign(seg().header.lent_cpus, 2, true); // past cpu_count 2
    EXPECT_REPORTS(seg(), "header: an unheld set holds CPU slot 2, past cpu_count 2");
}

TEST_F(InvariantsTest, RunningCpusOfAProcessMiscounted) {
    populate();
    seg().procs[a_].running_cpus.fetch_add(1);
    EXPECT_REPORTS(seg(), "process slot " + std::to_string(a_) + ": running_cpus is");
}

TEST_F(InvariantsTest, CpuCountedForAProcessThatDoesNotRunIt) {
    populate();
    seg().cpus[1].counted_proc = b_;
    EXPECT_REPORTS(seg(),
                   "CPU 1 is counted in the running_cpus of process slot " + std::to_string(b_));
}

TEST_F(InvariantsTest, CycleInAPoolList) {
    populate();
    sched_->procs().pool_push(sched_->procs().alloc_thread(a_, 0, "worker", ThreadState::Blocked));
    const int32_t head = seg().procs[a_].pool_head;
    const int32_t second = seg().threads[head].next;
    ASSERT_NE(second, kNone);
    seg().threads[second].next = head;
    EXPECT_REPORTS(seg(), "the pool list of process slot " + std::to_string(a_) +
                              " has a cycle: it comes back to thread slot " + std::to_string(head));
}

TEST_F(InvariantsTest, CycleInTheFreeList) {
    populate();
    const int32_t c = add_process(1);
    for (int32_t p : {a_, b_, c}) // three freed slots: head -> second -> third
        sched_->release_thread(sched_->procs().take_pool_thread(p), wakes_);
    const int32_t head = seg().header.thread_free_head;
    seg().threads[seg().threads[head].next].next = head; // the third is cut off
    EXPECT_REPORTS(seg(), "the free list has a cycle: it comes back to thread slot " +
                              std::to_string(head));
    EXPECT_REPORTS(seg(), "is Unused but not on the free list");
}

TEST_F(InvariantsTest, SlotOnTwoLists) {
    populate();
    // b's pool list runs into a's pool thread.
    const int32_t a_pool = seg().procs[a_].pool_head;
    seg().threads[seg().procs[b_].pool_head].next = a_pool;
    EXPECT_REPORTS(seg(), "thread slot " + std::to_string(a_pool) +
                              " is on both the pool list of "
                              "process slot " +
                              std::to_string(a_) + " and the pool list of process slot " +
                              std::to_string(b_));
}

TEST_F(InvariantsTest, UsedSlotOnTheFreeList) {
    populate();
    const int32_t t = holder(0);
    seg().threads[t].next = seg().header.thread_free_head;
    seg().header.thread_free_head = t;
    EXPECT_REPORTS(seg(), "the free list holds thread slot " + std::to_string(t) +
                              ", which is in use (state Running)");
}

TEST_F(InvariantsTest, FreeListLinkOutOfRange) {
    seg().header.thread_free_head = 100000;
    EXPECT_REPORTS(seg(), "the free list links to 100000, not a used thread slot");
}

TEST_F(InvariantsTest, ReferenceAboveTheHighWaterMark) {
    populate();
    // A slot never handed out since formatting may not be referenced.
    const int32_t unused = seg().header.threads_used;
    seg().procs[a_].pool_head = unused;
    EXPECT_REPORTS(seg(), "the pool list of process slot " + std::to_string(a_) + " links to " +
                              std::to_string(unused) + ", not a used thread slot");
}

TEST_F(InvariantsTest, FreedSlotOffTheFreeList) {
    populate();
    sched_->release_thread(sched_->procs().take_pool_thread(a_), wakes_);
    const int32_t lost = seg().header.thread_free_head;
    seg().header.thread_free_head = seg().threads[lost].next;
    EXPECT_REPORTS(seg(),
                   "thread slot " + std::to_string(lost) + " is Unused but not on the free list");
}

// What a free that forgot to unlink the thread from its process looks like.
TEST_F(InvariantsTest, ThreadOffItsProcessThreadList) {
    populate();
    const int32_t t = seg().procs[a_].thread_head;
    ASSERT_NE(t, kNone);
    seg().procs[a_].thread_head = seg().threads[t].proc_next;
    EXPECT_REPORTS(seg(), "the thread list of process slot " + std::to_string(a_) + " holds");
}

TEST_F(InvariantsTest, ThreadListWithABackLinkOutOfStep) {
    populate();
    const int32_t t = seg().procs[a_].thread_head;
    ASSERT_NE(seg().threads[t].proc_next, kNone) << "populate() gives a_ two threads";
    seg().threads[seg().threads[t].proc_next].proc_prev = kNone;
    EXPECT_REPORTS(seg(), "has proc_prev -1 but follows " + std::to_string(t));
}

TEST_F(InvariantsTest, PoolThreadOffItsPoolList) {
    populate();
    // What a pool pop that leaves the state at Pool looks like.
    const int32_t t = seg().procs[a_].pool_head;
    seg().procs[a_].pool_head = seg().threads[t].next;
    seg().procs[a_].pool_size -= 1;
    EXPECT_REPORTS(seg(), "thread slot " + std::to_string(t) +
                              " is in state Pool but not on the pool list of its process slot " +
                              std::to_string(a_));
}

TEST_F(InvariantsTest, RunningThreadOnAPoolList) {
    populate();
    const int32_t t = holder(0);
    seg().threads[t].next = seg().procs[a_].pool_head;
    seg().procs[a_].pool_head = t;
    seg().procs[a_].pool_size += 1;
    EXPECT_REPORTS(seg(), "the pool list of process slot " + std::to_string(a_) +
                              " holds thread slot " + std::to_string(t) +
                              " in state Running, not Pool");
}

TEST_F(InvariantsTest, PoolThreadOfAnotherProcess) {
    populate();
    const int32_t t = seg().procs[a_].pool_head;
    seg().threads[t].proc = b_;
    EXPECT_REPORTS(seg(), "the pool list of process slot " + std::to_string(a_) +
                              " holds thread slot " + std::to_string(t) + " of process slot " +
                              std::to_string(b_));
}

TEST_F(InvariantsTest, WrongCounters) {
    populate();
    seg().header.unheld_cpus += 1;
    EXPECT_REPORTS(seg(), "header: unheld_cpus is 2 but 1 CPUs are not Running");
    seg().header.unheld_cpus -= 1;
    seg().header.wakeable_cpus.store(1);
    EXPECT_REPORTS(seg(), "header: wakeable_cpus is 1 but 0 CPUs are Free, Sleeping or Lent");
    seg().header.wakeable_cpus.store(0);
    EXPECT_SOUND(seg());
    seg().procs[b_].threads += 3;
    EXPECT_REPORTS(seg(), "process slot " + std::to_string(b_) +
                              " counts 5 threads but 2 thread slots in use belong to it");
    seg().procs[b_].threads -= 3;
    seg().procs[a_].pool_size += 1;
    EXPECT_REPORTS(seg(), "process slot " + std::to_string(a_) +
                              " has pool_size 2 but its pool list holds 1 threads");
}

TEST_F(InvariantsTest, ProcessMissingFromTheAliveList) {
    populate();
    ASSERT_EQ(seg().header.alive_count, 2);
    seg().header.alive_count = 1;
    EXPECT_REPORTS(seg(), "process slot " + std::to_string(b_) +
                              " is Alive but missing from the alive list");
}

TEST_F(InvariantsTest, AliveListEntriesBadOrTwice) {
    populate();
    seg().header.alive[1] = a_;
    EXPECT_REPORTS(seg(), "alive list: process slot " + std::to_string(a_) + " is listed twice");
    seg().header.alive[1] = kMaxProcs;
    EXPECT_REPORTS(seg(), "alive list: entry 1 is 512, not a used process slot");
}

TEST_F(InvariantsTest, ThreadOfADeadProcess) {
    populate();
    const int32_t gone = add_process(0);
    sched_->unregister_process(gone, wakes_);
    seg().threads[seg().procs[b_].pool_head].proc = gone;
    EXPECT_REPORTS(seg(), "(Pool) belongs to process slot " + std::to_string(gone) +
                              ", which is not Alive");
}

TEST_F(InvariantsTest, BadIndicesAndStates) {
    populate();
    seg().cpus[0].turn_proc.store(kMaxProcs);
    seg().cpus[1].stint_proc = -3;
    seg().cpus[1].numa = 1;
    seg().threads[holder(0)].grant.store(2);
    seg().threads[holder(1)].bound_cpu.store(-2);
    EXPECT_REPORTS(seg(), "CPU 0 has turn_proc 512, neither kNone nor a process slot");
    EXPECT_REPORTS(seg(), "CPU 1 has stint_proc -3, neither kNone nor a process slot");
    EXPECT_REPORTS(seg(), "CPU 1 is on NUMA node 1, not in 0..0");
    EXPECT_REPORTS(seg(), "has grant 2, neither kNone nor a CPU");
    EXPECT_REPORTS(seg(), "has bound_cpu -2, neither kNone nor a CPU");
    seg().cpus[1].state.store(CpuState(9));
    const int32_t pooled = seg().procs[b_].pool_head;
    seg().threads[pooled].state.store(ThreadState(77));
    seg().procs[b_].state.store(ProcState(3));
    EXPECT_REPORTS(seg(), "CPU 1 has invalid state 9");
    EXPECT_REPORTS(seg(), "thread slot " + std::to_string(pooled) + " has invalid state 77");
    EXPECT_REPORTS(seg(), "process slot " + std::to_string(b_) + " has invalid state 3");
}

TEST_F(InvariantsTest, BadHeader) {
    Header& h = seg().header;
    h.magic.store(1);
    h.abi_version = kAbiVersion + 1;
    h.max_threads = 4;
    h.cpu_count = h.max_cpus + 1;
    h.numa_count = 0;
    h.alive_count = -1;
    auto found = check_invariants(seg());
    for (const char* needle :
         {"header: bad magic 1", "header: ABI version", "header: max_threads 4, expected 8192",
          "header: cpu_count 3 is not in 1..2", "header: numa_count 0 is not in 1..64",
          "header: alive_count -1 is not in 0..512"})
        EXPECT_TRUE(reports(found, needle)) << needle << joined(found);
    h.cpu_count = 0;
    EXPECT_REPORTS(seg(), "header: cpu_count 0 is not in 1..2");
    h.max_cpus = kMaxCpus + 1;
    EXPECT_REPORTS(seg(), "header: max_cpus 4097 is not in 1..4096");
    h.max_cpus = 3;
    EXPECT_REPORTS(seg(), "header: total_size " + std::to_string(h.total_size) + ", expected " +
                              std::to_string(segment_layout(3).total) + " for max_cpus 3");
    h.max_cpus = 2;
    seg().cpus.place(&seg().cpus[1]);
    EXPECT_REPORTS(seg(), "header: the per-CPU arrays are not where max_cpus 2 puts them");
}

TEST_F(InvariantsTest, ManyViolationsAreCapped) {
    // Every thread slot counted as used but none listed: 8192 violations.
    seg().header.threads_used = kMaxThreads;
    auto found = check_invariants(seg());
    ASSERT_EQ(found.size(), 65u) << joined(found);
    EXPECT_EQ(found.back(), "... and " + std::to_string(kMaxThreads - 64) + " more violations");
}

// ---- arbitrary bytes -----------------------------------------------------------

// A segment with room for kSlots CPU slots on the heap (so ASan sees reads
// past its end) overwritten with words from `fill`, as another process
// could have written them.
class RandomSegment {
  public:
    static constexpr int32_t kSlots = 64;
    template <class Word>
    void fill(Word word) {
        auto* bytes = reinterpret_cast<char*>(segment_.get());
        for (size_t at = 0; at + sizeof(uint32_t) <= kSize; at += sizeof(uint32_t)) {
            const uint32_t w = word();
            std::memcpy(bytes + at, &w, sizeof w);
        }
    }
    // A header that passes the fixed-field checks, so the deeper passes
    // walk the random tables.
    void plausible_header(int32_t cpus) {
        Header& h = segment_->header;
        h.magic.store(kMagic);
        h.abi_version = kAbiVersion;
        h.header_size = sizeof(Header);
        lay_out(*segment_, kSlots);
        h.max_procs = kMaxProcs;
        h.max_threads = kMaxThreads;
        h.max_numa = kMaxNuma;
        h.cpu_count = cpus;
        h.numa_count = 1;
    }
    const Segment& get() const { return *segment_; }

  private:
    static constexpr size_t kSize = segment_layout(kSlots).total;
    struct Free {
        void operator()(Segment* s) const { std::free(s); }
    };
    std::unique_ptr<Segment, Free> segment_{static_cast<Segment*>(std::aligned_alloc(64, kSize))};
};

void expect_well_formed(const std::vector<std::string>& found, uint64_t seed) {
    ASSERT_FALSE(found.empty()) << "seed " << seed;
    EXPECT_LE(found.size(), 65u) << "seed " << seed;
    for (const auto& v : found)
        EXPECT_FALSE(v.empty()) << "seed " << seed;
}

TEST(InvariantsOnRandomBytes, UniformBytes) {
    RandomSegment seg;
    for (uint64_t seed = 0; seed < 40; ++seed) {
        std::mt19937 rng{uint32_t(seed)};
        seg.fill([&] { return uint32_t(rng()); });
        expect_well_formed(check_invariants(seg.get()), seed);
    }
}

TEST(InvariantsOnRandomBytes, PlausibleHeaderAndSmallIndices) {
    // Small words make most indices in range and most states valid: lists
    // get long, cyclic and shared, and every pass runs on garbage.
    RandomSegment seg;
    for (uint64_t seed = 0; seed < 60; ++seed) {
        std::mt19937 rng{uint32_t(seed)};
        const uint32_t span = std::array<uint32_t, 4>{3, 8, 600, 9000}[seed % 4];
        seg.fill([&] { return uint32_t(int32_t(rng() % span) - 1); });
        seg.plausible_header(int32_t(1 + seed % RandomSegment::kSlots));
        expect_well_formed(check_invariants(seg.get()), seed);
    }
}

TEST(InvariantsOnRandomBytes, SoundSegmentWithRandomDamage) {
    // A sound segment, then a few random words overwritten: the checker
    // finds something or nothing, but never misbehaves.
    SegmentOptions o;
    o.isolation = Isolation::Process;
    o.cpu_slots = 2;
    o.initialize = format_two_cpus;
    SegmentError e;
    for (uint64_t seed = 0; seed < 200; ++seed) {
        SegmentMapping map = SegmentMapping::open(o, e);
        ASSERT_TRUE(map) << e.message;
        Segment& s = *map.get();
        SharedScheduler sched(s);
        WakeList w;
        for (int i = 0; i < 3; ++i) {
            int32_t p = sched.procs().register_process(::getpid(), 1, "fuzz");
            for (int k = 0; k < 3; ++k)
                sched.procs().pool_push(
                    sched.procs().alloc_thread(p, 0, "worker", ThreadState::Blocked));
        }
        sched.policy().claim_unheld_cpu(0, {}, w);
        ASSERT_TRUE(check_invariants(s).empty()) << joined(check_invariants(s));
        // Damage where the state is: the header's lists and counters, the
        // CPUs, and the slots in use.
        const std::pair<const void*, size_t> regions[] = {
            {&s.header.thread_free_head,
             sizeof(Header) - (reinterpret_cast<const char*>(&s.header.thread_free_head) -
                               reinterpret_cast<const char*>(&s.header))},
            {&s.cpus[0], 2 * sizeof(CpuSlot)},
            {&s.procs[0], 64},
            {&s.procs[1], 64},
            {&s.procs[2], 64},
            {&s.threads[0], 16 * sizeof(ThreadSlot)},
        };
        std::mt19937 rng{uint32_t(seed)};
        for (int i = 0; i < 1 + int(seed % 4); ++i) {
            const auto& [start, bytes] = regions[rng() % std::size(regions)];
            const size_t at = (rng() % (bytes / 4)) * 4;
            const uint32_t word = rng() % 3 ? uint32_t(int32_t(rng() % 12) - 1) : uint32_t(rng());
            std::memcpy(static_cast<char*>(const_cast<void*>(start)) + at, &word, sizeof word);
        }
        auto found = check_invariants(s);
        EXPECT_LE(found.size(), 65u) << "seed " << seed;
    }
}

} // namespace

// A process joining a corrupt segment gets a clear error from nosv_init and
// never trusts its indices.
TEST(InvariantsAtAttach, ACorruptSegmentIsRefusedAtInit) {
    test::ScopedSegment scoped;
    SegmentOptions o = scoped.options();
    o.create = true;
    o.cpu_slots = 2;
    o.initialize = format_two_cpus;
    SegmentError e;
    SegmentMapping map = SegmentMapping::open(o, e);
    ASSERT_TRUE(map) << e.message;
    SharedScheduler sched(*map.get());
    {
        WakeList w;
        scheduler::SchedulerLock lock(sched, w);
        // A live member (this process), so the join does not reclaim the
        // segment, with a thread count that no table backs.
        ASSERT_NE(sched.procs().register_process(::getpid(), process_start_time(::getpid()), "x"),
                  kNone);
        lock.skip_check();
        map->procs[0].threads.store(7);
    }
    EXPECT_EQ(nosv_init(), NOSV_ERR_UNKNOWN);
    const std::string why = coexec_last_error();
    EXPECT_NE(why.find("is corrupt: process slot 0 counts 7 threads"), std::string::npos) << why;
    EXPECT_NE(why.find("coexec reset --force"), std::string::npos) << why;
    EXPECT_EQ(map->header.alive_count, 1); // untouched
}
