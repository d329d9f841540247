// The `coexec` command, run as a real process against real segments that
// real demo workers (libcoexec) create.
#include "process.hpp"
#include "scratch_cgroup.hpp"

#include "shm/layout.hpp"
#include "shm/segment.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <pthread.h>
#include <set>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace coexec::clitest {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

const std::string kCli = COEXEC_CLI;
const std::string kWorker = DEMO_WORKER;
// Prints the loader variables (empty when unset), one per line.
const std::string kShowLoaderEnv =
    "echo LD_LIBRARY_PATH=$LD_LIBRARY_PATH; echo LD_PRELOAD=$LD_PRELOAD";

// A segment name no other test uses; its shm object is removed at the end.
class CliTest : public ::testing::Test {
  protected:
    void TearDown() override { shm_unlink(shm_path().c_str()); }

    const std::string& name() const { return name_; }
    std::string shm_path() const { return "/coexec." + name_ + ".u" + std::to_string(geteuid()); }
    bool segment_exists() const { return fs::exists("/dev/shm" + shm_path()); }

    // `coexec ARGS... --name <ours>`.
    Outcome cli(std::vector<std::string> args) const {
        args.insert(args.begin(), kCli);
        args.insert(args.end(), {"--name", name_});
        return run_process(args);
    }

    // A demo worker on our segment, running until killed.
    std::unique_ptr<Background> start_worker() const {
        return std::make_unique<Background>(
            std::vector<std::string>{kWorker, "--seconds", "60", "--process-name", "cli-worker"},
            Env{{"NOSV_CONFIG_OVERRIDE", "shared_memory.name=" + name_}});
    }

    // Polls `coexec top --once --json` until `accept` holds (or 20 s pass).
    json top_json_when(const std::function<bool(const json&)>& accept) const {
        json doc;
        for (auto until = std::chrono::steady_clock::now() + 20s;
             std::chrono::steady_clock::now() < until;) {
            Outcome o = cli({"top", "--once", "--json"});
            if (o.status == 0) {
                doc = json::parse(o.out);
                if (accept(doc)) return doc;
            }
            std::this_thread::sleep_for(50ms);
        }
        return doc;
    }

    // Waits until `pid` is registered in our segment.
    void wait_registered(pid_t pid) const {
        json doc = top_json_when([&](const json& d) { return find_process(d, pid) != nullptr; });
        ASSERT_NE(find_process(doc, pid), nullptr)
            << "worker " << pid << " never joined: " << doc.dump();
    }

    static const json* find_process(const json& doc, pid_t pid) {
        if (!doc.contains("processes")) return nullptr;
        for (const auto& p : doc["processes"])
            if (p["pid"] == pid) return &p;
        return nullptr;
    }

    // Creates our shm object with `bytes` as its contents.
    void plant_segment(const std::string& bytes) const {
        int fd = shm_open(shm_path().c_str(), O_CREAT | O_RDWR | O_TRUNC, 0600);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
        close(fd);
    }

  private:
    std::string name_ = "clitest-" + std::to_string(getpid()) + "-" +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name();
};

void expect_clean_failure(const Outcome& o, const std::string& needle) {
    EXPECT_FALSE(o.signaled) << o.err;
    EXPECT_FALSE(o.timed_out);
    EXPECT_NE(o.status, 0);
    EXPECT_NE(o.err.find(needle), std::string::npos) << "stderr: " << o.err;
}

// ---- help ------------------------------------------------------------------

TEST(CliHelp, EverySubcommandHasHelp) {
    for (std::string sub : {"", "top", "ps", "info", "reset", "check", "run", "record", "plot"}) {
        std::vector<std::string> argv{kCli};
        if (!sub.empty()) argv.push_back(sub);
        argv.push_back("--help");
        Outcome o = run_process(argv);
        EXPECT_EQ(o.status, 0) << sub;
        EXPECT_NE(o.out.find("Usage: coexec" + (sub.empty() ? "" : " " + sub)), std::string::npos)
            << sub << ": " << o.out;
    }
}

// ---- top, ps, info with a live worker ----------------------------------------

