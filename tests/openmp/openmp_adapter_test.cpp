// Real OpenMP programs (clang- and GCC-built) on the re-hosted libomp, loaded
// the way `coexec run --openmp` loads it: through LD_LIBRARY_PATH.
#include "subprocess.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using coexec::test::lines;
using coexec::test::ProcessResult;
using coexec::test::run;
using coexec::test::Subprocess;
using namespace std::chrono_literals;

namespace {

const std::string kOmpDir = COEXEC_TEST_OMP_DIR;
const std::string kProgramDir = COEXEC_TEST_PROGRAM_DIR;
const std::string kCoexecCli = COEXEC_TEST_CLI;

// A segment of its own per test, so tests running side by side (and other
// areas' tests) never share CPUs with this one.
std::string segment_override(const std::string& tag) {
    return "shared_memory.name=omptest-" + tag + "-" + std::to_string(getpid());
}

std::map<std::string, std::string> rehosted_env(const std::string& tag) {
    return {{"LD_LIBRARY_PATH", kOmpDir},
            {"COEXEC_VERBOSE", "1"},
            {"COEXEC_CONFIG_OVERRIDE", segment_override(tag)}};
}

std::string program(const std::string& name, const std::string& compiler) {
    return kProgramDir + "/" + name + "_" + compiler;
}

bool contains(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

// What omp_features runs when given no feature name.
const std::vector<std::string> kDefaultFeatures = {"reduction", "oversubscribed", "set_num_threads",
                                                   "nested",    "tasks",          "pause",
                                                   "fork",      "hidden_helper",  "root_affinity"};

struct FeatureCase {
    std::string compiler;
    std::string feature;
};

void PrintTo(const FeatureCase& c, std::ostream* os) {
    *os << c.compiler << "/" << c.feature;
}

class Features : public ::testing::TestWithParam<FeatureCase> {};

// Each feature computes and checks its results inside the program; here we
// check that it ran re-hosted (the verbose line) and succeeded.
TEST_P(Features, RunsCorrectlyRehosted) {
    const auto& c = GetParam();
    const ProcessResult r = run({program("omp_features", c.compiler), c.feature},
                                rehosted_env(c.compiler + c.feature), 120s);
    ASSERT_FALSE(r.timed_out) << "hung; stderr:\n" << r.err;
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "ok " + c.feature)) << r.out;
    EXPECT_TRUE(contains(r.err, "coexec: libomp re-hosted on coexec")) << r.err;
    EXPECT_FALSE(contains(r.err, "runs without coexec (")) << r.err; // no init failure
}

std::vector<FeatureCase> feature_cases() {
    std::vector<FeatureCase> cases;
    for (const char* compiler : {"clang", "gcc"})
        for (const std::string& f : kDefaultFeatures)
            cases.push_back({compiler, f});
    return cases;
}

INSTANTIATE_TEST_SUITE_P(OpenMP, Features, ::testing::ValuesIn(feature_cases()),
                         [](const auto& info) {
                             return info.param.compiler + "_" + info.param.feature;
                         });

// The same program with coexec disabled: one line on stderr, stock results.
TEST(Fallback, DisabledPrintsOneLineAndWorks) {
    for (const char* compiler : {"clang", "gcc"}) {
        auto env = rehosted_env("disabled");
        env.erase("COEXEC_VERBOSE");
        env["COEXEC_DISABLE"] = "1";
        const ProcessResult r = run({program("omp_features", compiler)}, env, 120s);
        ASSERT_FALSE(r.timed_out);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(
            lines(r.err),
            std::vector<std::string>{"coexec: libomp runs without coexec (COEXEC_DISABLE is set)"})
            << compiler;
        EXPECT_EQ(lines(r.out).size(), kDefaultFeatures.size()) << r.out;
    }
}

// An unusable configuration makes nosv_init() fail: one line, stock results.
TEST(Fallback, InitFailurePrintsOneLineAndWorks) {
    const ProcessResult r = run(
        {program("omp_features", "clang"), "reduction", "tasks"},
        {{"LD_LIBRARY_PATH", kOmpDir}, {"COEXEC_CONFIG_OVERRIDE", "shared_memory.name=bad/name"}},
        60s);
    ASSERT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    // Exactly one line on stderr, and it says why.
    const std::vector<std::string> err = lines(r.err);
    ASSERT_EQ(err.size(), 1u) << r.err;
    EXPECT_TRUE(err[0].starts_with("coexec: libomp runs without coexec (")) << err[0];
    EXPECT_NE(err[0].find("shared_memory.name"), std::string::npos) << err[0];
    EXPECT_EQ(lines(r.out), (std::vector<std::string>{"ok reduction", "ok tasks"}));
}

