// HandBackGuess (core/cpu/hand_back.hpp): when a thread that gave its CPU to a
// teammate yields for it, and how it backs off once the CPU stops coming
// back quickly.
#include "core/cpu/hand_back.hpp"

#include <gtest/gtest.h>

using coexec::core::HandBackGuess;

namespace {
// How many of the next `n` waits would yield.
int yielding_waits(HandBackGuess& g, int n) {
    int yielded = 0;
    for (int i = 0; i < n; ++i)
        if (g.worth_yielding()) ++yielded;
    return yielded;
}
} // namespace

TEST(HandBackGuess, YieldsWhileTheCpuComesBack) {
    HandBackGuess g;
    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(g.worth_yielding()) << "wait " << i;
        g.learn(true);
    }
}

TEST(HandBackGuess, EachMissDoublesTheWaitsThatSleepAtOnce) {
    HandBackGuess g;
    for (int skip : {1, 2, 4, 8, 16, 32, 64, 64, 64}) {
        ASSERT_TRUE(g.worth_yielding());
        g.learn(false);
        for (int i = 0; i < skip; ++i)
            ASSERT_FALSE(g.worth_yielding()) << "skip " << skip << ", wait " << i;
    }
}

TEST(HandBackGuess, AHitEndsTheBackOff) {
    HandBackGuess g;
    for (int i = 0; i < 5; ++i) { // backs off to 32 waits
        ASSERT_TRUE(g.worth_yielding());
        g.learn(false);
        yielding_waits(g, 64);
    }
    ASSERT_TRUE(g.worth_yielding());
    g.learn(true);
    EXPECT_EQ(yielding_waits(g, 10), 10) << "a hit: every wait yields again";
    g.learn(false);
    EXPECT_EQ(yielding_waits(g, 2), 1) << "the next miss skips one wait, not 64";
}

TEST(HandBackGuess, LongWaitsYieldOnceIn65) {
    HandBackGuess g;
    int yielded = 0;
    for (int i = 0; i < 6500; ++i)
        if (g.worth_yielding()) {
            ++yielded;
            g.learn(false);
        }
    EXPECT_LE(yielded, 6500 / 65 + 7);
}
