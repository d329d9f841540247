// coexec's own yields are the system call, never the sched_yield() symbol.
// The OpenMP and TBB adapters interpose that symbol as a spin of their own
// threads and mostly return from it without yielding; a thread waiting in
// coexec for its CPU to come back would then spin and keep the thread it
// handed the CPU to from running. This executable interposes sched_yield()
// itself (it exports its symbols) and counts the calls that reach it.
#include "support.hpp"

#include <atomic>

namespace {
std::atomic<int> g_interposed_yields{0};
} // namespace

extern "C" int sched_yield() noexcept {
    g_interposed_yields.fetch_add(1, std::memory_order_relaxed);
    return int(::syscall(SYS_sched_yield));
}

namespace {

constexpr int kHandOffs = 2000;

// Two tasks on one CPU hand it to each other through submit and pause: each
// hand-off finds the other thread waiting for the CPU it gave away.
struct Game {
    nosv_task_t player[2] = {nullptr, nullptr};
    std::atomic<int> steps{kHandOffs};
    std::atomic<bool> done{false};
    std::atomic<int> finished{0};
    nosv_task_t waiter = nullptr;
};
Game g_game;

void play(nosv_task_t self) {
    const int me = self == g_game.player[0] ? 0 : 1;
    nosv_task_t other = g_game.player[1 - me];
    for (;;) {
        if (g_game.steps.fetch_sub(1, std::memory_order_relaxed) <= 0) {
            // Release pairs with the acquire below: the other task ends after us.
            g_game.done.store(true, std::memory_order_release);
            EXPECT_EQ(nosv_submit(other, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
            return;
        }
        EXPECT_EQ(nosv_submit(other, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
        EXPECT_EQ(nosv_pause(NOSV_PAUSE_NONE), NOSV_SUCCESS);
        if (g_game.done.load(std::memory_order_acquire)) return;
    }
}

void completed(nosv_task_t) {
    // acq_rel: the second completion sees everything the first task wrote.
    if (g_game.finished.fetch_add(1, std::memory_order_acq_rel) == 1) {
        EXPECT_EQ(nosv_submit(g_game.waiter, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    }
}

} // namespace

TEST(RawYield, HandOffsOnOneCpuNeverCallTheInterposableSymbol) {
    coexec::test::Instance in("topology.binding=0");
    nosv_task_type_t type = nullptr;
    ASSERT_EQ(nosv_type_init(&type, play, nullptr, completed, "ping-pong", nullptr, nullptr,
                             NOSV_TYPE_INIT_NONE),
              NOSV_SUCCESS);
    g_game.waiter = in.main();
    for (auto& p : g_game.player)
        ASSERT_EQ(nosv_create(&p, type, 0, NOSV_CREATE_NONE), NOSV_SUCCESS);
    const int before = g_interposed_yields.load(std::memory_order_relaxed);
    ASSERT_EQ(nosv_submit(g_game.player[0], NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    ASSERT_EQ(nosv_pause(NOSV_PAUSE_NONE), NOSV_SUCCESS);
    EXPECT_EQ(g_game.finished.load(std::memory_order_acquire), 2);
    EXPECT_EQ(g_interposed_yields.load(std::memory_order_relaxed) - before, 0);
    for (nosv_task_t p : g_game.player)
        EXPECT_EQ(nosv_destroy(p, NOSV_DESTROY_NONE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_type_destroy(type, NOSV_TYPE_DESTROY_NONE), NOSV_SUCCESS);
}