// ---- Two OpenMP processes at once ------------------------------------------

// The share of /proc samples in which two such processes have more runnable
// threads than CPUs, native and re-hosted, is a measurement:
// `benchmarks/openmp/omp_bench.py runnable` prints it. The per-CPU invariant
// is checked here from the segment.

// Samples `coexec top --once --json` while two re-hosted processes run:
// every CPU has at most one owner, no thread owns two CPUs, and the OpenMP
// threads of these processes own CPUs under the label "openmp".
// OpenMP runtimes under other names: Intel's libiomp5.so, and the hashed
// copies that pip wheels ship (libgomp-<hash>.so.1). A program linked
// against such a copy of a stock runtime runs on the re-hosted libomp under
// `coexec run`, whose preloaded libomp.so.5 answers the runtime's symbols
// first. The copies are made as a wheel's build makes them, with Debian's
// patchelf.
struct RenamedCase {
    std::string compiler; // which omp_features build
    std::string stock;    // the stock runtime it is linked against
    std::string needed;   // its name in the program's DT_NEEDED
    std::string renamed;  // the copy's name
};

void PrintTo(const RenamedCase& c, std::ostream* os) {
    *os << c.renamed;
}

class RenamedRuntime : public ::testing::TestWithParam<RenamedCase> {};

