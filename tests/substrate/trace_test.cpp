// The trace rings: the lock-free protocol in shared memory (overflow,
// concurrent writers in several processes, a writer that died mid-record),
// and the scheduler's recording of ownership changes while a recorder is on.
#include "support.hpp"

#include "scheduler/shared_scheduler.hpp"
#include "shm/trace_ring.hpp"

#include <gtest/gtest.h>
#include <nosv/hwinfo.h>

#include <atomic>
#include <cstring>
#include <set>
#include <vector>

namespace coexec {
namespace {

using shm::kTraceRingSize;
using shm::TraceEvent;
using shm::TraceKind;
using shm::TraceRing;
using shm::TraceRingReader;

constexpr uint64_t kRing = kTraceRingSize;

// A record whose every field derives from (writer, k), so a torn one shows.
TraceEvent make_event(int writer, uint64_t k) {
    TraceEvent e;
    e.time_ns = k * 8 + uint64_t(writer);
    e.kind = TraceKind(1 + (k % 13));
    e.cpu = int32_t(k % 200);
    e.pid = writer + 1;
    e.tid = int32_t(k ^ 0x5a5aU);
    e.proc = int32_t(k % 500);
    e.thread = int32_t(k % 8000);
    e.detail = k;
    e.label.fill(char('a' + writer));
    e.label[0] = char('0' + k % 10);
    return e;
}

bool whole(const TraceEvent& e) {
    const int writer = e.pid - 1;
    if (writer < 0 || writer > 25) return false;
    const TraceEvent want = make_event(writer, e.detail);
    return e.time_ns == want.time_ns && e.kind == want.kind && e.cpu == want.cpu &&
           e.tid == want.tid && e.proc == want.proc && e.thread == want.thread &&
           e.label == want.label;
}

TEST(TraceRing, ReaderGetsEveryRecordInOrder) {
    test::Shared<TraceRing> ring;
    TraceRingReader reader;
    reader.start(*ring);
    std::vector<TraceEvent> got;
    for (uint64_t k = 0; k < 3 * kRing; ++k) {
        ASSERT_TRUE(shm::trace_append(*ring, make_event(0, k)));
        if (k % 100 == 99) reader.poll(*ring, got);
    }
    reader.poll(*ring, got);
    ASSERT_EQ(got.size(), 3 * kRing);
    EXPECT_EQ(reader.overwritten() + reader.unfinished() + reader.pending(), 0u);
    for (uint64_t k = 0; k < got.size(); ++k) {
        EXPECT_EQ(got[k].detail, k);
        EXPECT_TRUE(whole(got[k]));
    }
    EXPECT_EQ(got[5].label_text(), "5" + std::string(shm::kTraceLabelSize - 1, 'a'));
}

TEST(TraceRing, OverflowDropsTheOldestAndCountsThem) {
    test::Shared<TraceRing> ring;
    TraceRingReader reader;
    reader.start(*ring);
    const uint64_t written = 3 * kRing + 5;
    for (uint64_t k = 0; k < written; ++k)
        shm::trace_append(*ring, make_event(1, k));
    std::vector<TraceEvent> got;
    reader.poll(*ring, got);
    ASSERT_EQ(got.size(), kRing);
    EXPECT_EQ(reader.overwritten(), written - kRing);
    EXPECT_EQ(got.front().detail, written - kRing); // the newest ring's worth
    EXPECT_EQ(got.back().detail, written - 1);
    // A reader started later sees only what comes after its start.
    TraceRingReader late;
    late.start(*ring);
    shm::trace_append(*ring, make_event(1, 7777));
    std::vector<TraceEvent> more;
    late.poll(*ring, more);
    ASSERT_EQ(more.size(), 1u);
    EXPECT_EQ(more[0].detail, 7777u);
    EXPECT_EQ(late.overwritten() + late.unfinished() + late.pending(), 0u);
}

// Writers in four processes append to one ring while this process reads
// it: every record read is whole and read once, and read + lost ==
// written.
TEST(TraceRing, ConcurrentWritersInProcesses) {
    struct Board {
        TraceRing ring;
        std::atomic<int> go{0};
        std::atomic<int> done{0};
        std::atomic<uint64_t> dropped{0};
    };
    test::Shared<Board> board;
    constexpr int kWriters = 4;
    constexpr uint64_t kEach = 20000;
    TraceRingReader reader;
    reader.start(board->ring);
    std::vector<pid_t> kids;
    for (int w = 0; w < kWriters; ++w)
        kids.push_back(test::fork_child([&, w] {
            while (board->go.load() == 0) {
            }
            for (uint64_t k = 0; k < kEach; ++k) {
                if (!shm::trace_append(board->ring, make_event(w, k))) board->dropped.fetch_add(1);
                // About a microsecond between records, so the reader reads
                // while they write (and still falls behind at times).
                for (const uint64_t until = test::now_ns() + 1000; test::now_ns() < until;) {
                }
            }
            board->done.fetch_add(1);
            return 0;
        }));
    board->go.store(1);
    std::vector<TraceEvent> got;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (board->done.load() < kWriters && std::chrono::steady_clock::now() < deadline)
        reader.poll(board->ring, got);
    for (pid_t k : kids)
        EXPECT_EQ(test::wait_child(k), 0);
    // Every writer is done: a record still pending was dropped by its
    // writer, and never completes.
    reader.poll(board->ring, got);
    const uint64_t total = kWriters * kEach;
    EXPECT_EQ(reader.position(), total);
    EXPECT_LE(reader.pending(), board->dropped.load());
    reader.abandon_pending();
    EXPECT_EQ(got.size() + reader.overwritten() + reader.unfinished(), total);
    EXPECT_GE(reader.unfinished() + reader.overwritten(), board->dropped.load());
    EXPECT_GE(got.size(), kRing); // at least the last ring's worth
    std::set<std::pair<int, uint64_t>> seen;
    for (const auto& e : got) {
        ASSERT_TRUE(whole(e)) << "torn record: pid " << e.pid << " k " << e.detail;
        EXPECT_TRUE(seen.insert({e.pid - 1, e.detail}).second)
            << "writer " << e.pid - 1 << " record " << e.detail << " read twice";
    }
}

// A writer descheduled between its claim and its publication: the reader
// reads on past the record, and reads it once it is complete.
TEST(TraceRing, ARecordFinishedLateIsReadLate) {
    test::Shared<TraceRing> ring;
    TraceRingReader reader;
    reader.start(*ring);
    // Index 0 claimed, not written yet; index 1 written.
    ring->head.store(1);
    ring->records[0].seq.store(1);
    ASSERT_TRUE(shm::trace_append(*ring, make_event(3, 1)));
    std::vector<TraceEvent> got;
    reader.poll(*ring, got);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].detail, 1u);
    EXPECT_EQ(reader.pending(), 1u);
    reader.poll(*ring, got); // still being written
    EXPECT_EQ(got.size(), 1u);
    // The writer wakes up and finishes index 0: its payload, then `seq`.
    test::Shared<TraceRing> scratch;
    ASSERT_TRUE(shm::trace_append(*scratch, make_event(3, 0)));
    for (int i = 0; i < 7; ++i)
        ring->records[0].words[i].store(scratch->records[0].words[i].load());
    ring->records[0].seq.store(2);
    reader.poll(*ring, got);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1].detail, 0u);
    EXPECT_TRUE(whole(got[1]));
    EXPECT_EQ(reader.pending(), 0u);
    EXPECT_EQ(reader.overwritten() + reader.unfinished(), 0u);
}

