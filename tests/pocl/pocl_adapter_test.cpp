// End-to-end tests of libcoexec-pocl.so: real OpenCL programs on Debian's
// PoCL, run as child processes with and without the adapter preloaded.
#include "subprocess.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace {

namespace fs = std::filesystem;
using coexec::pocl_testing::Child;
using coexec::pocl_testing::Command;
using coexec::pocl_testing::lines_of;
using coexec::pocl_testing::Outcome;

// How the workload runs.
enum class Mode {
    Stock,    // PoCL as shipped
    Adapter,  // libcoexec-pocl.so preloaded
    Disabled, // preloaded, but COEXEC_DISABLE=1
};

// One scratch directory (and PoCL kernel cache) for the whole test program, so
// that kernels compile once and the user's own cache is never touched; and a
// coexec segment of its own, so that other tests running at the same time
// cannot hold every CPU while these run.
class Scratch : public ::testing::Environment {
  public:
    void SetUp() override {
        std::string pattern = (fs::temp_directory_path() / "coexec-pocl-test-XXXXXX").string();
        ASSERT_NE(mkdtemp(pattern.data()), nullptr);
        dir = pattern;
        fs::create_directories(dir / "cache");
        segment = "pocl-test-" + std::to_string(getpid());
    }
    void TearDown() override;
    static inline fs::path dir;
    static inline std::string segment;
};

Command workload(std::vector<std::string> args, Mode mode) {
    Command c;
    c.argv = {POCL_WORKLOAD};
    c.argv.insert(c.argv.end(), args.begin(), args.end());
    c.env["POCL_CACHE_DIR"] = (Scratch::dir / "cache").string();
    c.env["LD_PRELOAD"] = std::nullopt;
    c.env["COEXEC_DISABLE"] = std::nullopt;
    c.env["NOSV_CONFIG_OVERRIDE"] = "shared_memory.name=" + Scratch::segment;
    if (mode != Mode::Stock) c.env["LD_PRELOAD"] = POCL_ADAPTER;
    if (mode == Mode::Disabled) c.env["COEXEC_DISABLE"] = "1";
    return c;
}

Outcome run(const Command& c) {
    return coexec::pocl_testing::run(c, Scratch::dir.string());
}

Command coexec_cli(std::vector<std::string> args) {
    Command c;
    c.argv = {COEXEC_CLI, "--name", Scratch::segment};
    c.argv.insert(c.argv.end(), args.begin(), args.end());
    return c;
}

// Removes the test segment once its processes are gone (when the CLI is built).
void Scratch::TearDown() {
    if (fs::exists(COEXEC_CLI)) run(coexec_cli({"reset"}));
    fs::remove_all(dir);
}

// Runs `args` stock and under the adapter; both must succeed and print the
// same results.
void expect_same_as_stock(const std::vector<std::string>& args, Command adapted) {
    Outcome stock = run(workload(args, Mode::Stock));
    ASSERT_EQ(stock.exit_code, 0) << stock.err;
    Outcome coexec = run(adapted);
    ASSERT_EQ(coexec.exit_code, 0) << coexec.err;
    EXPECT_FALSE(coexec.out.empty());
    EXPECT_EQ(coexec.out, stock.out);
}

void expect_same_as_stock(const std::vector<std::string>& args) {
    expect_same_as_stock(args, workload(args, Mode::Adapter));
}

unsigned cpus() {
    return std::max(1u, std::thread::hardware_concurrency());
}

TEST(PoclAdapter, KernelShapesMatchStock) {
    expect_same_as_stock({"shapes"});
}

TEST(PoclAdapter, ConcurrentQueuesMatchStock) {
    expect_same_as_stock({"queues", "6", "40"});
}

TEST(PoclAdapter, MoreHostThreadsThanCpusFinish) {
    expect_same_as_stock({"queues", std::to_string(4 * cpus()), "20"});
}

