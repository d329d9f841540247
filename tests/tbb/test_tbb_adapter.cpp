// Tests of the oneTBB adapter (libirml.so.1) with real processes: an
// unmodified TBB program (tbb_scenarios) runs with and without the adapter
// preloaded, and must give the same results, never hang, and, under the
// adapter, run its workers as coexec threads.
//
// Paths come from the build: TBB_SCENARIOS, COEXEC_IRML, COEXEC_CLI.

#include "child_process.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sched.h>
#include <sstream>
#include <unistd.h>

namespace coexec::tbb_test {
namespace {

using namespace std::chrono_literals;

constexpr auto scenario_timeout = 90s;

// Environment with the adapter preloaded (and no inherited switches).
EnvChanges adapted(EnvChanges extra = {}) {
    extra.emplace("LD_PRELOAD", COEXEC_IRML);
    extra.emplace("COEXEC_DISABLE", std::nullopt);
    return extra;
}

// Environment without the adapter.
EnvChanges native() {
    return {{"LD_PRELOAD", std::nullopt}};
}

Outcome run_scenario(const std::string& name, const EnvChanges& env) {
    return run_command({TBB_SCENARIOS, name}, env, scenario_timeout);
}

// Fails the test unless the child exited 0 in time; returns its stdout.
std::string expect_success(const Outcome& outcome) {
    EXPECT_FALSE(outcome.timed_out) << "timed out (deadlock?); stderr:\n" << outcome.err;
    EXPECT_EQ(outcome.signal, 0) << "killed by signal; stderr:\n" << outcome.err;
    EXPECT_EQ(outcome.exit_code, 0) << "stderr:\n" << outcome.err;
    return outcome.out;
}

int usable_cpus() {
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

size_t count_lines(const std::string& text) {
    std::istringstream in(text);
    size_t lines = 0;
    for (std::string line; std::getline(in, line);)
        ++lines;
    return lines;
}

size_t count_lines_with(const std::string& text, const std::string& part) {
    std::istringstream in(text);
    size_t lines = 0;
    for (std::string line; std::getline(in, line);)
        lines += line.find(part) != std::string::npos;
    return lines;
}

// Gives each test process a coexec instance of its own (inherited by every
// child, coexec top and coexec run included), so that other suites running
// at the same time cannot disturb these tests, and removes it afterwards.
class PrivateInstance : public ::testing::Environment {
  public:
    void SetUp() override {
        const std::string name = "tbbtest-" + std::to_string(getpid());
        segment_ = "/dev/shm/coexec." + name + ".u" + std::to_string(geteuid());
        setenv("NOSV_CONFIG_OVERRIDE", ("shared_memory.name=" + name).c_str(), 1);
        unsetenv("COEXEC_CONFIG_OVERRIDE");
    }
    void TearDown() override {
        std::error_code ignored;
        std::filesystem::remove(segment_, ignored);
    }

  private:
    std::filesystem::path segment_;
};

const auto* const private_instance = ::testing::AddGlobalTestEnvironment(new PrivateInstance);

// ---- Same results with and without the adapter ------------------------------

class SameResult : public ::testing::TestWithParam<const char*> {};

TEST_P(SameResult, WithAndWithoutAdapter) {
    const std::string stock = expect_success(run_scenario(GetParam(), native()));
    const std::string hosted = expect_success(run_scenario(GetParam(), adapted()));
    ASSERT_FALSE(stock.empty());
    EXPECT_EQ(hosted, stock);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, SameResult,
                         ::testing::Values("parallel_for", "parallel_reduce", "task_group",
                                           "flow_graph", "nested_arenas", "limited_arena",
                                           "global_control", "exit_busy", "finalize",
                                           "oversubscribed_barrier"));

// ---- The workers are coexec threads -------------------------------------------

TEST(TbbAdapter, WorkersAreCoexecThreadsPinnedToOneCpu) {
    if (usable_cpus() < 2) GTEST_SKIP() << "TBB starts no worker on one CPU";
    EXPECT_EQ(expect_success(run_scenario("worker_identity", native())),
              "worker_identity plain pinned=not-all sees=process\n");
    // libirml alone loads libcoexec after libc: the workers see their pin.
    const std::string out = expect_success(run_scenario("worker_identity", adapted()));
    EXPECT_EQ(out.rfind("worker_identity coexec pinned=all sees=", 0), 0u) << out;
}

// With libcoexec before libc (as `coexec run` preloads it), the workers,
// pinned by coexec, show the process's mask (docs/affinity.md): a library
// that sizes a pool from it inside TBB work sees the machine.
TEST(TbbAdapter, PinnedWorkersShowTheProcessMaskWhenLibcoexecComesFirst) {
    if (usable_cpus() < 2) GTEST_SKIP() << "TBB starts no worker on one CPU";
    EnvChanges env = adapted();
    env["LD_PRELOAD"] = std::string(COEXEC_LIB) + ":" + COEXEC_IRML;
    EXPECT_EQ(expect_success(run_scenario("worker_identity", env)),
              "worker_identity coexec pinned=all sees=process\n");
}

// The program's own thread is a coexec thread while it runs TBB work
// (adapters/tbb/master.h), and outside it keeps the mask it had.
TEST(TbbAdapter, TheMainThreadIsACoexecThreadWhileItRunsTbbWork) {
    EXPECT_EQ(expect_success(run_scenario("master_identity", native())),
              "master_identity before=plain for=plain wait=plain mask=process\n");
    EXPECT_EQ(expect_success(run_scenario("master_identity", adapted())),
              "master_identity before=plain for=task wait=task mask=process\n");
    EnvChanges off = adapted({{"COEXEC_TBB_MASTER", "off"}});
    EXPECT_EQ(expect_success(run_scenario("master_identity", off)),
              "master_identity before=plain for=plain wait=plain mask=process\n");
}

TEST(TbbAdapter, AnUnknownMasterSettingIsReportedAndTheDefaultUsed) {
    const Outcome outcome =
        run_scenario("master_identity", adapted({{"COEXEC_TBB_MASTER", "sometimes"}}));
    EXPECT_EQ(expect_success(outcome),
              "master_identity before=plain for=task wait=task mask=process\n");
    EXPECT_NE(outcome.err.find("COEXEC_TBB_MASTER=sometimes"), std::string::npos) << outcome.err;
}

TEST(TbbAdapter, RunningWorkersNeverExceedManagedCpus) {
    const std::string out = expect_success(run_scenario("worker_peak", adapted()));
    int peak = -1;
    ASSERT_EQ(std::sscanf(out.c_str(), "worker_peak %d", &peak), 1) << out;
    EXPECT_GE(peak, usable_cpus() > 1 ? 1 : 0);
    EXPECT_LE(peak, usable_cpus());
}

TEST(TbbAdapter, VerboseModeSaysWhenTbbConnects) {
    const Outcome outcome = run_scenario("parallel_for", adapted({{"COEXEC_VERBOSE", "1"}}));
    expect_success(outcome);
    EXPECT_NE(outcome.err.find("coexec tbb: TBB connected"), std::string::npos) << outcome.err;
}

TEST(TbbAdapter, QuietByDefault) {
    const Outcome outcome = run_scenario("parallel_for", adapted({{"COEXEC_VERBOSE", "0"}}));
    expect_success(outcome);
    EXPECT_EQ(outcome.err.find("coexec tbb:"), std::string::npos) << outcome.err;
}

// ---- Fallback when coexec must not or cannot start ----------------------------

TEST(TbbAdapter, DisabledFallsBackToStockTbbWithOneLine) {
    const Outcome outcome = run_scenario("worker_identity", adapted({{"COEXEC_DISABLE", "1"}}));
    const std::string out = expect_success(outcome);
    if (usable_cpus() >= 2) {
        EXPECT_EQ(out, "worker_identity plain pinned=not-all sees=process\n");
    }
    EXPECT_EQ(count_lines(outcome.err), 1u) << outcome.err;
    EXPECT_NE(outcome.err.find("COEXEC_DISABLE"), std::string::npos) << outcome.err;
}

TEST(TbbAdapter, UnusableSegmentFallsBackToStockTbbWithOneLine) {
    // A segment file others may write to (an unused corrupt one would just
    // be formatted afresh): nosv_init() must refuse it.
    const std::string name = "tbbtest-unusable-" + std::to_string(getpid());
    const std::filesystem::path segment =
        "/dev/shm/coexec." + name + ".u" + std::to_string(geteuid());
    {
        std::ofstream garbage(segment);
        garbage << "garbage";
    }
    std::filesystem::permissions(segment, std::filesystem::perms::owner_read |
                                              std::filesystem::perms::owner_write |
                                              std::filesystem::perms::others_write);
    const Outcome outcome = run_scenario(
        "parallel_reduce", adapted({{"NOSV_CONFIG_OVERRIDE", "shared_memory.name=" + name},
                                    {"NOSV_CONFIG", std::nullopt}}));
    std::filesystem::remove(segment);
    const std::string stock = expect_success(run_scenario("parallel_reduce", native()));
    EXPECT_EQ(expect_success(outcome), stock);
    // libcoexec may explain the cause on a line of its own; the adapter adds one.
    EXPECT_EQ(count_lines_with(outcome.err, "coexec tbb:"), 1u) << outcome.err;
    EXPECT_NE(outcome.err.find("cannot start coexec"), std::string::npos) << outcome.err;
}

// ---- Seen from outside: coexec top and coexec run -----------------------------

bool have_cli() {
    return std::filesystem::exists(COEXEC_CLI);
}

// The hold scenario's workers spin without a scheduling point until told to
// stop, so they hold their CPUs whenever top looks.
TEST(TbbAdapter, CoexecTopLabelsTheWorkersTbb) {
    if (!have_cli()) GTEST_SKIP() << "coexec CLI not built: " << COEXEC_CLI;
    if (usable_cpus() < 2) GTEST_SKIP() << "TBB starts no worker on one CPU";
    ChildProcess child({TBB_SCENARIOS, "hold"}, adapted());
    ASSERT_TRUE(child.wait_for_line("busy", scenario_timeout));
    const Outcome top = run_command({COEXEC_CLI, "top", "--once", "--json"}, {}, 30s);
    const std::string finished = expect_success(child.finish(scenario_timeout));
    EXPECT_NE(finished.find("hold done"), std::string::npos);
    ASSERT_EQ(top.exit_code, 0) << top.err;
    const auto view = nlohmann::json::parse(top.out);
    int tbb_cpus = 0;
    for (const auto& cpu : view.at("cpus")) {
        // Free CPUs carry null pid and label.
        const auto& pid = cpu.at("pid");
        const auto& label = cpu.at("label");
        if (pid.is_number() && pid.get<pid_t>() == child.pid() && label.is_string() &&
            label.get<std::string>() == "tbb")
            ++tbb_cpus;
    }
    EXPECT_GE(tbb_cpus, 1) << top.out;
}

TEST(TbbAdapter, CoexecRunTbbHostsTheWorkers) {
    if (!have_cli()) GTEST_SKIP() << "coexec CLI not built: " << COEXEC_CLI;
    if (usable_cpus() < 2) GTEST_SKIP() << "TBB starts no worker on one CPU";
    const Outcome outcome =
        run_command({COEXEC_CLI, "run", "--tbb", "--", TBB_SCENARIOS, "worker_identity"},
                    {{"LD_PRELOAD", std::nullopt}}, scenario_timeout);
    EXPECT_EQ(expect_success(outcome), "worker_identity coexec pinned=all sees=process\n");
}

// ---- Bad input ----------------------------------------------------------------

TEST(TbbAdapter, UnknownScenarioIsAnErrorNotACrash) {
    const Outcome outcome = run_scenario("no-such-scenario", adapted());
    EXPECT_FALSE(outcome.timed_out);
    EXPECT_EQ(outcome.exit_code, 2);
    EXPECT_NE(outcome.err.find("usage:"), std::string::npos);
}

} // namespace
} // namespace coexec::tbb_test
