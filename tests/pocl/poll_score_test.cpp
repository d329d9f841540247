// The rule that decides whether a thread waiting inside PoCL polls first.
#include "adapters/pocl/src/poll_score.hpp"

#include <gtest/gtest.h>

namespace {

using coexec::pocl::PollScore;

// How many of the next `n` episodes `s` would poll in.
int polled_of(PollScore& s, int n) {
    int polled = 0;
    for (int i = 0; i < n; ++i)
        polled += s.worth_polling();
    return polled;
}

TEST(PollScore, ANewThreadPolls) {
    PollScore s;
    EXPECT_TRUE(s.worth_polling());
}

// Episodes that keep losing (a waiting host wants the CPU within a few
// µs) stop the polling, except for one probe in eight.
TEST(PollScore, LosingEpisodesStopPollingButProbesGoOn) {
    PollScore s;
    for (int i = 0; i < 10; ++i)
        s.lost();
    EXPECT_EQ(polled_of(s, 80), 10);
}

// A few wins after losses bring polling back; the score is bounded, so a
// long run of wins is undone by a few losses, not by as many.
TEST(PollScore, WinsBringPollingBackAndTheScoreIsBounded) {
    PollScore s;
    for (int i = 0; i < 10; ++i)
        s.lost();
    for (int i = 0; i < 5; ++i)
        s.won();
    EXPECT_EQ(polled_of(s, 8), 8);
    for (int i = 0; i < 100; ++i)
        s.won();
    for (int i = 0; i < 4; ++i)
        s.lost();
    EXPECT_LT(polled_of(s, 8), 8);
}

} // namespace