// Host threads that hold coexec CPUs themselves (as under the OpenMP and TBB
// adapters), more of them than CPUs, with PoCL started by one of them.
TEST(PoclAdapter, CoexecHostThreadsGiveTheirCpuToPocl) {
    expect_same_as_stock({"attached-queues", std::to_string(4 * cpus()), "20"});
}

TEST(PoclAdapter, EventsAndCallbacksMatchStock) {
    expect_same_as_stock({"events"});
}

TEST(PoclAdapter, ClFinishFromOpenMPTasksMatchesStock) {
    expect_same_as_stock({"openmp", "32"});
}

TEST(PoclAdapter, ClFinishFromTbbTasksMatchesStock) {
    expect_same_as_stock({"tbb", "32"});
}

// With coexec's libomp as well, the OpenMP threads that call clFinish are
// coexec threads themselves and must give their CPU to PoCL's workers.
TEST(PoclAdapter, ClFinishUnderTheOpenMPAdapterToo) {
    const fs::path omp_dir = OPENMP_ADAPTER_DIR;
    if (!fs::exists(omp_dir / "libomp.so.5")) GTEST_SKIP() << "no OpenMP adapter in " << omp_dir;
    std::vector<std::string> args{"openmp", std::to_string(8 * cpus())};
    Command c = workload(args, Mode::Adapter);
    const char* old_path = std::getenv("LD_LIBRARY_PATH");
    c.env["LD_LIBRARY_PATH"] = omp_dir.string() + (old_path ? std::string(":") + old_path : "");
    expect_same_as_stock(args, c);
}

// The same with coexec's RML server, whose TBB workers are coexec threads.
TEST(PoclAdapter, ClFinishUnderTheTbbAdapterToo) {
    const fs::path irml = TBB_ADAPTER;
    if (!fs::exists(irml)) GTEST_SKIP() << "no TBB adapter at " << irml;
    std::vector<std::string> args{"tbb", std::to_string(8 * cpus())};
    Command c = workload(args, Mode::Adapter);
    c.env["LD_PRELOAD"] = irml.string() + ":" + POCL_ADAPTER;
    expect_same_as_stock(args, c);
}

TEST(PoclAdapter, WorkersAreCoexecThreadsAndNoOthers) {
    Outcome o = run(workload({"identity"}, Mode::Adapter));
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(o.out, "identity worker=coexec plain_thread=none main=none\n");
}

// What the identity workload reports under `coexec run --pocl`, with
// COEXEC_HOST_THREADS set to `host_threads` (unset when null).
std::string identity_under_coexec_run(const char* host_threads) {
    Command c = workload({"identity"}, Mode::Stock);
    c.argv.insert(c.argv.begin(), {COEXEC_CLI, "run", "--pocl", "--"});
    if (host_threads) c.env["COEXEC_HOST_THREADS"] = host_threads;
    Outcome o = run(c);
    EXPECT_EQ(o.exit_code, 0) << o.err;
    return o.out;
}

// The way users start it: `coexec run --pocl -- CMD` on an unmodified binary.
// The workers are coexec threads, hosted once by the adapter, and so are the
// main thread and a thread the program starts, which `coexec run` hosts
// (COEXEC_HOST_THREADS=all, docs/threads.md).
TEST(PoclAdapter, CoexecRunPoclRehostsTheWorkers) {
    if (!fs::exists(COEXEC_CLI)) GTEST_SKIP() << "no coexec CLI at " << COEXEC_CLI;
    EXPECT_EQ(identity_under_coexec_run(nullptr),
              "identity worker=coexec plain_thread=coexec main=coexec\n");
}

// With COEXEC_HOST_THREADS=main, the thread the program starts is not hosted.
TEST(PoclAdapter, CoexecRunHostingTheMainThreadOnly) {
    if (!fs::exists(COEXEC_CLI)) GTEST_SKIP() << "no coexec CLI at " << COEXEC_CLI;
    EXPECT_EQ(identity_under_coexec_run("main"),
              "identity worker=coexec plain_thread=none main=coexec\n");
}