// A writer killed between its claim and its publication leaves its slot
// marked "being written": the reader keeps the record pending until it
// gives up on it (or a lap takes the slot), and counts it unfinished. Later
// writers leave the slot alone (they cannot tell a dead writer from a slow
// one), dropping one record per lap, which readers count the same way.
TEST(TraceRing, WriterThatDiedMidRecord) {
    test::Shared<TraceRing> ring;
    TraceRingReader reader;
    reader.start(*ring);
    ring->head.store(1);
    ring->records[0].seq.store(1); // index 0, being written
    std::vector<TraceEvent> got;
    reader.poll(*ring, got);
    EXPECT_EQ(reader.position(), 1u);
    EXPECT_EQ(reader.pending(), 1u);
    reader.abandon_pending();
    EXPECT_EQ(reader.pending(), 0u);
    EXPECT_EQ(reader.unfinished(), 1u);
    EXPECT_TRUE(got.empty());
    // Slot 0 still says "index 0 being written": a writer a lap on (index
    // kRing) drops its record there, the next one (slot 1) is kept; a
    // reader reads on past the dropped one, and counts it unfinished once
    // the next lap (index 2 * kRing) takes its slot.
    ring->head.store(kRing);
    TraceRingReader after;
    after.start(*ring);
    EXPECT_FALSE(shm::trace_append(*ring, make_event(2, 1)));
    EXPECT_TRUE(shm::trace_append(*ring, make_event(2, 2)));
    after.poll(*ring, got);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].detail, 2u);
    EXPECT_EQ(after.pending(), 1u);
    for (uint64_t k = 3; k <= kRing + 1; ++k) // the last one is index 2 * kRing
        shm::trace_append(*ring, make_event(2, k));
    after.poll(*ring, got);
    EXPECT_EQ(after.pending(), 1u); // index 2 * kRing, dropped in turn
    EXPECT_EQ(after.unfinished(), 1u);
    EXPECT_EQ(after.overwritten(), 0u);
    EXPECT_EQ(got.size(), kRing - 1);
}