TEST_P(RenamedRuntime, IsRehostedUnderCoexecRun) {
    const RenamedCase& c = GetParam();
    const std::string patchelf = "/usr/bin/patchelf";
    if (!fs::exists(kCoexecCli)) GTEST_SKIP() << kCoexecCli << " is not built";
    if (!fs::exists(patchelf))
        GTEST_SKIP() << "patchelf is not installed (scripts/deps/openmp.txt)";
    if (!fs::exists(c.stock)) GTEST_SKIP() << c.stock << " is not installed";
    const fs::path dir = fs::temp_directory_path() /
                         ("coexec-renamed-" + c.compiler + "-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string prog = (dir / "omp_features").string();
    fs::copy_file(program("omp_features", c.compiler), prog);
    fs::copy_file(c.stock, dir / c.renamed);
    // One change per call: patchelf 0.14 drops the first of the two on some
    // binaries when given both at once.
    for (const std::vector<std::string>& change :
         {std::vector<std::string>{"--replace-needed", c.needed, c.renamed},
          std::vector<std::string>{"--set-rpath", dir.string()}}) {
        std::vector<std::string> argv{patchelf};
        argv.insert(argv.end(), change.begin(), change.end());
        argv.push_back(prog);
        const ProcessResult patched = run(argv, {}, 60s);
        ASSERT_EQ(patched.exit_code, 0) << patched.err;
    }
    const ProcessResult needed = run({patchelf, "--print-needed", prog}, {}, 20s);
    const std::vector<std::string> names = lines(needed.out);
    ASSERT_NE(std::find(names.begin(), names.end(), c.renamed), names.end()) << needed.out;
    ASSERT_EQ(std::find(names.begin(), names.end(), c.needed), names.end()) << needed.out;

    // Without coexec it runs on the renamed stock copy.
    const ProcessResult native = run({prog, "reduction"}, {{"COEXEC_VERBOSE", "1"}}, 60s);
    EXPECT_EQ(native.exit_code, 0) << native.err;
    EXPECT_TRUE(contains(native.out, "ok reduction")) << native.out;
    EXPECT_FALSE(contains(native.err, "re-hosted on coexec")) << native.err;

    // Under `coexec run` on the re-hosted libomp, with the same result.
    const ProcessResult hosted =
        run({kCoexecCli, "run", "--openmp", "--", prog, "reduction"},
            {{"COEXEC_VERBOSE", "1"},
             {"COEXEC_CONFIG_OVERRIDE", segment_override("renamed-" + c.compiler)}},
            120s);
    ASSERT_FALSE(hosted.timed_out) << "hung; stderr:\n" << hosted.err;
    EXPECT_EQ(hosted.exit_code, 0) << hosted.err;
    EXPECT_TRUE(contains(hosted.out, "ok reduction")) << hosted.out;
    EXPECT_TRUE(contains(hosted.err, "coexec: libomp re-hosted on coexec")) << hosted.err;
    fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(OpenMP, RenamedRuntime,
                         ::testing::Values(RenamedCase{"clang", "/usr/lib/llvm-14/lib/libomp.so.5",
                                                       "libomp.so.5", "libiomp5.so"},
                                           RenamedCase{"gcc",
                                                       "/usr/lib/x86_64-linux-gnu/libgomp.so.1",
                                                       "libgomp.so.1", "libgomp-a34b3233.so.1"}),
                         [](const auto& info) { return info.param.compiler; });

TEST(TwoProcesses, TopShowsOneOpenmpThreadPerCpu) {
    if (!fs::exists(kCoexecCli)) GTEST_SKIP() << kCoexecCli << " is not built";
    const auto env = rehosted_env("top");
    Subprocess a({program("omp_spin", "clang"), "3"}, env);
    Subprocess b({program("omp_spin", "gcc"), "3"}, env);
    auto top_once = [&] {
        return run({kCoexecCli, "top", "--once", "--json"},
                   {{"COEXEC_CONFIG_OVERRIDE", env.at("COEXEC_CONFIG_OVERRIDE")}}, 20s);
    };
    // Until the first of them has created the segment (slow on a loaded
    // machine), top finds none.
    for (int i = 0; i < 200 && top_once().exit_code != 0 && a.running(); ++i)
        std::this_thread::sleep_for(50ms);
    int seen_ours = 0;
    for (int i = 0; i < 15 && a.running() && b.running(); ++i) {
        const ProcessResult top = top_once();
        ASSERT_EQ(top.exit_code, 0) << top.err;
        const auto doc = nlohmann::json::parse(top.out);
        std::set<long> cpus, tids;
        for (const auto& cpu : doc.at("cpus")) {
            EXPECT_TRUE(cpus.insert(cpu.at("cpu").get<long>()).second) << "CPU listed twice";
            if (cpu.at("tid").is_null() || cpu.at("tid").get<long>() <= 0) continue;
            EXPECT_TRUE(tids.insert(cpu.at("tid").get<long>()).second) << "a thread owns two CPUs";
            const auto pid = cpu.at("pid").get<pid_t>();
            if (pid != a.pid() && pid != b.pid()) continue;
            // Our OpenMP threads, or libcoexec's own worker of that process.
            const auto label = cpu.at("label").get<std::string>();
            EXPECT_TRUE(label == "openmp" || label == "worker") << label;
            if (label == "openmp") ++seen_ours;
        }
        std::this_thread::sleep_for(100ms);
    }
    EXPECT_GT(seen_ours, 0) << "no re-hosted thread ever owned a CPU";
    EXPECT_EQ(a.wait(60s).exit_code, 0);
    EXPECT_EQ(b.wait(60s).exit_code, 0);
}

// Runs `a` and `b` at once, `rounds` times; each round both must finish
// within 60 s and succeed. `hang` says what a timeout means.
void expect_pair_finishes(const std::vector<std::string>& a_argv,
                          const std::vector<std::string>& b_argv,
                          const std::map<std::string, std::string>& env, int rounds,
                          const char* hang) {
    for (int round = 0; round < rounds; ++round) {
        Subprocess a(a_argv, env);
        Subprocess b(b_argv, env);
        const ProcessResult ra = a.wait(60s);
        const ProcessResult rb = b.wait(60s);
        ASSERT_FALSE(ra.timed_out || rb.timed_out) << "round " << round << ": " << hang;
        ASSERT_EQ(ra.exit_code, 0) << ra.err;
        ASSERT_EQ(rb.exit_code, 0) << rb.err;
    }
}

// Two processes whose every thread waits on hidden helper tasks in taskwait:
// each team gets fewer CPUs than it has threads, so a waiter that found no
// task must let a teammate run. libomp's taskwait loop never yields by
// itself; this hung in about one round of five before the adapter made it.
TEST(TwoProcesses, TaskwaitLetsTeammatesRun) {
    const std::vector<std::string> storm{program("omp_features", "clang"), "taskwait_storm"};
    expect_pair_finishes(storm, storm, rehosted_env("taskwait"), 8, "a taskwait starved its team");
}

// Two processes whose teams of two busy-wait in user code for each other's
// turn (no OpenMP call in the loop). Each process ends up holding one CPU
// with its other thread waiting; only the preemption safety net gets the
// waiting thread a CPU. Before it, this deadlocked in every run (as LLVM's
// kmp_atomic_cas.c and kmp_atomic_cas_cpt.c did when lit ran them together).
TEST(TwoProcesses, UserSpinHandshakesDoNotDeadlock) {
    expect_pair_finishes({program("omp_features", "clang"), "handshake"},
                         {program("omp_features", "gcc"), "handshake"}, rehosted_env("handshake"),
                         2, "deadlocked");
}

// A library that reaches OpenMP through dlopen() (NumPy's OpenBLAS) is
// searched after libc, so libomp's sched_yield() wrapper only applies because
// `coexec run` preloads libomp. With a single CPU, a thread that waits for its
// teammate with sched_yield() must hand it the CPU: the kernel's sched_yield
// would spin until the end of time, as no other process wants the CPU.
TEST(Dlopened, SchedYieldSpinsHandTheCpuToTheTeammate) {
    if (!fs::exists(kCoexecCli)) GTEST_SKIP() << kCoexecCli << " is not built";
    auto env = rehosted_env("dlopen");
    env.erase("LD_LIBRARY_PATH"); // `coexec run` sets up the loader itself
    env["COEXEC_CONFIG_OVERRIDE"] += ",topology.binding=0";
    const ProcessResult r = run({kCoexecCli, "run", "--openmp", "--", kProgramDir + "/dlopen_spin",
                                 kProgramDir + "/libspin_yield.so", "200"},
                                env, 30s);
    ASSERT_FALSE(r.timed_out) << "a sched_yield() spin kept the only CPU from its teammate";
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "handovers 800")) << r.out;
    EXPECT_TRUE(contains(r.err, "re-hosted")) << r.err;
}

