// The start gate (benchmarks/oversubscription/common/start_gate.hpp and
// benchmarks/python/bench_common.py): a program that run.py starts beside others holds its
// timed work until every process has entered the gate directory, and its steady time leaves
// the wait out.
#include "process.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <unistd.h>

namespace {

using ovs::program;
using ovs::run;

struct Program {
    const char* name;
    std::string command;
};

std::string python_program() {
    // bench_common alone: no NumPy needed.
    return std::string("/usr/bin/python3 -c \"import sys; sys.path.insert(0, '") + BENCH_PY_DIR +
           "'); import bench_common; bench_common.run_timed(lambda: 'done')\"";
}

class StartGate : public testing::TestWithParam<Program> {
  protected:
    void SetUp() override {
        if (GetParam().command.rfind("/usr/bin/python3", 0) == 0 &&
            access("/usr/bin/python3", X_OK) != 0)
            GTEST_SKIP() << "no /usr/bin/python3";
    }
    // The program's command line with the gate's variables. One OpenMP
    // thread: the work is milliseconds alone, but two spinning libgomp
    // threads beside other tests once stretched it to most of a second.
    std::string gated(const std::string& procs) const {
        return "env OMP_NUM_THREADS=1 BENCH_START_GATE=" + dir_.path("") +
               " BENCH_START_GATE_PROCS=" + procs + " " + GetParam().command;
    }
    ovs::TempDir dir_;
};

TEST_P(StartGate, HoldsTheWorkUntilEveryProcessEntered) {
    // Nobody else enters: the program is still at the gate when `timeout` stops it.
    const auto held = run("timeout 1 " + gated("2"));
    EXPECT_EQ(held.exit_code, 124) << held.text;
    EXPECT_EQ(held.text.find("Steady seconds:"), std::string::npos) << held.text;
}

TEST_P(StartGate, StartsOnceTheLastProcessEntersAndLeavesTheWaitOut) {
    // The second process enters two seconds after the program started. The
    // shell notes the time just before it enters and again once the program
    // has exited. A program that starts its steady clock only when the gate
    // opens measures a span inside that window, however slow the machine; one
    // that counted its wait at the gate would measure the two seconds before
    // the window too. An ordering, not a bound on how long the work takes.
    const auto out =
        run("(" + gated("2") + ") & sleep 2; echo \"shell: entered at $(date +%s.%N)\"; touch " +
            dir_.path("other") +
            "; wait $!; rc=$?; echo \"shell: exited at $(date +%s.%N)\"; exit $rc");
    ASSERT_EQ(out.exit_code, 0) << out.text;
    const double steady = ovs::number_after(out.text, "Steady seconds: ");
    const double entered = ovs::number_after(out.text, "shell: entered at ");
    const double exited = ovs::number_after(out.text, "shell: exited at ");
    ASSERT_FALSE(std::isnan(steady) || std::isnan(entered) || std::isnan(exited)) << out.text;
    // The slack covers the printed steady time's rounding and the two clocks
    // (the program's monotonic one, the shell's real-time one).
    EXPECT_LE(steady, exited - entered + 0.01) << out.text;
}

TEST_P(StartGate, UnusableVariablesAreReportedAndTheProgramRunsOn) {
    for (const char* procs : {"x", "0", "-3", ""}) {
        const auto out = run(gated(std::string("'") + procs + "'"));
        EXPECT_EQ(out.exit_code, 0) << procs << "\n" << out.text;
        if (*procs) {
            EXPECT_NE(out.text.find("is not a process count"), std::string::npos) << out.text;
        }
        EXPECT_NE(out.text.find("Steady seconds:"), std::string::npos) << out.text;
    }
    const auto missing = run("BENCH_START_GATE=" + dir_.path("no/such/dir") +
                             " BENCH_START_GATE_PROCS=2 " + GetParam().command);
    EXPECT_EQ(missing.exit_code, 0) << missing.text;
    EXPECT_NE(missing.text.find("start gate: "), std::string::npos) << missing.text;
    EXPECT_NE(missing.text.find("starting now"), std::string::npos) << missing.text;
}

INSTANTIATE_TEST_SUITE_P(
    Programs, StartGate,
    testing::Values(
        Program{"hpccg_forkjoin", program("hpccg-clang") + " 8 8 8 --spmv omp --iters 10"},
        Program{"hpccg_tasks", program("hpccg-gcc") + " 8 8 8 --mode tasks --iters 10"},
        Program{"gpt2", program("gpt2-gcc") + " --layers 1 --heads 2 --channels 16 --vocab 64"
                                              " --max-seq 8 --batch 1 --steps 2 --mode serial"},
        Program{"python", python_program()}),
    [](const testing::TestParamInfo<Program>& info) { return std::string(info.param.name); });

} // namespace