TEST_F(CliTest, TopJsonShowsEveryCpuAndTheWorker) {
    auto worker = start_worker();
    // The worker keeps 2x CPUs tasks in flight, so it soon runs on some CPU.
    json doc = top_json_when([&](const json& d) {
        return std::any_of(d["cpus"].begin(), d["cpus"].end(), [&](const json& c) {
            return c["pid"] == worker->pid() && c["label"] == "demo";
        });
    });
    ASSERT_TRUE(doc.contains("cpus") && doc.contains("processes")) << doc.dump();
    ASSERT_FALSE(doc["cpus"].empty());
    EXPECT_LE(doc["cpus"].size(), size_t(shm::kMaxCpus));
    std::set<int> seen;
    const std::set<std::string> states{"free", "running", "idle", "sleeping"};
    for (const auto& c : doc["cpus"]) {
        for (const char* key :
             {"cpu", "system_cpu", "numa", "state", "pid", "tid", "name", "label", "held_ns"})
            EXPECT_TRUE(c.contains(key)) << key << " missing in " << c.dump();
        EXPECT_TRUE(states.count(c["state"].get<std::string>())) << c.dump();
        EXPECT_TRUE(seen.insert(c["cpu"].get<int>()).second) << "cpu listed twice: " << c.dump();
    }
    const bool worker_runs =
        std::any_of(doc["cpus"].begin(), doc["cpus"].end(), [&](const json& c) {
            return c["pid"] == worker->pid() && c["label"] == "demo" && c["name"] == "cli-worker" &&
                   c["state"] == "running" && c["tid"].is_number_integer();
        });
    EXPECT_TRUE(worker_runs) << doc.dump(1);
    const json* proc = find_process(doc, worker->pid());
    ASSERT_NE(proc, nullptr) << doc.dump(1);
    for (const char* key :
         {"pid", "name", "cpus", "ready", "cpu_time_ns", "handoffs", "preemptions", "threads"})
        EXPECT_TRUE(proc->contains(key)) << key;
    EXPECT_EQ((*proc)["name"], "cli-worker");
    EXPECT_GE((*proc)["cpus"].get<int>(), 0);
    EXPECT_GE((*proc)["threads"].get<int>(), 1);
}

TEST_F(CliTest, PipedTopPrintsSuccessiveSnapshots) {
    auto worker = start_worker();
    wait_registered(worker->pid());
    Outcome o = cli({"top", "--iterations", "3", "--interval", "0.1"});
    ASSERT_EQ(o.status, 0) << o.err;
    size_t titles = 0;
    for (size_t at = o.out.find("coexec top - "); at != std::string::npos;
         at = o.out.find("coexec top - ", at + 1))
        ++titles;
    EXPECT_EQ(titles, 3u) << o.out;
    EXPECT_EQ(o.out.find("\x1b["), std::string::npos) << "no terminal escapes when piped";
    EXPECT_NE(o.out.find("%CPU"), std::string::npos) << "later snapshots show the CPU rate";
}

TEST_F(CliTest, PsListsTheWorker) {
    auto worker = start_worker();
    wait_registered(worker->pid());
    Outcome o = cli({"ps"});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("PID"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find(std::to_string(worker->pid()) + "  cli-worker"), std::string::npos)
        << o.out;

    Outcome j = cli({"ps", "--json"});
    ASSERT_EQ(j.status, 0) << j.err;
    json procs = json::parse(j.out);
    ASSERT_EQ(procs.size(), 1u) << j.out;
    EXPECT_EQ(procs[0]["pid"], worker->pid());
}

TEST_F(CliTest, InfoShowsTopologyConfigAndUsage) {
    auto worker = start_worker();
    wait_registered(worker->pid());
    Outcome o = cli({"info"});
    ASSERT_EQ(o.status, 0) << o.err;
    for (const std::string& needle :
         {shm_path(), std::string("quantum      20ms"), std::string("governor"),
          std::string("isolation    user"), std::string("processes    1 of 512"),
          std::string("recoveries"), std::string("CORE")})
        EXPECT_NE(o.out.find(needle), std::string::npos) << needle << " missing in:\n" << o.out;

    Outcome j = cli({"info", "--json"});
    ASSERT_EQ(j.status, 0) << j.err;
    json info = json::parse(j.out);
    EXPECT_EQ(info["segment"]["name"], shm_path());
    EXPECT_EQ(info["usage"]["processes"], 1);
    EXPECT_EQ(info["config"]["quantum_ns"], 20'000'000);
    EXPECT_EQ(info["config"]["preempt_after_ns"], 100'000'000);
    EXPECT_EQ(info["topology"]["cpu_list"].size(), info["topology"]["cpus"].get<size_t>());
}

TEST_F(CliTest, InfoShowsTheQuantumTheSegmentWasCreatedWith) {
    Background worker({kWorker, "--seconds", "60"},
                      Env{{"NOSV_CONFIG_OVERRIDE",
                           "shared_memory.name=" + name() + ",scheduler.quantum_ns=5000000"}});
    wait_registered(worker.pid());
    Outcome o = cli({"info"});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("quantum      5ms"), std::string::npos) << o.out;
}

// ---- container CPU limits, in real cgroups ----------------------------------------