// The processes listed by `coexec top --json` on `env`'s segment, by pid.
std::map<pid_t, nlohmann::json> top_processes(const std::map<std::string, std::string>& env) {
    const ProcessResult top =
        run({kCoexecCli, "top", "--once", "--json"},
            {{"COEXEC_CONFIG_OVERRIDE", env.at("COEXEC_CONFIG_OVERRIDE")}}, 20s);
    std::map<pid_t, nlohmann::json> procs;
    EXPECT_EQ(top.exit_code, 0) << top.err;
    if (top.exit_code != 0) return procs;
    const auto doc = nlohmann::json::parse(top.out); // outlives the loop
    for (const auto& p : doc.at("processes"))
        procs[p.at("pid").get<pid_t>()] = p;
    return procs;
}

// An OpenMP worker that waits for the next region has nothing to do, so
// when another process wants the only CPU it must sleep (paused, out of the
// ready queue) instead of yield-spinning through its 60 s block time: each
// yield requeued it, and it took the CPU back at every turn only to spin
// again. The sleeper's process then has no ready work and gets no CPU.
TEST(TwoProcesses, IdleWorkerSleepsWhenTheCpuIsWanted) {
    if (!fs::exists(kCoexecCli)) GTEST_SKIP() << kCoexecCli << " is not built";
    auto env = rehosted_env("idlesleep");
    env["COEXEC_CONFIG_OVERRIDE"] += ",topology.binding=0";
    env["OMP_NUM_THREADS"] = "2";
    auto idle_env = env;
    idle_env["KMP_BLOCKTIME"] = "60000";
    {
        Subprocess idle({program("omp_features", "clang"), "reduction", "sleep"}, idle_env);
        Subprocess busy({program("omp_spin", "gcc"), "20"}, env);
        // Past the idle process's region (its worker now waits for the next
        // one), and the busy team is up.
        ASSERT_TRUE(idle.wait_for_line("ok reduction", 60s));
        ASSERT_TRUE(busy.wait_for_line("first region done", 60s));
        std::map<pid_t, nlohmann::json> first = top_processes(env);
        ASSERT_TRUE(first.contains(idle.pid())) << "the idle process is not in the segment";
        std::this_thread::sleep_for(1s);
        std::map<pid_t, nlohmann::json> second = top_processes(env);
        ASSERT_TRUE(second.contains(idle.pid()));
        const auto handoffs = [&](std::map<pid_t, nlohmann::json>& procs) {
            return procs.at(idle.pid()).at("handoffs").get<uint64_t>();
        };
        // The busy process takes a turn every quantum; a requeued spinner would
        // get the CPU back at most of them (tens in the second), a sleeper at
        // none. A loaded machine makes for fewer turns, not more.
        EXPECT_LE(handoffs(second) - handoffs(first), 2u)
            << "the idle worker kept taking the CPU back";
        EXPECT_EQ(second.at(idle.pid()).at("ready").get<int64_t>(), 0)
            << "the idle worker is ready work";
        ASSERT_TRUE(busy.running()) << "the busy team ended before the second sample";
    }
    // The idle process, killed above (it sleeps for 30 s), left the segment
    // behind; nobody uses it any more.
    EXPECT_EQ(run({kCoexecCli, "reset"}, env, 30s).exit_code, 0);
}