// With COEXEC_HOST_THREADS=none, only the workers are.
TEST(PoclAdapter, CoexecRunWithoutHostingTheMainThread) {
    if (!fs::exists(COEXEC_CLI)) GTEST_SKIP() << "no coexec CLI at " << COEXEC_CLI;
    EXPECT_EQ(identity_under_coexec_run("none"),
              "identity worker=coexec plain_thread=none main=none\n");
}

TEST(PoclAdapter, StockWorkersAreNotCoexecThreads) {
    Outcome o = run(workload({"identity"}, Mode::Stock));
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(o.out, "identity worker=none plain_thread=none main=none\n");
}

TEST(PoclAdapter, DisabledSaysSoOnceAndRunsStock) {
    Outcome stock = run(workload({"shapes"}, Mode::Stock));
    Outcome o = run(workload({"shapes"}, Mode::Disabled));
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(o.out, stock.out);
    auto lines = lines_of(o.err);
    ASSERT_EQ(lines.size(), 1u) << o.err;
    EXPECT_EQ(lines[0].rfind("coexec-pocl:", 0), 0u) << lines[0];

    Outcome identity = run(workload({"identity"}, Mode::Disabled));
    ASSERT_EQ(identity.exit_code, 0) << identity.err;
    EXPECT_EQ(identity.out, "identity worker=none plain_thread=none main=none\n");
}

// nosv_init() fails on a bad configuration value: PoCL must run as stock,
// and the adapter says so in one line of its own (libcoexec may add its
// reason on another line).
TEST(PoclAdapter, InitFailureFallsBackToStock) {
    const std::string bad_level = ",shared_memory.isolation_level=not-a-level";
    Command shapes = workload({"shapes"}, Mode::Adapter);
    shapes.env["NOSV_CONFIG_OVERRIDE"] = *shapes.env["NOSV_CONFIG_OVERRIDE"] + bad_level;
    Outcome stock = run(workload({"shapes"}, Mode::Stock));
    Outcome o = run(shapes);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(o.out, stock.out);
    auto lines = lines_of(o.err);
    auto ours = std::count_if(lines.begin(), lines.end(),
                              [](const std::string& l) { return l.rfind("coexec-pocl:", 0) == 0; });
    EXPECT_EQ(ours, 1) << o.err;

    Command identity = workload({"identity"}, Mode::Adapter);
    identity.env["NOSV_CONFIG_OVERRIDE"] = *identity.env["NOSV_CONFIG_OVERRIDE"] + bad_level;
    Outcome who = run(identity);
    ASSERT_EQ(who.exit_code, 0) << who.err;
    EXPECT_EQ(who.out, "identity worker=none plain_thread=none main=none\n");
}

TEST(PoclAdapter, KernelCacheStillFilled) {
    const fs::path cache = Scratch::dir / "fresh-cache";
    Command c = workload({"shapes"}, Mode::Adapter);
    c.env["POCL_CACHE_DIR"] = cache.string();
    Outcome o = run(c);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    ASSERT_TRUE(fs::exists(cache));
    EXPECT_FALSE(fs::is_empty(cache));
}

TEST(PoclAdapter, WorkloadRejectsBadArguments) {
    Outcome o = run(workload({"queues", "many", "1"}, Mode::Adapter));
    EXPECT_NE(o.exit_code, 0);
    EXPECT_NE(o.err.find("THREADS"), std::string::npos) << o.err;
    EXPECT_EQ(run(workload({"nonsense"}, Mode::Adapter)).exit_code, 2);
}