// Each test runs in cgroup v1 (a hierarchy per controller: older hosts,
// hybrid setups) and in cgroup v2 (one hierarchy: current distributions
// and their containers): it makes a real cgroup, limits it, starts a worker
// in it and reads what coexec reports. Where the machine allows no such
// cgroup (not root, the controller held by the other version's hierarchy,
// a container's cgroup holding its own processes) the test skips and says
// why.
class CliCgroupTest : public CliTest {
  protected:
    std::string cgroup_name() const {
        return "coexec-test-" + std::to_string(getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
    }
    // A demo worker that creates our segment from inside `cg`. Declared
    // after `cg`, it is killed and reaped before `cg` is removed.
    std::unique_ptr<Background> start_worker_in(const ScratchCgroup& cg) const {
        return std::make_unique<Background>(
            cg.join_then({kWorker, "--seconds", "60", "--process-name", "cgroup-worker"}),
            Env{{"NOSV_CONFIG_OVERRIDE", "shared_memory.name=" + name()}});
    }

    void the_cpuset_bounds_the_managed_cpus(CgroupVersion version) const;
    void a_quota_limits_how_many_cpus_run(CgroupVersion version) const;
};

// Limits `cg` (of the cpuset controller) to CPU `cpu`: empty, or why not.
std::string limit_to_cpu(CgroupVersion version, const ScratchCgroup& cg, int cpu) {
    std::string e = cg.set("cpuset.cpus", std::to_string(cpu));
    // v1 takes no process before it has memory nodes; v2 uses the parent's.
    if (e.empty() && version == CgroupVersion::v1) e = cg.set("cpuset.mems", "0");
    return e;
}

// The file coexec reads `cg`'s cpuset from.
std::string cpuset_file(CgroupVersion version, const ScratchCgroup& cg) {
    return cg.dir() +
           (version == CgroupVersion::v1 ? "/cpuset.effective_cpus" : "/cpuset.cpus.effective");
}

// Gives `cg` (of the cpu controller) `quota` microseconds of CPU time in each 100 ms.
std::string set_quota(CgroupVersion version, const ScratchCgroup& cg, int quota) {
    if (version == CgroupVersion::v2) return cg.set("cpu.max", std::to_string(quota) + " 100000");
    std::string e = cg.set("cpu.cfs_period_us", "100000");
    return e.empty() ? cg.set("cpu.cfs_quota_us", std::to_string(quota)) : e;
}

// Where coexec says that quota comes from.
std::string quota_origin(CgroupVersion version, const ScratchCgroup& cg, int quota) {
    if (version == CgroupVersion::v2)
        return "cgroup v2 " + cg.dir() + ": cpu.max " + std::to_string(quota) + " 100000";
    return "cgroup v1 " + cg.dir() + ": cpu.cfs_quota_us " + std::to_string(quota) +
           ", cpu.cfs_period_us 100000";
}

void CliCgroupTest::the_cpuset_bounds_the_managed_cpus(CgroupVersion version) const {
    if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs 2 CPUs";
    ScratchCgroup cg(version, "cpuset", cgroup_name());
    if (!cg.unavailable().empty()) GTEST_SKIP() << cg.unavailable();
    const int last = int(std::thread::hardware_concurrency()) - 1;
    ASSERT_EQ(limit_to_cpu(version, cg, last), "");
    auto worker = start_worker_in(cg);
    wait_registered(worker->pid());
    Outcome j = cli({"info", "--json"});
    ASSERT_EQ(j.status, 0) << j.err;
    const json topo = json::parse(j.out)["topology"];
    ASSERT_EQ(topo["cpus"], 1) << topo.dump();
    EXPECT_EQ(topo["cpu_list"][0]["system_cpu"], last);
    const std::string origin = topo["origin"];
    EXPECT_NE(origin.find("cgroup cpuset " + std::to_string(last) + " (" +
                          cpuset_file(version, cg) + ")"),
              std::string::npos)
        << origin;
    Outcome o = cli({"info"});
    EXPECT_NE(o.out.find("cpus from    affinity mask " + std::to_string(last)), std::string::npos)
        << o.out;
}

void CliCgroupTest::a_quota_limits_how_many_cpus_run(CgroupVersion version) const {
    if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs 2 CPUs";
    ScratchCgroup cg(version, "cpu", cgroup_name());
    if (!cg.unavailable().empty()) GTEST_SKIP() << cg.unavailable();
    ASSERT_EQ(set_quota(version, cg, 50000), ""); // half a CPU: at most 1 at once
    {
        auto worker = start_worker_in(cg);
        // The worker keeps tasks in flight on every CPU it may use: one.
        json top = top_json_when([&](const json& d) {
            return find_process(d, worker->pid()) != nullptr &&
                   std::any_of(d["cpus"].begin(), d["cpus"].end(),
                               [&](const json& c) { return c["pid"] == worker->pid(); });
        });
        ASSERT_EQ(top["cpus"].size(), 1u) << top.dump();
        Outcome j = cli({"info", "--json"});
        ASSERT_EQ(j.status, 0) << j.err;
        const json topo = json::parse(j.out)["topology"];
        EXPECT_EQ(topo["quota_cpus"], 1);
        EXPECT_EQ(topo["quota_origin"], quota_origin(version, cg, 50000));
        Outcome o = cli({"info"});
        EXPECT_NE(o.out.find("cpu quota    1 CPU (" + quota_origin(version, cg, 50000) + ")"),
                  std::string::npos)
            << o.out;
        Outcome t = cli({"top", "--once"});
        EXPECT_NE(t.out.find("cgroup CPU quota 1"), std::string::npos) << t.out;
    }
    // A quota of 1.5 CPUs rounds up to 2: every CPU, and the quota shown.
    ASSERT_EQ(set_quota(version, cg, 150000), "");
    shm_unlink(shm_path().c_str());
    auto worker = start_worker_in(cg);
    wait_registered(worker->pid());
    Outcome j = cli({"info", "--json"});
    ASSERT_EQ(j.status, 0) << j.err;
    const json topo = json::parse(j.out)["topology"];
    EXPECT_EQ(topo["quota_cpus"], 2);
    EXPECT_EQ(topo["cpus"], 2);
    EXPECT_EQ(topo["quota_origin"], quota_origin(version, cg, 150000));
}

TEST_F(CliCgroupTest, TheCgroupCpusetBoundsTheManagedCpusV1) {
    the_cpuset_bounds_the_managed_cpus(CgroupVersion::v1);
}
TEST_F(CliCgroupTest, TheCgroupCpusetBoundsTheManagedCpusV2) {
    the_cpuset_bounds_the_managed_cpus(CgroupVersion::v2);
}
TEST_F(CliCgroupTest, ACpuQuotaLimitsHowManyCpusRunCoexecThreadsV1) {
    a_quota_limits_how_many_cpus_run(CgroupVersion::v1);
}
TEST_F(CliCgroupTest, ACpuQuotaLimitsHowManyCpusRunCoexecThreadsV2) {
    a_quota_limits_how_many_cpus_run(CgroupVersion::v2);
}

// ---- reset -------------------------------------------------------------------

TEST_F(CliTest, ResetRefusesWhileAliveAndSucceedsAfterKill) {
    auto worker = start_worker();
    wait_registered(worker->pid());
    Outcome refused = cli({"reset"});
    expect_clean_failure(refused, std::to_string(worker->pid()));
    EXPECT_NE(refused.err.find("in use"), std::string::npos) << refused.err;
    EXPECT_TRUE(segment_exists());

    worker->kill();
    Outcome done = cli({"reset"});
    EXPECT_EQ(done.status, 0) << done.err;
    EXPECT_FALSE(segment_exists());
    expect_clean_failure(cli({"ps"}), "no coexec segment");
}

// Without a segment, `coexec info` fails and says what the first process
// would manage, or why it could not start.
TEST_F(CliTest, InfoWithoutSegmentSaysWhatANewInstanceWouldManage) {
    Outcome o = cli({"info"});
    expect_clean_failure(o, "no coexec segment");
    EXPECT_NE(o.err.find("a new instance would manage"), std::string::npos) << o.err;
    const std::string beyond = std::to_string(std::thread::hardware_concurrency() + 64);
    Outcome bad = run_process({kCli, "info", "--name", name()},
                              Env{{"NOSV_CONFIG_OVERRIDE", "topology.binding=" + beyond}});
    expect_clean_failure(bad, "a new instance could not start");
    EXPECT_NE(bad.err.find("CPU " + beyond), std::string::npos) << bad.err;
    EXPECT_FALSE(segment_exists());
}

TEST_F(CliTest, ResetWithoutSegmentFails) {
    expect_clean_failure(cli({"reset"}), "no coexec segment");
}

// ---- check -------------------------------------------------------------------

TEST_F(CliTest, CheckFindsALiveSegmentSound) {
    auto worker = start_worker();
    wait_registered(worker->pid());
    Outcome o = cli({"check"});
    ASSERT_EQ(o.status, 0) << o.out << o.err;
    EXPECT_EQ(o.out.find("coexec check: segment " + shm_path() + " is sound: "), 0u) << o.out;
    EXPECT_NE(o.out.find(" CPU"), std::string::npos) << o.out;
    EXPECT_NE(o.out.find(", 1 process, "), std::string::npos) << o.out;
    EXPECT_EQ(std::count(o.out.begin(), o.out.end(), '\n'), 1) << o.out;
}

// Whether `pid` is stopped (state T in /proc/<pid>/stat).
bool process_stopped(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')'); // the name may hold spaces and parentheses
    return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'T';
}