// A root thread gives its CPU back between parallel regions (the default
// root policy, region), keeps it only while serial code is short (keep) or
// lends it (lend): with coexec managing a single CPU, a process whose main
// thread sleeps in serial code after a region must not keep another process
// from running (with COEXEC_OMP_ROOT=hold this test would time out).
class Root : public ::testing::TestWithParam<std::string> {};

TEST_P(Root, SleepingRootHoldsNoCpu) {
    auto env = rehosted_env("root" + GetParam());
    env["COEXEC_CONFIG_OVERRIDE"] += ",topology.binding=0";
    env["COEXEC_OMP_ROOT"] = GetParam();
    {
        Subprocess sleeper({program("omp_features", "clang"), "reduction", "sleep"}, env);
        // Past its region, into the sleep.
        ASSERT_TRUE(sleeper.wait_for_line("ok reduction", 60s));
        const ProcessResult other =
            run({program("omp_features", "gcc"), "oversubscribed", "reduction"}, env, 20s);
        EXPECT_FALSE(other.timed_out) << "the sleeping root kept the only CPU";
        EXPECT_EQ(other.exit_code, 0) << other.err;
        EXPECT_TRUE(sleeper.running()); // still asleep; the destructor kills it
    }
    // The killed sleeper left the segment behind; nobody uses it any more.
    if (fs::exists(kCoexecCli)) {
        EXPECT_EQ(run({kCoexecCli, "reset"}, env, 30s).exit_code, 0);
    }
}

INSTANTIATE_TEST_SUITE_P(Policies, Root, ::testing::Values("region", "keep", "lend"));

// The policies that are not the default run every feature too (among them
// root_affinity: serial code keeps its own affinity under each policy).
class RootPolicy : public ::testing::TestWithParam<std::string> {};

TEST_P(RootPolicy, RunsEveryFeature) {
    auto env = rehosted_env("policy" + GetParam());
    env["COEXEC_OMP_ROOT"] = GetParam();
    const ProcessResult r = run({program("omp_features", "clang")}, env, 120s);
    ASSERT_FALSE(r.timed_out) << r.err;
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.err, "root policy: " + GetParam())) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Policies, RootPolicy, ::testing::Values("region", "lend", "hold"));

// ---- OMP_DYNAMIC: teams sized by the CPUs coexec can grant -----------------

struct TeamCounts {
    long regions = 0, full = 0, one = 0;
};

// Runs omp_teams (regions asking for one thread per CPU) for a second.
TeamCounts team_counts(const std::string& compiler, std::map<std::string, std::string> env,
                       bool dynamic) {
    if (dynamic) env["OMP_DYNAMIC"] = "true";
    const ProcessResult r = run({program("omp_teams", compiler), "1"}, env, 60s);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    TeamCounts c;
    std::istringstream in(r.out);
    std::string regions, full, one;
    in >> regions >> c.regions >> full >> c.full >> one >> c.one;
    EXPECT_TRUE(regions == "regions" && full == "full" && one == "one" && c.regions > 0) << r.out;
    return c;
}

// Tests of one compiler's build (the parameter) that need two CPUs.
class TwoCpus : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two CPUs";
    }
};

class Dynamic : public TwoCpus {};

// Alone on coexec, OMP_DYNAMIC=true still gives full teams: the team's own
// threads count as available even while they hold CPUs between regions.
TEST_P(Dynamic, TeamsStayFullWhenAlone) {
    const TeamCounts c = team_counts(GetParam(), rehosted_env("dynalone" + GetParam()), true);
    EXPECT_GE(c.full, c.regions * 9 / 10) << c.regions << " regions, " << c.full << " full";
}

