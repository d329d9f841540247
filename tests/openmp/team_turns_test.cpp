// The team-turn decisions of the OpenMP shim (adapters/openmp/shim/
// team_turns.hpp), step by step at given times: which team has the turn,
// when it passes on, and when a wait keeps its CPU. Header-only; needs
// neither libomp nor a scheduler. What turns gain under load is measured by
// benchmarks/openmp/omp_bench.py, not here.
#include "team_turns.hpp"

#include <coexec/ext.h>

#include <gtest/gtest.h>

#include <ostream>

namespace coexec::openmp {
void PrintTo(Shares shares, std::ostream* os) {
    *os << (shares == Shares::short_ones  ? "short_ones"
            : shares == Shares::long_ones ? "long_ones"
                                          : "unknown");
}
} // namespace coexec::openmp

namespace {

using coexec::openmp::kNextRegionNs;
using coexec::openmp::kShortShareNs;
using coexec::openmp::RegionShares;
using coexec::openmp::Shares;
using coexec::openmp::TeamTurns;
using coexec::openmp::TeamWait;

constexpr unsigned long kUs = 1'000;

// Two teams (their addresses stand for libomp's kmp_team_t).
int team_a = 0, team_b = 0;
const void* const a = &team_a;
const void* const b = &team_b;

// ---- RegionShares (suite TeamTurnsShares) -----------------------------------

// Forks `count` regions of `team` from `*now` on, whose shares each take
// `share` ns, 100 us apart; advances `*now`.
void regions(RegionShares& shares, const void* team, int count, unsigned long share,
             unsigned long* now) {
    for (int i = 0; i < count; ++i) {
        shares.forked(*now);
        *now += share;
        shares.waits(team, *now);
        *now += 100 * kUs;
    }
}

TEST(TeamTurnsShares, UnknownBeforeAnyShareAndForOtherTeams) {
    RegionShares shares;
    EXPECT_EQ(shares.of(a), Shares::unknown);
    EXPECT_EQ(shares.of(nullptr), Shares::unknown);
    unsigned long now = 1'000 * kUs;
    regions(shares, a, 1, 5 * kUs, &now);
    EXPECT_EQ(shares.of(a), Shares::short_ones);
    EXPECT_EQ(shares.of(b), Shares::unknown) << "the caller is not b's primary";
    EXPECT_EQ(shares.of(nullptr), Shares::unknown);
}

TEST(TeamTurnsShares, ShortSharesAreShort) {
    RegionShares shares;
    unsigned long now = 1'000 * kUs;
    for (int i = 0; i < 20; ++i) {
        regions(shares, a, 1, kShortShareNs / 2, &now);
        EXPECT_EQ(shares.of(a), Shares::short_ones) << "after region " << i;
    }
}

// Shares just above the threshold are long, and so are shares far above
// it, each counted as twice the threshold.
TEST(TeamTurnsShares, LongSharesAreLong) {
    for (unsigned long share : {kShortShareNs + kShortShareNs / 4, 1'000'000 * kUs}) {
        RegionShares shares;
        unsigned long now = 1'000 * kUs;
        for (int i = 0; i < 20; ++i) {
            regions(shares, a, 1, share, &now);
            EXPECT_EQ(shares.of(a), Shares::long_ones) << share << " ns, after region " << i;
        }
    }
}

// The kernel ran another program in the middle of one region: a share of a
// second among short ones counts as twice the threshold, and the shares
// stay short.
TEST(TeamTurnsShares, OneVerySlowShareAmongShortOnesKeepsThemShort) {
    RegionShares shares;
    unsigned long now = 1'000 * kUs;
    regions(shares, a, 16, 10 * kUs, &now);
    ASSERT_EQ(shares.of(a), Shares::short_ones);
    regions(shares, a, 1, 1'000'000 * kUs, &now);
    EXPECT_EQ(shares.of(a), Shares::short_ones);
    regions(shares, a, 8, 10 * kUs, &now);
    EXPECT_EQ(shares.of(a), Shares::short_ones);
}

// Regions that grow long make the shares long within about eight regions.
TEST(TeamTurnsShares, SharesThatGrowLongBecomeLong) {
    RegionShares shares;
    unsigned long now = 1'000 * kUs;
    regions(shares, a, 16, 10 * kUs, &now);
    ASSERT_EQ(shares.of(a), Shares::short_ones);
    regions(shares, a, 8, 1'000 * kUs, &now);
    EXPECT_EQ(shares.of(a), Shares::long_ones);
}

// Only the first wait after a fork ends the share; waits without a fork
// (a worker's, or the join after the worksharing ended) change nothing.
TEST(TeamTurnsShares, OnlyTheFirstWaitAfterAForkEndsTheShare) {
    RegionShares shares;
    EXPECT_FALSE(shares.measuring());
    shares.waits(a, 1'000 * kUs);
    EXPECT_EQ(shares.of(a), Shares::unknown) << "a wait without a fork";
    for (unsigned long t = 2'000 * kUs; t < 50'000 * kUs; t += 2'000 * kUs) {
        shares.forked(t);
        EXPECT_TRUE(shares.measuring());
        shares.waits(a, t + 5 * kUs);
        EXPECT_FALSE(shares.measuring());
        shares.waits(a, t + 1'000 * kUs); // the join, long after
    }
    EXPECT_EQ(shares.of(a), Shares::short_ones);
}

// A thread that forks regions of another team starts afresh: long shares of
// its old team do not count against the new one's first short share.
TEST(TeamTurnsShares, ANewTeamStartsAfresh) {
    RegionShares shares;
    unsigned long now = 1'000 * kUs;
    regions(shares, a, 16, 1'000 * kUs, &now);
    ASSERT_EQ(shares.of(a), Shares::long_ones);
    regions(shares, b, 1, 5 * kUs, &now);
    EXPECT_EQ(shares.of(b), Shares::short_ones);
    EXPECT_EQ(shares.of(a), Shares::unknown);
}

// ---- TeamTurns --------------------------------------------------------------

constexpr unsigned long kLength = 20'000 * kUs; // a quantum
constexpr unsigned long kStart = 1'000'000 * kUs;

// Turns on, a quantum long.
void turn_on(TeamTurns& turns) {
    turns.configure(true, kLength);
}

// Alone, a team with short shares takes the free turn, but without
// contention it has no priority and its waits keep no CPU.
TEST(TeamTurns, AloneATeamTakesTheTurnWithoutPriority) {
    TeamTurns turns;
    turn_on(turns);
    EXPECT_FALSE(turns.woken(a, Shares::short_ones, kStart));
    EXPECT_FALSE(turns.woken(a, Shares::short_ones, kStart + 1));
    EXPECT_FALSE(turns.has_turn(a, kStart + 2));
    // It took the turn: another team contending now waits for it.
    EXPECT_FALSE(turns.woken(b, Shares::short_ones, kStart + 3));
    EXPECT_FALSE(turns.has_turn(b, kStart + 4));
}

// A team whose shares are unknown or long takes no free turn.
TEST(TeamTurns, OnlyShortSharesTakeAFreeTurn) {
    TeamTurns turns;
    turn_on(turns);
    EXPECT_FALSE(turns.woken(a, Shares::unknown, kStart));
    EXPECT_FALSE(turns.woken(a, Shares::long_ones, kStart + 1));
    // The turn is still free: b takes it, and a's next wake, short now,
    // finds b's turn running.
    EXPECT_FALSE(turns.woken(b, Shares::short_ones, kStart + 2));
    EXPECT_FALSE(turns.woken(a, Shares::short_ones, kStart + 3));
    EXPECT_TRUE(turns.woken(b, Shares::short_ones, kStart + 4));
    EXPECT_TRUE(turns.has_turn(b, kStart + 5));
    EXPECT_FALSE(turns.has_turn(a, kStart + 5));
}

// Another team woken while the turn runs gets no priority and marks the
// turn contended: from then on the owner's wakes have priority and its
// waits keep their CPUs.
TEST(TeamTurns, ContentionGivesTheOwnerPriority) {
    TeamTurns turns;
    turn_on(turns);
    ASSERT_FALSE(turns.woken(a, Shares::short_ones, kStart));
    EXPECT_FALSE(turns.has_turn(a, kStart + 1));
    EXPECT_FALSE(turns.woken(b, Shares::short_ones, kStart + 2));
    EXPECT_TRUE(turns.has_turn(a, kStart + 3));
    EXPECT_FALSE(turns.has_turn(b, kStart + 3));
    EXPECT_TRUE(turns.woken(a, Shares::short_ones, kStart + 4));
    EXPECT_TRUE(turns.woken(a, Shares::unknown, kStart + 5)) << "only long shares end it early";
    EXPECT_FALSE(turns.woken(b, Shares::short_ones, kStart + 6));
}

// The turn lasts length_ns: the owner's first wake after it ends the turn,
// and the team whose turn ended waits one more turn for another to take
// the next; the other takes it at once, with priority.
TEST(TeamTurns, TheTurnEndsAfterItsLengthAndPassesOn) {
    TeamTurns turns;
    turn_on(turns);
    ASSERT_FALSE(turns.woken(a, Shares::short_ones, kStart));
    ASSERT_FALSE(turns.woken(b, Shares::short_ones, kStart + 1));
    EXPECT_TRUE(turns.has_turn(a, kStart + kLength - 1));
    EXPECT_FALSE(turns.has_turn(a, kStart + kLength)) << "over, although a was not woken";
    const unsigned long end = kStart + kLength + 10;
    EXPECT_FALSE(turns.woken(a, Shares::short_ones, end));
    EXPECT_FALSE(turns.has_turn(a, end + 1));
    EXPECT_FALSE(turns.woken(a, Shares::short_ones, end + 2)) << "a waits one more turn";
    EXPECT_FALSE(turns.has_turn(a, end + 3));
    EXPECT_TRUE(turns.woken(b, Shares::short_ones, end + 4)) << "b takes the turn over";
    EXPECT_TRUE(turns.has_turn(b, end + 5));
    EXPECT_FALSE(turns.has_turn(a, end + 5));
    EXPECT_FALSE(turns.woken(a, Shares::short_ones, end + 6));
    EXPECT_TRUE(turns.woken(b, Shares::short_ones, end + 4 + kLength - 1));
}

// When no other team takes the next turn, the team whose turn ended takes
// it again one turn later.
TEST(TeamTurns, TheLastTeamTakesTheTurnAgainWhenNoOtherDoes) {
    TeamTurns turns;
    turn_on(turns);
    ASSERT_FALSE(turns.woken(a, Shares::short_ones, kStart));
    const unsigned long end = kStart + kLength;
    ASSERT_FALSE(turns.woken(a, Shares::short_ones, end));
    EXPECT_FALSE(turns.woken(a, Shares::short_ones, end + kLength - 1));
    EXPECT_FALSE(turns.woken(a, Shares::short_ones, end + kLength));
    // a has it: b contending now waits.
    EXPECT_FALSE(turns.woken(b, Shares::short_ones, end + kLength + 1));
    EXPECT_TRUE(turns.has_turn(a, end + kLength + 2));
}

// An owner that stopped waking threads past its turn loses it to the next
// team that is woken, which gets priority.
TEST(TeamTurns, AnotherTeamTakesOverATurnThatRanOut) {
    TeamTurns turns;
    turn_on(turns);
    ASSERT_FALSE(turns.woken(a, Shares::short_ones, kStart));
    EXPECT_TRUE(turns.woken(b, Shares::short_ones, kStart + kLength));
    EXPECT_TRUE(turns.has_turn(b, kStart + kLength + 1));
    EXPECT_FALSE(turns.has_turn(a, kStart + kLength + 1));
}

// Regions that grew long give the turn up at once, and the other team
// takes it.
TEST(TeamTurns, LongSharesGiveTheTurnUp) {
    TeamTurns turns;
    turn_on(turns);
    ASSERT_FALSE(turns.woken(a, Shares::short_ones, kStart));
    ASSERT_FALSE(turns.woken(b, Shares::short_ones, kStart + 1));
    ASSERT_TRUE(turns.has_turn(a, kStart + 2));
    EXPECT_FALSE(turns.woken(a, Shares::long_ones, kStart + 3));
    EXPECT_FALSE(turns.has_turn(a, kStart + 4));
    EXPECT_TRUE(turns.woken(b, Shares::short_ones, kStart + 5));
    EXPECT_TRUE(turns.has_turn(b, kStart + 6));
}

// Contention lasts two turns after the last contending wake: a turn that
// starts later has no priority.
TEST(TeamTurns, ContentionEndsTwoTurnsAfterTheLastContendingWake) {
    TeamTurns turns;
    turn_on(turns);
    ASSERT_FALSE(turns.woken(a, Shares::short_ones, kStart));
    ASSERT_FALSE(turns.woken(b, Shares::short_ones, kStart + 1));
    const unsigned long end = kStart + kLength;
    ASSERT_FALSE(turns.woken(a, Shares::short_ones, end));
    // No one took the next turn; a takes it again after b's contention
    // (kStart + 1 + 2 turns) ran out.
    const unsigned long again = kStart + 1 + 2 * kLength;
    EXPECT_FALSE(turns.woken(a, Shares::short_ones, again));
    EXPECT_FALSE(turns.has_turn(a, again + 1));
}

TEST(TeamTurns, OffNeverGivesATurn) {
    TeamTurns turns;
    turns.configure(false, kLength);
    for (unsigned long t = kStart; t < kStart + 3 * kLength; t += kLength / 4) {
        EXPECT_FALSE(turns.woken(a, Shares::short_ones, t));
        EXPECT_FALSE(turns.woken(b, Shares::short_ones, t + 1));
        EXPECT_FALSE(turns.has_turn(a, t + 2));
        EXPECT_FALSE(turns.has_turn(b, t + 2));
    }
}

TEST(TeamTurns, NoTeamHasNoTurn) {
    TeamTurns turns;
    turn_on(turns);
    EXPECT_FALSE(turns.woken(nullptr, Shares::short_ones, kStart));
    EXPECT_FALSE(turns.has_turn(nullptr, kStart + 1));
    // The turn is still free.
    ASSERT_FALSE(turns.woken(a, Shares::short_ones, kStart + 2));
    ASSERT_FALSE(turns.woken(b, Shares::short_ones, kStart + 3));
    EXPECT_TRUE(turns.has_turn(a, kStart + 4));
}

// A time read before another thread started the turn (the clock is read
// before the mutex is taken) counts as the turn's start: the turn is
// neither over nor taken over.
TEST(TeamTurns, ATimeFromBeforeTheTurnDoesNotEndIt) {
    TeamTurns turns;
    turn_on(turns);
    ASSERT_FALSE(turns.woken(a, Shares::short_ones, kStart));
    EXPECT_FALSE(turns.woken(b, Shares::short_ones, kStart - 5));
    EXPECT_TRUE(turns.has_turn(a, kStart - 4));
    EXPECT_TRUE(turns.woken(a, Shares::short_ones, kStart - 3));
    EXPECT_FALSE(turns.has_turn(b, kStart + 1));
}

// ---- TeamWait (suite TeamTurnsWait) -----------------------------------------

int on_cpus(void* thr) {
    return *static_cast<int*>(thr);
}

TEST(TeamTurnsWait, NeverKeepsTheCpuFromAnotherProcessOrWithoutTheTurn) {
    int teammates_on_cpus = 1;
    TeamWait wait;
    wait.begins(on_cpus, &teammates_on_cpus, a);
    EXPECT_EQ(wait.team(), a);
    EXPECT_FALSE(wait.keeps_cpu(COEXEC_CPU_WANTED_ELSEWHERE, true, kStart));
    EXPECT_FALSE(
        wait.keeps_cpu(COEXEC_CPU_WANTED_HERE | COEXEC_CPU_WANTED_ELSEWHERE, true, kStart));
    EXPECT_FALSE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, false, kStart));
    EXPECT_TRUE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, kStart));
}

// A wait for teammates keeps the CPU while they all hold CPUs, however
// long.
TEST(TeamTurnsWait, AWaitForTeammatesKeepsTheCpuWhileTheyHoldCpus) {
    int teammates_on_cpus = 1;
    TeamWait wait;
    wait.begins(on_cpus, &teammates_on_cpus, a);
    EXPECT_TRUE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, kStart));
    EXPECT_TRUE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, kStart + 100 * kNextRegionNs));
    teammates_on_cpus = 0;
    EXPECT_FALSE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, kStart + 100 * kNextRegionNs));
}