// True when one `coexec top --once --json` sample shows a CPU held by a thread
// of `pid` labelled "pocl". `sample` receives what top printed.
bool top_shows_pocl_of(pid_t pid, std::string& sample) {
    Outcome o = run(coexec_cli({"top", "--once", "--json"}));
    sample = o.out + o.err;
    if (o.exit_code != 0) return false;
    auto doc = nlohmann::json::parse(o.out, nullptr, false);
    if (doc.is_discarded() || !doc.contains("cpus")) return false;
    // A free CPU has null pid and label.
    for (const auto& cpu : doc["cpus"])
        if (cpu.contains("pid") && cpu["pid"].is_number() && cpu["pid"].get<pid_t>() == pid &&
            cpu.contains("label") && cpu["label"] == "pocl")
            return true;
    return false;
}

TEST(PoclAdapter, TopShowsWorkersLabelledPocl) {
    if (!fs::exists(COEXEC_CLI)) GTEST_SKIP() << "no coexec CLI at " << COEXEC_CLI;
    const fs::path stop = Scratch::dir / "stop-hold";
    // A worker holds its CPU from when it starts the hold's native kernel
    // until the stop file exists: look until top shows it, the workload
    // ended early, or a minute passed (a hang-catcher: it takes well under a
    // second).
    Child child(workload({"hold", stop.string()}, Mode::Adapter), Scratch::dir.string());
    const pid_t pid = child.pid();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    bool seen = false;
    std::string last_sample;
    while (!(seen = top_shows_pocl_of(pid, last_sample)) && !child.exited() &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    std::ofstream(stop.string()).put('\n');
    Outcome o = child.wait();
    EXPECT_EQ(o.exit_code, 0) << o.err;
    EXPECT_TRUE(seen) << "no CPU of pid " << pid << " labelled pocl in coexec top; last:\n"
                      << last_sample << "\nworkload said:\n"
                      << o.out << o.err;
}

// An OpenMP root in serial code keeps its CPU between regions (the OpenMP
// adapter's default root policy). While it waits in clFinish it lends that
// CPU, so that PoCL's workers can use every CPU, as they do natively, rather
// than only the others until the keep's grace period ends. The trace shows
// the root's CPU lent.
TEST(PoclAdapter, AnOpenMPRootInClFinishLendsItsKeptCpu) {
    if (!fs::exists(COEXEC_CLI)) GTEST_SKIP() << "no coexec CLI at " << COEXEC_CLI;
    const fs::path omp_dir = OPENMP_ADAPTER_DIR;
    if (!fs::exists(omp_dir / "libomp.so.5")) GTEST_SKIP() << "no OpenMP adapter in " << omp_dir;
    const fs::path trace = Scratch::dir / "regions-and-kernels.json";
    Command c = coexec_cli(
        {"record", "-o", trace.string(), "--", POCL_WORKLOAD, "regions-and-kernels", "50"});
    c.env = workload({}, Mode::Adapter).env;
    const char* old_path = std::getenv("LD_LIBRARY_PATH");
    c.env["LD_LIBRARY_PATH"] = omp_dir.string() + (old_path ? std::string(":") + old_path : "");
    Outcome o = run(c);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_NE(o.out.find("regions-and-kernels rounds=50 ok"), std::string::npos) << o.out;
    std::ifstream in(trace);
    auto doc = nlohmann::json::parse(in, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << "no trace at " << trace;
    int root_lends = 0, pocl_slices = 0;
    for (const auto& e : doc["traceEvents"]) {
        if (e.value("ph", "") != "X" || !e.contains("args")) continue;
        const auto& a = e["args"];
        pocl_slices += a.value("label", "") == "pocl";
        root_lends += a.value("label", "") == "openmp" && a.value("state", "") == "lent" &&
                      a.value("tid", -1) == a.value("pid", -2);
    }
    EXPECT_GT(pocl_slices, 0) << "PoCL's workers never held a CPU";
    EXPECT_GT(root_lends, 0) << "the OpenMP root never lent its CPU while it waited";
}

} // namespace

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new Scratch);
    return RUN_ALL_TESTS();
}