// Next to a process whose team keeps every CPU busy, OMP_DYNAMIC=true
// teams shrink to the CPUs coexec can grant (one: the thread's own), and
// teams without it keep the size the program asked for.
TEST_P(Dynamic, TeamsShrinkWhenOthersUseTheCpus) {
    const auto env = rehosted_env("dynbusy" + GetParam());
    TeamCounts dynamic, fixed;
    {
        // Busy for longer than both counts take on a loaded machine; killed
        // after them.
        Subprocess busy({program("omp_spin", "clang"), "60"}, env);
        ASSERT_TRUE(busy.wait_for_line("first region done", 60s)); // its team is up
        dynamic = team_counts(GetParam(), env, true);
        fixed = team_counts(GetParam(), env, false);
        EXPECT_TRUE(busy.running()) << "the busy team ended before the counts";
    }
    // The killed busy process left the segment behind; nobody uses it any more.
    EXPECT_EQ(run({kCoexecCli, "reset"}, env, 30s).exit_code, 0);
    EXPECT_GE(dynamic.one, dynamic.regions / 2)
        << dynamic.regions << " regions, " << dynamic.one << " on one thread";
    EXPECT_EQ(fixed.full, fixed.regions) << "dyn-var false must keep the requested team size";
}

INSTANTIATE_TEST_SUITE_P(OpenMP, Dynamic, ::testing::Values("clang", "gcc"));

// Two threads of one process that each loop over regions of two threads
// (omp_two_teams): how many regions they ran, and how many of those ran
// their threads on two CPUs.
struct TwoTeams {
    long regions = 0;
    long apart = 0;
    std::string err; // its stderr
};

// Regions per thread, and iterations of work per region: shares of a few
// microseconds, or of about 300 (fewer regions, for the same run time).
struct Regions {
    long count;
    long iterations;
};
constexpr Regions kShortRegions{2'000, 20'000}, kLongRegions{200, 2'000'000};

// Runs omp_two_teams and checks what holds under any load: it exits 0 (every
// region's sum was right) after both threads ran all their regions. Which
// regions ran on two CPUs depends on when the kernel runs which thread, and
// on what else runs on the CPUs: the count is printed and recorded (the
// test's properties "regions" and "apart"), not asserted. The team-turn
// decisions behind it are tested step by step in team_turns_test.cpp; what
// turns gain is measured by benchmarks/openmp/omp_bench.py.
TwoTeams two_teams(const std::string& compiler, Regions regions,
                   const std::map<std::string, std::string>& env) {
    const ProcessResult r = run({program("omp_two_teams", compiler), std::to_string(regions.count),
                                 std::to_string(regions.iterations)},
                                env, 120s);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    TwoTeams t;
    t.err = r.err;
    EXPECT_EQ(std::sscanf(r.out.c_str(), "regions %ld apart %ld", &t.regions, &t.apart), 2)
        << r.out;
    EXPECT_EQ(t.regions, 2 * regions.count) << r.out;
    EXPECT_TRUE(t.apart >= 0 && t.apart <= t.regions) << r.out;
    ::testing::Test::RecordProperty("regions", std::to_string(t.regions));
    ::testing::Test::RecordProperty("apart", std::to_string(t.apart));
    std::printf("%ld of %ld regions on two CPUs\n", t.apart, t.regions);
    return t;
}

class TeamTurns : public TwoCpus {};

// Teams whose regions are short take turns at full width: the team that
// has the turn runs its two threads on the two CPUs, instead of each team
// alternating its threads on one CPU (two thread switches a region).
// Whichever team has the turn, every region completes with the right
// result.
TEST_P(TeamTurns, ShortRegionsRunCorrectly) {
    two_teams(GetParam(), kShortRegions, rehosted_env("turns" + GetParam()));
}

// Long regions would wait at full width for the slower of two CPUs: their
// teams take no turns.
TEST_P(TeamTurns, LongRegionsRunCorrectly) {
    two_teams(GetParam(), kLongRegions, rehosted_env("longturns" + GetParam()));
}

// COEXEC_OMP_TEAM_TURNS=0 turns them off.
TEST_P(TeamTurns, TurnedOffRunsCorrectly) {
    auto env = rehosted_env("noturns" + GetParam());
    env["COEXEC_OMP_TEAM_TURNS"] = "0";
    two_teams(GetParam(), kShortRegions, env);
}

INSTANTIATE_TEST_SUITE_P(OpenMP, TeamTurns, ::testing::Values("clang", "gcc"));