// Stops `pid` with SIGSTOP at a moment it does not hold `lock`.
void stop_outside_lock(pid_t pid, pthread_mutex_t& lock) {
    for (;;) {
        ::kill(pid, SIGSTOP);
        for (int i = 0; i < 1000 && !process_stopped(pid); ++i)
            std::this_thread::sleep_for(1ms);
        ASSERT_TRUE(process_stopped(pid));
        if (pthread_mutex_trylock(&lock) == 0) {
            pthread_mutex_unlock(&lock);
            return;
        }
        ::kill(pid, SIGCONT); // stopped inside: let it leave, try again
        std::this_thread::sleep_for(1ms);
    }
}

TEST_F(CliTest, CheckReportsACorruptedCounter) {
    auto worker = start_worker();
    wait_registered(worker->pid());
    shm::SegmentOptions options;
    options.name = name();
    options.create = false;
    shm::SegmentError error;
    shm::SegmentMapping mapping = shm::SegmentMapping::open(options, error);
    ASSERT_TRUE(mapping) << error.message;
    ASSERT_EQ(mapping->header.alive_count, 1);
    const int32_t p = mapping->header.alive[0];
    // The worker is stopped outside the segment lock while its count is
    // wrong: a debug build checks the invariants at each unlock, and would
    // stop at the corruption this test plants.
    stop_outside_lock(worker->pid(), mapping->header.lock);
    mapping->procs[p].threads.fetch_add(1000);
    Outcome o = cli({"check"});
    mapping->procs[p].threads.fetch_sub(1000);
    ::kill(worker->pid(), SIGCONT);
    EXPECT_EQ(o.status, 1) << o.out << o.err;
    EXPECT_EQ(o.out.find("coexec check: segment " + shm_path() + " violates its invariants:\n"), 0u)
        << o.out;
    EXPECT_NE(o.out.find("\n  process slot " + std::to_string(p) + " counts "), std::string::npos)
        << o.out;
    EXPECT_NE(o.out.find(" thread slots in use belong to it\n"), std::string::npos) << o.out;
    // Repaired, it is sound again.
    Outcome again = cli({"check"});
    EXPECT_EQ(again.status, 0) << again.out << again.err;
}

