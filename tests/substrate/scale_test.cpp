// Many processes on one segment (docs/design.md, invariant 3): a burst of
// joins all finish, and a full process or thread table is an error for the
// caller, never a silent wait.
#include "support.hpp"

#include "scheduler/shared_scheduler.hpp"
#include "shm/clock.hpp"
#include "shm/liveness.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace coexec;
using namespace std::chrono_literals;
using scheduler::SharedScheduler;
using scheduler::WakeList;
using shm::kNone;

namespace {

// Fewer than kMaxProcs, to keep the suite fast; coexec-bench-many-procs runs 512.
constexpr int kBurstProcs = 128;

// Polls `done` until it holds or `timeout` passes; returns whether it held.
template <class Pred>
bool wait_until(Pred done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

// Why the last nosv_init of a child failed, for the parent to read.
struct InitOutcome {
    std::atomic<int> rc{1};
    char why[256] = {};
    void record(int code) {
        std::strncpy(why, coexec_last_error(), sizeof why - 1);
        rc.store(code);
    }
};

// ---- a burst of joins ---------------------------------------------------

std::atomic<uint32_t> g_task_done{0};

void empty_run(nosv_task_t) {}
void wake_main(nosv_task_t) {
    g_task_done.store(1, std::memory_order_release);
    g_task_done.notify_one();
}

// Waits on `go_fd` with every other child, then joins, runs one task whose
// completed callback wakes this thread, and leaves.
int burst_child(int go_fd, std::atomic<int>& completed) {
    char byte;
    while (::read(go_fd, &byte, 1) < 0 && errno == EINTR) {
    }
    if (nosv_init() != NOSV_SUCCESS) return 2;
    nosv_task_type_t type;
    nosv_task_t task;
    if (nosv_type_init(&type, empty_run, nullptr, wake_main, "burst", nullptr, nullptr,
                       NOSV_TYPE_INIT_NONE) != NOSV_SUCCESS ||
        nosv_create(&task, type, 0, NOSV_CREATE_NONE) != NOSV_SUCCESS ||
        nosv_submit(task, NOSV_SUBMIT_NONE) != NOSV_SUCCESS)
        return 3;
    while (g_task_done.load(std::memory_order_acquire) == 0)
        g_task_done.wait(0, std::memory_order_acquire);
    completed.store(1);
    nosv_destroy(task, NOSV_DESTROY_NONE);
    nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE);
    return nosv_shutdown() == NOSV_SUCCESS ? 0 : 4;
}

struct BurstBoard {
    std::atomic<int> completed[kBurstProcs];
};

TEST(Scale, ABurstOfProcessesJoiningAtOnceAllFinish) {
    test::ScopedSegment seg;
    test::Shared<BurstBoard> board;
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    std::vector<pid_t> children;
    for (int i = 0; i < kBurstProcs; ++i)
        children.push_back(test::fork_child([&, i] {
            ::close(go[1]);
            return burst_child(go[0], board->completed[i]);
        }));
    ::close(go[0]);
    const auto start = std::chrono::steady_clock::now();
    ::close(go[1]); // releases every child at once
    auto completed = [&] {
        int n = 0;
        for (const auto& c : board->completed)
            n += c.load();
        return n;
    };
    // How long the burst takes depends on the machine's load; a burst in
    // which no child completes its task for test::kPatience has hung.
    const bool all = test::wait_while_moving([&] { return completed() == kBurstProcs; }, completed);
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_TRUE(all) << completed() << " of " << kBurstProcs << " children completed their task";
    int finished = 0;
    for (pid_t pid : children) {
        // Once every task completed, each child only shuts down.
        int rc = test::wait_child(pid, all ? std::chrono::milliseconds(test::kPatience) : 1ms);
        EXPECT_EQ(rc, 0) << "child " << pid << (rc == -1 ? " hung" : " failed");
        finished += rc == 0;
    }
    EXPECT_EQ(finished, kBurstProcs);
    for (int i = 0; i < kBurstProcs; ++i)
        EXPECT_EQ(board->completed[i].load(), 1) << "child " << i << ": no completed callback";
    std::printf("%d processes joined at once; every task had run within %.2f s\n", kBurstProcs,
                std::chrono::duration<double>(took).count());
}

// ---- reaping -------------------------------------------------------------

// A reap reads /proc for every member under the segment lock: hundreds of
// monitors and joins must not each run one (issue 15).
TEST(Scale, OneCallerPerIntervalIsElectedToReap) {
    test::ScopedSegment seg;
    shm::SegmentOptions options = seg.options();
    options.create = true;
    shm::SegmentError error;
    auto mapping = shm::SegmentMapping::open(options, error);
    ASSERT_TRUE(mapping) << error.message;
    SharedScheduler sched(*mapping.get());
    constexpr uint64_t kInterval = 40'000'000;
    const uint64_t t0 = shm::now_ns();
    EXPECT_TRUE(sched.watch().claim_reap(t0, kInterval));
    EXPECT_FALSE(sched.watch().claim_reap(t0 + kInterval - 1, kInterval));
    EXPECT_FALSE(sched.watch().claim_reap(t0 - 1, kInterval)); // a clock read before the mark
    EXPECT_TRUE(sched.watch().claim_reap(t0 + kInterval, kInterval));
    // Callers racing at one moment: one wins.
    std::atomic<int> winners{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
        threads.emplace_back(
            [&] { winners += sched.watch().claim_reap(t0 + 3 * kInterval, kInterval); });
    for (auto& t : threads)
        t.join();
    EXPECT_EQ(winners.load(), 1);
}

// ---- a full process table -----------------------------------------------

// A real member that creates the segment and stays until told to leave.
struct MemberBoard {
    std::atomic<int> joined{0};
    std::atomic<int> leave{0};
};

pid_t start_member(MemberBoard& board) {
    pid_t pid = test::fork_child([&] {
        if (nosv_init() != NOSV_SUCCESS) return 2;
        board.joined.store(1);
        while (board.leave.load() == 0)
            std::this_thread::sleep_for(1ms);
        return nosv_shutdown() == NOSV_SUCCESS ? 0 : 3;
    });
    EXPECT_TRUE(wait_until([&] { return board.joined.load() == 1; }, 20s));
    return pid;
}

// Fills every free process slot with `pid`; returns the slots taken.
std::vector<int32_t> fill_process_table(SharedScheduler& sched, pid_t pid, uint64_t start_time) {
    std::vector<int32_t> taken;
    WakeList w;
    scheduler::SchedulerLock lock(sched, w);
    for (int32_t p; (p = sched.procs().register_process(pid, start_time, "filler")) != kNone;)
        taken.push_back(p);
    return taken;
}

void unregister_all(SharedScheduler& sched, const std::vector<int32_t>& procs) {
    WakeList w;
    {
        scheduler::SchedulerLock lock(sched, w);
        for (int32_t p : procs)
            sched.unregister_process(p, w);
    }
    w.flush(sched.segment());
}

// Runs nosv_init (and, if it succeeds, nosv_shutdown) in a new process and
// records what init said in `late`.
void init_in_a_new_process(test::Shared<InitOutcome>& late) {
    pid_t newcomer = test::fork_child([&] {
        int rc = nosv_init();
        late->record(rc);
        if (rc == NOSV_SUCCESS) nosv_shutdown();
        return 0;
    });
    EXPECT_EQ(test::wait_child(newcomer, 20s), 0);
}

int join_and_leave() {
    if (nosv_init() != NOSV_SUCCESS) return 5;
    return nosv_shutdown() == NOSV_SUCCESS ? 0 : 6;
}

// A live member keeps the segment in use while the test maps it and fills
// its process table; the member leaves at the end.
class FullProcessTable : public ::testing::Test {
  protected:
    void SetUp() override {
        member_ = start_member(*member_board_);
        mapping_ = seg_.map();
        ASSERT_TRUE(mapping_);
        sched_.emplace(*mapping_.get());
    }
    void TearDown() override {
        sched_.reset();
        mapping_ = {};
        member_board_->leave.store(1);
        EXPECT_EQ(test::wait_child(member_, 20s), 0);
    }

    SharedScheduler& sched() { return *sched_; }
    shm::SegmentMapping mapping_;

  private:
    test::ScopedSegment seg_;
    test::Shared<MemberBoard> member_board_;
    pid_t member_ = -1;
    std::optional<SharedScheduler> sched_;
};

TEST_F(FullProcessTable, TheProcessAfterItGetsAnErrorFromInit) {
    SharedScheduler& sched = this->sched();
    // The other slots name this test process: alive, so no reap frees them.
    std::vector<int32_t> fillers =
        fill_process_table(sched, ::getpid(), shm::process_start_time(::getpid()));
    ASSERT_EQ(int(fillers.size()), shm::kMaxProcs - 1);

    test::Shared<InitOutcome> late;
    init_in_a_new_process(late);
    EXPECT_EQ(late->rc.load(), NOSV_ERR_OUT_OF_MEMORY);
    EXPECT_NE(std::strstr(late->why, "no free process slot"), nullptr) << late->why;

    // One slot free again: the next process joins (the error was the table's).
    unregister_all(sched, {fillers.back()});
    fillers.pop_back();
    EXPECT_EQ(test::wait_child(test::fork_child(join_and_leave), 20s), 0);

    unregister_all(sched, fillers);
}

TEST_F(FullProcessTable, OfDeadMembersIsReclaimedAtJoin) {
    SharedScheduler& sched = this->sched();
    pid_t gone = test::fork_child([] { return 0; });
    ASSERT_EQ(test::wait_child(gone), 0);
    std::vector<int32_t> fillers = fill_process_table(sched, gone, 1);
    ASSERT_EQ(int(fillers.size()), shm::kMaxProcs - 1);
    // No periodic reap for a while, and the oldest member lives: only the
    // full table makes the join reap.
    ASSERT_TRUE(sched.watch().claim_reap(shm::now_ns() + 60'000'000'000ULL, 0));

    EXPECT_EQ(test::wait_child(test::fork_child(join_and_leave), 20s), 0);
    EXPECT_LT(mapping_->header.alive_count, shm::kMaxProcs);
}

// ---- a full thread table ------------------------------------------------

std::atomic<int> g_blocked{0};
std::atomic<int> g_release{0};
std::atomic<int> g_completed{0};

// Leaves coexec (its worker counts as blocked) until the test releases it.
void block_run(nosv_task_t) {
    if (coexec_block_enter() != NOSV_SUCCESS) std::_Exit(20);
    g_blocked.fetch_add(1);
    while (g_release.load() == 0)
        g_release.wait(0);
    if (coexec_block_exit() != NOSV_SUCCESS) std::_Exit(21);
}
void count_completed(nosv_task_t) {
    g_completed.fetch_add(1);
}

struct ThreadBoard {
    std::atomic<int> full{0};
    std::atomic<int> newcomer_done{0};
    std::atomic<int> blocking_tasks{0};
    std::atomic<int> submit_rc{1};
    std::atomic<int> attach_rc{1};
};

// Joins, fills the thread table, then blocks one worker after another:
// once none is left and none can be made, a fresh task is an error, and so
// is an attach.
int thread_table_child(ThreadBoard& board, const shm::SegmentOptions& options) {
    // Exit codes: 0 as expected; 7 a task waited for a worker for good.
    if (nosv_init() != NOSV_SUCCESS) return 2;
    shm::SegmentError error;
    auto mapping = shm::SegmentMapping::open(options, error);
    if (!mapping) return 3;
    SharedScheduler sched(*mapping.get());
    // Every free thread slot, held by a process slot that names this (live)
    // process, so no reap frees them.
    int32_t filler;
    {
        WakeList w;
        scheduler::SchedulerLock lock(sched, w);
        filler = sched.procs().register_process(::getpid(), shm::process_start_time(::getpid()),
                                                "filler");
        if (filler == kNone) return 4;
        while (sched.procs().alloc_thread(filler, 0, "filler", shm::ThreadState::Blocked) !=
               kNone) {
        }
    }

    nosv_task_type_t type;
    if (nosv_type_init(&type, block_run, nullptr, count_completed, "block", nullptr, nullptr,
                       NOSV_TYPE_INIT_NONE) != NOSV_SUCCESS)
        return 5;
    std::vector<nosv_task_t> tasks;
    for (int i = 0; i < 16; ++i) {
        nosv_task_t t;
        if (nosv_create(&t, type, 0, NOSV_CREATE_NONE) != NOSV_SUCCESS) return 6;
        tasks.push_back(t);
        int rc = nosv_submit(t, NOSV_SUBMIT_NONE);
        if (rc != NOSV_SUCCESS) {
            board.submit_rc.store(rc);
            break;
        }
        // An unblocked worker takes it: waiting here never lasts.
        if (!wait_until([&] { return g_blocked.load() == i + 1; }, 10s)) return 7;
    }
    board.blocking_tasks.store(g_blocked.load());
    nosv_task_t self = nullptr;
    board.attach_rc.store(nosv_attach(&self, nullptr, "late", NOSV_ATTACH_NONE));
    if (board.attach_rc.load() == NOSV_SUCCESS) nosv_detach(NOSV_DETACH_NONE);

    board.full.store(1);
    if (!wait_until([&] { return board.newcomer_done.load() == 1; }, 20s)) return 8;
    unregister_all(sched, {filler});
    mapping = {};
    g_release.store(1);
    g_release.notify_all();
    const int ran = g_blocked.load();
    if (!wait_until([&] { return g_completed.load() == ran; }, 10s)) return 9;
    for (nosv_task_t t : tasks)
        nosv_destroy(t, NOSV_DESTROY_NONE);
    nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE);
    return nosv_shutdown() == NOSV_SUCCESS ? 0 : 10;
}

TEST(Scale, AFullThreadTableIsAnErrorForAttachSubmitAndInit) {
    test::ScopedSegment seg;
    test::Shared<ThreadBoard> board;
    const shm::SegmentOptions options = seg.options();
    pid_t member = test::fork_child([&] { return thread_table_child(*board, options); });
    if (!wait_until([&] { return board->full.load() == 1; }, 30s)) {
        int rc = test::wait_child(member, 1ms);
        FAIL() << "the member never got to a full table: exit code " << rc << " (-1: it hung)";
    }

    test::Shared<InitOutcome> late;
    init_in_a_new_process(late);
    board->newcomer_done.store(1);
    EXPECT_EQ(test::wait_child(member, 30s), 0);

    // Every worker it had (at least the one each member starts with) blocked.
    EXPECT_GE(board->blocking_tasks.load(), 1);
    EXPECT_EQ(board->submit_rc.load(), NOSV_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(board->attach_rc.load(), NOSV_ERR_OUT_OF_MEMORY);
    EXPECT_EQ(late->rc.load(), NOSV_ERR_OUT_OF_MEMORY);
    EXPECT_NE(std::strstr(late->why, "no free thread slot"), nullptr) << late->why;
}

} // namespace