// A wait for the next region keeps the CPU for kNextRegionNs from the first
// time it is asked; the next wait starts its own.
TEST(TeamTurnsWait, AWaitForTheNextRegionKeepsTheCpuForABoundedTime) {
    TeamWait wait;
    wait.begins(nullptr, nullptr, a);
    EXPECT_TRUE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, kStart));
    EXPECT_TRUE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, kStart + kNextRegionNs - 1));
    EXPECT_FALSE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, kStart + kNextRegionNs));
    wait.ends();
    EXPECT_EQ(wait.team(), nullptr);
    const unsigned long later = kStart + 10 * kNextRegionNs;
    wait.begins(nullptr, nullptr, a);
    EXPECT_TRUE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, later));
    EXPECT_TRUE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, later + kNextRegionNs - 1));
    EXPECT_FALSE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, later + kNextRegionNs));
}

// Asked while the turn is not its team's, the wait does not start the
// next-region time: it starts when the team has the turn.
TEST(TeamTurnsWait, TheNextRegionTimeStartsWithTheTurn) {
    TeamWait wait;
    wait.begins(nullptr, nullptr, a);
    EXPECT_FALSE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, false, kStart));
    const unsigned long turn = kStart + 10 * kNextRegionNs;
    EXPECT_TRUE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, turn));
    EXPECT_TRUE(wait.keeps_cpu(COEXEC_CPU_WANTED_HERE, true, turn + kNextRegionNs - 1));
}

} // namespace