TEST_F(CliTest, CheckWithoutSegmentExitsTwo) {
    Outcome o = cli({"check"});
    expect_clean_failure(o, "no coexec segment");
    EXPECT_EQ(o.status, 2);
    plant_segment(std::string(sizeof(shm::Segment), '\x5a'));
    Outcome garbage = cli({"check"});
    expect_clean_failure(garbage, "not a coexec segment");
    EXPECT_EQ(garbage.status, 2);
}

// ---- bad segments --------------------------------------------------------------

TEST_F(CliTest, GarbageSegmentGivesClearError) {
    plant_segment(std::string(sizeof(shm::Segment), '\x5a'));
    for (std::string sub : {"top", "ps", "info", "reset", "check"}) {
        std::vector<std::string> args{sub};
        if (sub == "top") args.push_back("--once");
        expect_clean_failure(cli(args), "not a coexec segment");
    }
    EXPECT_TRUE(segment_exists());
    EXPECT_EQ(cli({"reset", "--force"}).status, 0);
    EXPECT_FALSE(segment_exists());
}

TEST_F(CliTest, TruncatedSegmentGivesClearError) {
    plant_segment("coexec?");
    expect_clean_failure(cli({"top", "--once", "--json"}), "truncated");
}

TEST_F(CliTest, OtherVersionSegmentGivesClearError) {
    std::string bytes(sizeof(shm::Segment), '\0');
    auto* header = reinterpret_cast<shm::Header*>(bytes.data());
    header->magic.store(shm::kMagic);
    header->abi_version = shm::kAbiVersion + 1;
    header->total_size = sizeof(shm::Segment);
    plant_segment(bytes);
    expect_clean_failure(cli({"info"}), "ABI version");
    EXPECT_EQ(cli({"reset", "--force"}).status, 0);
}

TEST_F(CliTest, OutOfRangeCountsAreRefused) {
    // A segment of the right shape for 2 CPU slots whose CPU count is not.
    std::string bytes(shm::segment_layout(2).total, '\0');
    auto* s = reinterpret_cast<shm::Segment*>(bytes.data());
    shm::lay_out(*s, 2);
    shm::Header* header = &s->header;
    header->magic.store(shm::kMagic);
    header->abi_version = shm::kAbiVersion;
    header->max_procs = shm::kMaxProcs;
    header->max_threads = shm::kMaxThreads;
    header->cpu_count = 2 + 1000;
    plant_segment(bytes);
    expect_clean_failure(cli({"top", "--once"}), "corrupt");
}