class AttachedFirst : public ::testing::TestWithParam<std::string> {};

// The first region comes from a thread that is a coexec task already (a TBB
// master, say), which coexec pins to the CPU it holds. libomp sizes its
// default team by the mask it reads then: the one the thread shows, as
// natively, not the pin.
TEST_P(AttachedFirst, DefaultTeamsSpanTheThreadsVisibleMask) {
    const ProcessResult r =
        run({program("omp_attached_first", GetParam())}, rehosted_env("first" + GetParam()), 60s);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    int shown = 0, kernel = 0, team = 0;
    ASSERT_EQ(std::sscanf(r.out.c_str(), "shown %d kernel %d team %d", &shown, &kernel, &team), 3)
        << r.out;
    if (shown > 1) {
        EXPECT_EQ(kernel, 1) << "coexec did not pin the attached thread";
    }
    EXPECT_EQ(team, shown) << r.out;
}

INSTANTIATE_TEST_SUITE_P(OpenMP, AttachedFirst, ::testing::Values("clang", "gcc"));

class HostedRoots : public TwoCpus {};

// Under `coexec run` the program's own threads are hosted, and eight of
// them open their first regions at once on two CPUs: libomp registers each
// as a root under its global locks (ticket locks: the next owner is fixed),
// while the new teams' workers wait for CPUs. A root that waits for such a
// lock before libomp has seen it in a region must give its CPU to the
// thread whose turn it is; with the kernel's yield, two waiting roots kept
// both CPUs for good (all ten runs of the GCC build hung). The preemption
// safety net, which ended such a stall after 100 ms, is off here, so only
// the roots' own waits can let the turn's owner run.
TEST_P(HostedRoots, FirstRegionsOfManyProgramThreadsAllRun) {
    if (!fs::exists(kCoexecCli)) GTEST_SKIP() << kCoexecCli << " is not built";
    auto env = rehosted_env("roots" + GetParam());
    env.erase("LD_LIBRARY_PATH"); // `coexec run` sets up the loader itself
    env["COEXEC_CONFIG_OVERRIDE"] += ",topology.binding=0-1,scheduler.preempt_after_ns=0";
    env["COEXEC_HOST_THREADS"] = "all";
    for (int round = 0; round < 3; ++round) {
        const ProcessResult r =
            run({kCoexecCli, "run", "--", program("omp_thread_roots", GetParam()), "8", "20"}, env,
                60s);
        ASSERT_FALSE(r.timed_out) << "round " << round << ": hosted roots kept the CPUs from "
                                  << "the lock's next owner\n"
                                  << r.err;
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_TRUE(contains(r.out, "roots 8 regions 160")) << r.out;
    }
}

INSTANTIATE_TEST_SUITE_P(OpenMP, HostedRoots, ::testing::Values("clang", "gcc"));

// A policy name coexec does not know: one clear line, then the default.
TEST(BadInput, UnknownRootPolicyIsReportedAndTheDefaultUsed) {
    auto env = rehosted_env("badroot");
    env["COEXEC_OMP_ROOT"] = "sometimes";
    const ProcessResult r = run({program("omp_features", "clang"), "reduction"}, env, 60s);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(
        contains(r.err, "COEXEC_OMP_ROOT must be region, keep, lend or hold, not 'sometimes'"))
        << r.err;
    EXPECT_TRUE(contains(r.err, "root policy: keep")) << r.err;
}

// A COEXEC_OMP_TEAM_TURNS value other than 0 or 1: one clear line, then
// the default (turns on), and the program runs correctly.
TEST(BadInput, UnknownTeamTurnsValueIsReportedAndTheDefaultUsed) {
    if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two CPUs";
    auto env = rehosted_env("badturns");
    env["COEXEC_OMP_TEAM_TURNS"] = "often";
    const TwoTeams t = two_teams("clang", kShortRegions, env);
    EXPECT_TRUE(contains(t.err, "COEXEC_OMP_TEAM_TURNS must be 0 or 1, not 'often'; using 1"))
        << t.err;
}

// Bad input to the test programs: a clear error and exit code 2.
TEST(BadInput, UnknownFeatureIsRejected) {
    const ProcessResult r =
        run({program("omp_features", "clang"), "no-such-feature"}, rehosted_env("bad"), 30s);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(contains(r.err, "unknown feature 'no-such-feature'")) << r.err;
}

} // namespace