// Reads every CPU ring and the process ring of `s` from `readers`.
std::vector<TraceEvent> poll_all(shm::Segment& s, std::vector<TraceRingReader>& readers) {
    std::vector<TraceEvent> out;
    for (int r = 0; r < shm::trace_ring_count(s.header); ++r)
        readers[size_t(r)].poll(s.traces[r], out);
    return out;
}

uint64_t heads(const shm::Segment& s) {
    uint64_t sum = 0;
    for (int r = 0; r < shm::trace_ring_count(s.header); ++r)
        sum += s.traces[r].head.load();
    return sum;
}

TEST(TraceRecording, OwnershipChangesAreWrittenOnlyWhileARecorderIsOn) {
    test::ScopedSegment seg;
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    shm::SegmentMapping m = seg.map();
    ASSERT_TRUE(m);
    scheduler::SharedScheduler sched(*m.get());
    nosv_task_t task;
    const uint64_t before = heads(*m.get());
    ASSERT_EQ(nosv_attach(&task, nullptr, "untraced", NOSV_ATTACH_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
    EXPECT_EQ(heads(*m.get()), before) << "records written with recording off";

    std::vector<TraceRingReader> readers(size_t(shm::trace_ring_count(m->header)));
    for (int r = 0; r < shm::trace_ring_count(m->header); ++r)
        readers[size_t(r)].start(m->traces[r]);
    auto locked = [&](auto&& change) {
        scheduler::WakeList wakes;
        {
            scheduler::SchedulerLock lock(sched, wakes);
            change();
        }
        wakes.flush(*m.get());
    };
    bool added = false;
    locked(
        [&]() COEXEC_REQUIRES(scheduler::segment_lock) { added = sched.add_recorder(::getpid()); });
    ASSERT_TRUE(added);
    const uint64_t t0 = test::now_ns();
    ASSERT_EQ(nosv_attach(&task, nullptr, "traced", NOSV_ATTACH_NONE), NOSV_SUCCESS);
    const int cpu = nosv_get_current_logical_cpu();
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
    // A member joining and leaving: the process ring.
    pid_t child = test::fork_child([] { return nosv_init() == 0 && nosv_shutdown() == 0 ? 0 : 1; });
    ASSERT_EQ(test::wait_child(child), 0);
    std::vector<TraceEvent> got = poll_all(*m.get(), readers);
    locked([&]() COEXEC_REQUIRES(scheduler::segment_lock) { sched.remove_recorder(::getpid()); });
    EXPECT_FALSE(sched.recording());

    const TraceEvent* grant = nullptr;
    const TraceEvent* gone = nullptr;
    const TraceEvent* join = nullptr;
    const TraceEvent* leave = nullptr;
    for (const auto& e : got) {
        if (e.cpu == cpu && e.tid == ::gettid()) {
            if (e.kind == TraceKind::Grant && !grant) grant = &e;
            if ((e.kind == TraceKind::Release || e.kind == TraceKind::Idle) && grant && !gone)
                gone = &e;
        }
        if (e.pid == child && e.kind == TraceKind::Join) join = &e;
        if (e.pid == child && e.kind == TraceKind::Leave) leave = &e;
    }
    ASSERT_NE(grant, nullptr) << "no grant of CPU " << cpu << " to this thread";
    EXPECT_EQ(grant->pid, ::getpid());
    EXPECT_EQ(grant->label_text(), "traced");
    EXPECT_GE(grant->time_ns, t0);
    ASSERT_NE(gone, nullptr) << "the detach left no trace";
    EXPECT_GE(gone->time_ns, grant->time_ns);
    ASSERT_NE(join, nullptr);
    ASSERT_NE(leave, nullptr);
    EXPECT_EQ(join->cpu, shm::kNone);
    EXPECT_LE(join->time_ns, leave->time_ns);
    EXPECT_FALSE(join->label_text().empty()); // the process name
    EXPECT_STREQ(shm::trace_kind_name(TraceKind::Preempt), "preempt");
    EXPECT_STREQ(shm::trace_kind_name(TraceKind(200)), "?");

    const uint64_t after = heads(*m.get());
    ASSERT_EQ(nosv_attach(&task, nullptr, "untraced", NOSV_ATTACH_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
    EXPECT_EQ(heads(*m.get()), after) << "records written after the recorder stopped";
    m = {};
    EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
}

// A recorder that dies without switching off is removed at the next reap;
// live ones stay, and at most kMaxRecorders record at once.
TEST(TraceRecording, ADeadRecorderIsRemovedAtTheNextReap) {
    test::ScopedSegment seg;
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    shm::SegmentMapping m = seg.map();
    ASSERT_TRUE(m);
    scheduler::SharedScheduler sched(*m.get());
    auto locked = [&](auto&& change) {
        scheduler::WakeList wakes;
        {
            scheduler::SchedulerLock lock(sched, wakes);
            change();
        }
        wakes.flush(*m.get());
    };
    // The child only takes the lock and touches the shared mapping, then
    // exits without switching off, as a recorder killed by SIGKILL would.
    pid_t child = test::fork_child([&] {
        bool added = false;
        locked([&]() COEXEC_REQUIRES(scheduler::segment_lock) {
            added = sched.add_recorder(::getpid());
        });
        return added ? 0 : 1;
    });
    ASSERT_EQ(test::wait_child(child), 0);
    EXPECT_TRUE(sched.recording());
    auto reap = [&] {
        scheduler::WakeList wakes;
        const auto dead = sched.watch().find_dead(test::now_ns(), 0);
        {
            scheduler::SchedulerLock lock(sched, wakes);
            sched.reap(dead, wakes);
        }
        wakes.flush(*m.get());
    };
    reap();
    EXPECT_FALSE(sched.recording());
    locked([&]() COEXEC_REQUIRES(scheduler::segment_lock) {
        for (int i = 0; i < shm::kMaxRecorders; ++i)
            EXPECT_TRUE(sched.add_recorder(::getpid()));
        EXPECT_FALSE(sched.add_recorder(::getpid()));
    });
    reap();
    EXPECT_TRUE(sched.recording());
    locked([&]() COEXEC_REQUIRES(scheduler::segment_lock) {
        for (int i = 0; i < shm::kMaxRecorders; ++i)
            sched.remove_recorder(::getpid());
    });
    EXPECT_FALSE(sched.recording());
    EXPECT_EQ(m->header.trace_recorders.load(), 0u);
    m = {};
    EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
}

} // namespace
} // namespace coexec