TEST_F(CliTest, MissingSegmentGivesClearError) {
    for (std::string sub : {"top", "ps", "info"})
        expect_clean_failure(cli({sub}), "no coexec segment");
}

// ---- bad command lines ---------------------------------------------------------

TEST(CliBadInput, UnknownSubcommandAndOptions) {
    expect_clean_failure(run_process({kCli, "frobnicate"}), "unknown subcommand 'frobnicate'");
    expect_clean_failure(run_process({kCli, "top", "--bogus"}), "--bogus");
    expect_clean_failure(run_process({kCli, "top", "--interval", "0"}), "--interval");
    expect_clean_failure(run_process({kCli, "ps", "--isolation", "nobody"}), "--isolation");
    expect_clean_failure(run_process({kCli, "ps", "--isolation", "process"}), "process");
    expect_clean_failure(run_process({kCli, "ps", "--name", "a/b"}), "shared_memory.name");
    expect_clean_failure(run_process({kCli}), "subcommand");
}

TEST(CliBadInput, BadConfigurationIsReported) {
    Outcome o =
        run_process({kCli, "ps"}, Env{{"NOSV_CONFIG_OVERRIDE", "scheduler.quantum_ns=banana"}});
    expect_clean_failure(o, "scheduler.quantum_ns");
}

// ---- run -----------------------------------------------------------------------

// A copy of the CLI in <tmp>/bin, with <tmp>/lib/coexec/ holding only the
// adapter files a test creates: `run` looks for adapters next to itself.
class CliRun : public ::testing::Test {
  protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() /
                ("coexec-clitest-" + std::to_string(getpid()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::create_directories(root_ / "bin");
        fs::create_directories(root_ / "lib" / "coexec");
        fs::copy_file(kCli, cli_path());
    }
    void TearDown() override { fs::remove_all(root_); }

    std::string cli_path() const { return (root_ / "bin" / "coexec").string(); }
    std::string lib() const { return (root_ / "lib").string(); }
    void add_adapter(const std::string& name, const std::string& file) const {
        fs::create_directories(root_ / "lib" / "coexec" / name);
        std::ofstream(root_ / "lib" / "coexec" / name / file) << "";
    }

    // `coexec run ARGS...` run from the copy, with these environment extras.
    // OpenBLAS's OpenMP directory is left out unless a test names one.
    Outcome run(std::vector<std::string> args, Env env = {}) const {
        args.insert(args.begin(), {cli_path(), "run"});
        env.emplace("COEXEC_OPENBLAS_DIR", "/nonexistent/openblas");
        return run_process(args, env);
    }

    // The value of `var` in `env`-style output, or "(unset)".
    static std::string env_value(const std::string& out, const std::string& var) {
        const std::string text = "\n" + out, key = "\n" + var + "=";
        size_t at = text.find(key);
        if (at == std::string::npos) return "(unset)";
        size_t start = at + key.size();
        return text.substr(start, text.find('\n', start) - start);
    }

  private:
    fs::path root_;
};

TEST_F(CliRun, WithoutAdaptersPutsTheLibraryDirOnThePath) {
    Outcome o =
        run({"--", "/usr/bin/env"}, Env{{"LD_LIBRARY_PATH", "/old/path"}, {"LD_PRELOAD", ""}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "LD_LIBRARY_PATH"), lib() + ":/old/path");
    EXPECT_EQ(env_value(o.out, "LD_PRELOAD"), "(unset)");
}

TEST_F(CliRun, OpenmpDirectoryGoesFirstOnTheLibraryPathAndLibompIsPreloaded) {
    add_adapter("openmp", "libomp.so.5");
    Outcome o = run({"--openmp", "--", "/bin/sh", "-c", kShowLoaderEnv},
                    Env{{"LD_LIBRARY_PATH", ""}, {"LD_PRELOAD", ""}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "LD_LIBRARY_PATH"), lib() + "/coexec/openmp:" + lib());
    // Preloaded too, so its libc wrappers reach OpenMP loaded by dlopen.
    EXPECT_EQ(env_value(o.out, "LD_PRELOAD"), lib() + "/coexec/openmp/libomp.so.5");
}

TEST_F(CliRun, OpenblasOpenmpBuildFollowsTheOpenmpAdapterOnTheLibraryPath) {
    add_adapter("openmp", "libomp.so.5");
    add_adapter("openblas", "libopenblas.so.0"); // a stand-in OpenBLAS directory
    const std::string blas = lib() + "/coexec/openblas";
    Outcome o = run({"--openmp", "--", "/bin/sh", "-c", kShowLoaderEnv},
                    Env{{"LD_LIBRARY_PATH", "/old"}, {"COEXEC_OPENBLAS_DIR", blas}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "LD_LIBRARY_PATH"),
              lib() + "/coexec/openmp:" + blas + ":" + lib() + ":/old");
    // Without the OpenMP adapter its threads would not be hosted: left out.
    add_adapter("tbb", "libirml.so.1");
    o = run({"--tbb", "--", "/bin/sh", "-c", kShowLoaderEnv},
            Env{{"LD_LIBRARY_PATH", ""}, {"COEXEC_OPENBLAS_DIR", blas}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "LD_LIBRARY_PATH"), lib());
    // A directory without libopenblas.so.0 is no OpenBLAS build.
    o = run({"--openmp", "--", "/bin/sh", "-c", kShowLoaderEnv},
            Env{{"LD_LIBRARY_PATH", ""}, {"COEXEC_OPENBLAS_DIR", lib()}});
    EXPECT_EQ(env_value(o.out, "LD_LIBRARY_PATH"), lib() + "/coexec/openmp:" + lib());
}

// By default every program thread is hosted, and the BLAS is the system's
// (no OpenBLAS directory on the path): a value the user set is kept.
TEST_F(CliRun, HostsEveryThreadAndKeepsTheSystemBlasByDefault) {
    add_adapter("openmp", "libomp.so.5");
    const std::string show =
        std::string(kShowLoaderEnv) + "; echo COEXEC_HOST_THREADS=$COEXEC_HOST_THREADS";
    Outcome o = run_process(
        {cli_path(), "run", "--openmp", "--", "/bin/sh", "-c", show},
        Env{{"LD_LIBRARY_PATH", ""}, {"COEXEC_OPENBLAS_DIR", ""}, {"COEXEC_HOST_THREADS", ""}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "LD_LIBRARY_PATH"), lib() + "/coexec/openmp:" + lib());
    EXPECT_EQ(env_value(o.out, "COEXEC_HOST_THREADS"), "all");
    o = run({"--openmp", "--", "/bin/sh", "-c", show}, Env{{"COEXEC_HOST_THREADS", "main"}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "COEXEC_HOST_THREADS"), "main");
}

// With every thread hosted, OpenBLAS's pthreads pool spins 2^23 cycles after
// a call, not its default 2^28, unless the user chose; under main its pool
// is not hosted, and its default is left alone.
TEST_F(CliRun, ShortensOpenblasIdleSpinOnlyWhenItsPoolIsHosted) {
    const std::string show = "echo OPENBLAS_THREAD_TIMEOUT=${OPENBLAS_THREAD_TIMEOUT-(unset)}";
    Outcome o = run({"--", "/bin/sh", "-c", show},
                    Env{{"COEXEC_HOST_THREADS", ""}, {"OPENBLAS_THREAD_TIMEOUT", ""}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "OPENBLAS_THREAD_TIMEOUT"), "23");
    o = run({"--", "/bin/sh", "-c", show},
            Env{{"COEXEC_HOST_THREADS", "all"}, {"OPENBLAS_THREAD_TIMEOUT", "28"}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "OPENBLAS_THREAD_TIMEOUT"), "28");
    for (const char* mode : {"main", "none"}) {
        o = run({"--", "/bin/sh", "-c", show},
                Env{{"COEXEC_HOST_THREADS", mode}, {"OPENBLAS_THREAD_TIMEOUT", ""}});
        ASSERT_EQ(o.status, 0) << o.err;
        EXPECT_EQ(env_value(o.out, "OPENBLAS_THREAD_TIMEOUT"), "(unset)") << mode;
    }
}

TEST_F(CliRun, DefaultTakesEveryBuiltAdapter) {
    add_adapter("openmp", "libomp.so.5");
    add_adapter("pocl", "libcoexec-pocl.so");
    // The shell reports what it was given (the loader ignores the empty
    // stand-in library with a warning on stderr).
    Outcome o =
        run({"/bin/sh", "-c", kShowLoaderEnv}, Env{{"LD_LIBRARY_PATH", ""}, {"LD_PRELOAD", ""}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "LD_LIBRARY_PATH"), lib() + "/coexec/openmp:" + lib());
    // libomp last: the other adapters' libc wrappers defer to it.
    EXPECT_EQ(env_value(o.out, "LD_PRELOAD"),
              lib() + "/coexec/pocl/libcoexec-pocl.so:" + lib() + "/coexec/openmp/libomp.so.5");
}

TEST_F(CliRun, PreloadsAreAddedInFrontOfExistingOnes) {
    add_adapter("tbb", "libirml.so.1");
    add_adapter("pocl", "libcoexec-pocl.so");
    Outcome o = run({"--tbb", "--pocl", "--", "/bin/sh", "-c", kShowLoaderEnv},
                    Env{{"LD_PRELOAD", "/no/such.so"}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "LD_PRELOAD"), lib() + "/coexec/tbb/libirml.so.1:" + lib() +
                                                  "/coexec/pocl/libcoexec-pocl.so:/no/such.so");
    EXPECT_EQ(env_value(o.out, "LD_LIBRARY_PATH").rfind(lib(), 0), 0u)
        << "only lib/, no openmp dir";
    EXPECT_EQ(env_value(o.out, "LD_LIBRARY_PATH").find("openmp"), std::string::npos);
}

TEST_F(CliRun, LibcoexecIsPreloadedBeforeTheAdapters) {
    // Preloaded first, libcoexec's affinity functions come before libc's
    // (docs/affinity.md); the adapters alone would load it after libc.
    std::ofstream(fs::path(lib()) / "libcoexec.so") << "";
    add_adapter("tbb", "libirml.so.1");
    Outcome o = run({"--tbb", "--", "/bin/sh", "-c", kShowLoaderEnv}, Env{{"LD_PRELOAD", ""}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "LD_PRELOAD"),
              lib() + "/libcoexec.so:" + lib() + "/coexec/tbb/libirml.so.1");
    // Nothing preloaded without a preloaded adapter: a program linked with
    // libcoexec has it before libc already.
    fs::remove_all(fs::path(lib()) / "coexec" / "tbb");
    o = run({"--", "/usr/bin/env"}, Env{{"LD_PRELOAD", ""}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(env_value(o.out, "LD_PRELOAD"), "(unset)");
}

TEST_F(CliRun, AbsentAdapterIsAnError) {
    add_adapter("openmp", "libomp.so.5");
    Outcome o = run({"--tbb", "--", "/bin/true"});
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("tbb adapter is not built"), std::string::npos) << o.err;
}

TEST_F(CliRun, MissingCommandIsAnError) {
    Outcome o = run({});
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.err.find("no command"), std::string::npos) << o.err;
    EXPECT_EQ(run({"--openmp", "--"}).status, 2);
}

TEST_F(CliRun, ReturnsTheCommandsExitStatus) {
    EXPECT_EQ(run({"--", "/bin/sh", "-c", "exit 7"}).status, 7);
    EXPECT_EQ(run({"/bin/sh", "-c", "exit 0"}).status, 0);
    Outcome missing = run({"--", "/nonexistent/program"});
    EXPECT_EQ(missing.status, 127);
    EXPECT_NE(missing.err.find("cannot run"), std::string::npos) << missing.err;
}

TEST(CliRunBuilt, RunsAProgramOnTheRealLibrary) {
    // The real build tree: bin/coexec finds lib/ next to it. Adapters that
    // are built get preloaded; COEXEC_DISABLE keeps them from starting.
    Outcome o = run_process({kCli, "run", "--", "/usr/bin/env"}, Env{{"COEXEC_DISABLE", "1"}});
    ASSERT_EQ(o.status, 0) << o.err;
    fs::path lib = (fs::path(kCli).parent_path() / ".." / "lib").lexically_normal();
    EXPECT_NE(o.out.find("LD_LIBRARY_PATH="), std::string::npos);
    EXPECT_NE(o.out.find(lib.string()), std::string::npos) << o.out;
}

TEST(CliRunBuilt, AScriptThatExecsTheNextAgainAndAgainFinishes) {
    // Each image is hosted (its main thread holds a CPU) and hands on to the
    // next with exec, as shell wrappers, `env` and `pyenv exec` do: more
    // images than twice the CPUs, each waiting for a CPU while the images
    // before it held theirs.
    const int levels = 2 * int(std::max(1u, std::thread::hardware_concurrency())) + 2;
    const std::string chain =
        "n=$1; if [ \"$n\" -gt 0 ]; then exec /bin/sh -c \"$0\" \"$0\" $((n - 1)); fi; "
        "echo last image ran";
    const std::string segment = "cliexec" + std::to_string(::getpid());
    Outcome o = run_process(
        {kCli, "run", "--", "/bin/sh", "-c", chain, chain, std::to_string(levels)},
        Env{{"NOSV_CONFIG_OVERRIDE", "shared_memory.name=" + segment}}, std::chrono::seconds(60));
    std::string why;
    shm::SegmentOptions options;
    options.name = segment;
    shm::SegmentMapping::unlink(options, why);
    EXPECT_FALSE(o.timed_out) << "an image waited for a CPU that an image before it held";
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("last image ran"), std::string::npos) << o.out;
}

} // namespace
} // namespace coexec::clitest
