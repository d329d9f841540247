// The Slurm plugin (tools/slurm) against a real Slurm: munged, slurmctld and
// slurmd from Debian's packages on this machine, in a scratch directory
// (slurm-cluster.sh), with plugstack.conf loading the plugin just built.
// Jobs run with and without --coexec; the test checks which segment their
// steps join, their results, and that nothing of a job is left in /dev/shm
// once it ends, killed or not. It skips, saying why, where a daemon cannot
// start (not root, a package missing).
#include "../openmp/subprocess.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <signal.h>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using coexec::test::ProcessResult;

// The OpenMP work of each step: about a second with coexec on a 2-CPU
// node, several without, so that two steps started together overlap.
constexpr const char* kWorkArgs = "3000 20000";

std::string read_file(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The files of job `job_id`'s segments (and its steps') in /dev/shm.
std::vector<std::string> job_segments(const std::string& job_id) {
    std::vector<std::string> found;
    const std::string prefix = "coexec.slurm." + job_id + ".";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/dev/shm", ec)) {
        std::string name = e.path().filename().string();
        if (name.rfind(prefix, 0) == 0) found.push_back(name);
    }
    return found;
}

// True once job `job_id` has no segment left on this node; waits up to 30 s
// for its epilog, which slurmd may run after the job is reported ended.
bool segments_gone(const std::string& job_id) {
    for (int i = 0; i < 600; ++i) {
        if (job_segments(job_id).empty()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

// libomp's registration files of process `pid` in /dev/shm.
std::vector<std::string> openmp_files(long pid) {
    std::vector<std::string> found;
    const std::string prefix = "__KMP_REGISTERED_LIB_" + std::to_string(pid) + "_";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/dev/shm", ec)) {
        std::string name = e.path().filename().string();
        if (name.rfind(prefix, 0) == 0) found.push_back(name);
    }
    return found;
}

// The value after `key ` on the line of `text` that starts with `key`.
std::string field(const std::string& text, const std::string& key) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
    return {};
}

class Slurm : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        char dir[] = "/tmp/coexec-slurm-XXXXXX";
        if (!mkdtemp(dir)) {
            problem_ = "cannot create a scratch directory";
            return;
        }
        scratch_ = dir;
        ProcessResult r = coexec::test::run(
            {"/bin/bash", CLUSTER_SCRIPT, "start", scratch_, SPANK_PLUGIN}, {}, 60s);
        if (r.exit_code == 77) {
            skip_ = r.out + r.err;
        } else if (r.exit_code != 0) {
            problem_ = "the Slurm daemons did not start:\n" + r.out + r.err;
        }
    }

    static void TearDownTestSuite() {
        if (scratch_.empty()) return;
        coexec::test::run({"/bin/bash", CLUSTER_SCRIPT, "stop", scratch_}, {}, 60s);
        std::error_code ec;
        fs::remove_all(scratch_, ec);
        scratch_.clear();
    }

    void SetUp() override {
        if (!skip_.empty()) GTEST_SKIP() << skip_;
        ASSERT_TRUE(problem_.empty()) << problem_;
    }

    // The environment of every Slurm command, passed on to the jobs.
    std::map<std::string, std::string> env() const {
        return {{"SLURM_CONF", scratch_ + "/slurm.conf"},
                {"SCRATCH", scratch_},
                {"COEXEC", COEXEC_CLI},
                {"OMP_WORK", OMP_WORK},
                {"WORK_ARGS", kWorkArgs},
                {"HALO", HALO_PROGRAM}};
    }

    ProcessResult slurm(const std::vector<std::string>& argv,
                        std::chrono::milliseconds timeout = 60s) const {
        return coexec::test::run(argv, env(), timeout);
    }

    // Waits until job `id` has ended and its epilog has run (scontrol's
    // JobState is a final state, no longer COMPLETING); returns the exit
    // status of its batch script, or -1 when the job is unknown or runs past
    // `patience`; `final_state` gets the state. (sbatch --wait polls every
    // few seconds.)
    int wait_for_job(const std::string& id, std::string* final_state = nullptr,
                     std::chrono::seconds patience = 90s) const {
        const auto deadline = std::chrono::steady_clock::now() + patience;
        while (std::chrono::steady_clock::now() < deadline) {
            ProcessResult r = slurm({"/usr/bin/scontrol", "-o", "show", "job", id}, 20s);
            if (r.exit_code != 0) return -1;
            const std::string state = field_value(r.out, "JobState");
            if (state != "PENDING" && state != "RUNNING" && state != "CONFIGURING" &&
                state != "COMPLETING" && !state.empty()) {
                if (final_state) *final_state = state;
                const std::string code = field_value(r.out, "ExitCode");
                return std::atoi(code.substr(0, code.find(':')).c_str());
            }
            std::this_thread::sleep_for(100ms);
        }
        return -1;
    }

    // The value of `key=` in scontrol's one-line output.
    static std::string field_value(const std::string& text, const std::string& key) {
        const std::string k = key + "=";
        size_t at = 0;
        while ((at = text.find(k, at)) != std::string::npos) {
            if (at == 0 || text[at - 1] == ' ') break;
            at += k.size();
        }
        if (at == std::string::npos) return {};
        at += k.size();
        return text.substr(at, text.find_first_of(" \n", at) - at);
    }

    // Submits `body` as a batch script with `options`; returns the job id.
    std::string submit(const std::string& body, const std::vector<std::string>& options,
                       const std::string& out) {
        const std::string script = scratch_ + "/job" + std::to_string(++jobs_) + ".sh";
        std::ofstream(script) << "#!/bin/bash\n" << body;
        std::vector<std::string> argv{"/usr/bin/sbatch", "--parsable", "-o", out};
        argv.insert(argv.end(), options.begin(), options.end());
        argv.push_back(script);
        ProcessResult r = slurm(argv);
        EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
        return r.out.substr(0, r.out.find_first_of(";\n"));
    }

    // Runs `body` as a batch job with `options` until it ends. Returns the
    // job id; `output` gets the job's output, `exit_code` its status.
    std::string run_job(const std::string& body, const std::vector<std::string>& options,
                        std::string& output, int& exit_code) {
        const std::string out = scratch_ + "/job" + std::to_string(jobs_ + 1) + ".out";
        const std::string id = submit(body, options, out);
        exit_code = id.empty() ? -1 : wait_for_job(id);
        output = read_file(out);
        return id;
    }

    static std::string scratch_;
    static std::string skip_;
    static std::string problem_;
    int jobs_ = 0;
};

std::string Slurm::scratch_;
std::string Slurm::skip_;
std::string Slurm::problem_;

// Two overlapping steps, each one task with an OpenMP team as wide as the
// node, started by the same script with and without --coexec. The script
// watches the job's segment with `coexec ps` while they run.
const char* kTwoSteps = R"sh(
set -u
seg=slurm.$SLURM_JOB_ID
t0=$(date +%s%N)
srun --overlap -n1 -c$SLURM_CPUS_ON_NODE --cpu-bind=none "$OMP_WORK" $WORK_ARGS >"$SCRATCH/a.$SLURM_JOB_ID" 2>&1 &
a=$!
srun --overlap -n1 -c$SLURM_CPUS_ON_NODE --cpu-bind=none "$OMP_WORK" $WORK_ARGS >"$SCRATCH/b.$SLURM_JOB_ID" 2>&1 &
b=$!
members=0
while kill -0 $a 2>/dev/null || kill -0 $b 2>/dev/null; do
  if "$COEXEC" --name $seg ps --json >"$SCRATCH/ps.tmp.$SLURM_JOB_ID" 2>/dev/null; then
    n=$(grep -o '"pid"' "$SCRATCH/ps.tmp.$SLURM_JOB_ID" | wc -l)
    if [ "$n" -gt "$members" ]; then
      members=$n
      cp "$SCRATCH/ps.tmp.$SLURM_JOB_ID" "$SCRATCH/ps.$SLURM_JOB_ID"
      "$COEXEC" --name $seg top --once --json >"$SCRATCH/top.$SLURM_JOB_ID" 2>/dev/null
    fi
  fi
  sleep 0.05
done
wait $a; ra=$?
wait $b; rb=$?
t1=$(date +%s%N)
echo "steps $ra $rb"
echo "members $members"
echo "ns $((t1 - t0))"
echo "a $(cat "$SCRATCH/a.$SLURM_JOB_ID")"
echo "b $(cat "$SCRATCH/b.$SLURM_JOB_ID")"
)sh";

TEST_F(Slurm, OverlappingStepsOfAJobShareOneSegment) {
    struct Run {
        std::string id, out;
        int status = -1;
    } with, without;
    without.id = run_job(kTwoSteps, {"-N1", "--exclusive"}, without.out, without.status);
    with.id = run_job(kTwoSteps, {"-N1", "--exclusive", "--coexec"}, with.out, with.status);
    ASSERT_EQ(without.status, 0) << without.out;
    ASSERT_EQ(with.status, 0) << with.out;
    for (const Run* r : {&without, &with}) {
        EXPECT_EQ(field(r->out, "steps"), "0 0") << r->out;
        EXPECT_TRUE(segments_gone(r->id)) << "job " << r->id << " left a segment";
    }
    // Without the plugin no segment exists; with it, both steps are members
    // of the job's one segment, which manages the job's CPUs on the node.
    EXPECT_EQ(field(without.out, "members"), "0") << without.out;
    EXPECT_EQ(field(with.out, "members"), "2") << with.out;
    auto ps = nlohmann::json::parse(read_file(scratch_ + "/ps." + with.id), nullptr, false);
    ASSERT_TRUE(ps.is_array()) << read_file(scratch_ + "/ps." + with.id);
    std::set<long> pids;
    for (const auto& p : ps)
        if (p.value("alive", false)) pids.insert(p.value("pid", 0L));
    EXPECT_EQ(pids.size(), 2u) << ps.dump();
    auto top = nlohmann::json::parse(read_file(scratch_ + "/top." + with.id), nullptr, false);
    ASSERT_TRUE(top.is_object());
    EXPECT_EQ(top.value("segment", ""),
              "/coexec.slurm." + with.id + ".u" + std::to_string(geteuid()));
    EXPECT_EQ(long(top["cpus"].size()), sysconf(_SC_NPROCESSORS_ONLN)) << top.dump();

    // The same checksums ("<seconds> <checksum>"), with and without.
    auto checksum = [](const std::string& line) { return line.substr(line.find(' ') + 1); };
    const std::string expected = checksum(field(without.out, "a"));
    EXPECT_FALSE(expected.empty());
    EXPECT_EQ(checksum(field(without.out, "b")), expected);
    EXPECT_EQ(checksum(field(with.out, "a")), expected);
    EXPECT_EQ(checksum(field(with.out, "b")), expected);

    const double ns_with = std::atof(field(with.out, "ns").c_str());
    const double ns_without = std::atof(field(without.out, "ns").c_str());
    std::printf("two overlapping steps: %.2f s with --coexec, %.2f s without, ratio %.3f\n",
                ns_with / 1e9, ns_without / 1e9, ns_without > 0 ? ns_with / ns_without : 0.0);
}

// --coexec=step: each step has a segment of its own, gone when the step ends.
TEST_F(Slurm, StepModeGivesEachStepASegmentRemovedAtItsEnd) {
    const char* body = R"sh(
srun --overlap -n1 -c$SLURM_CPUS_ON_NODE --cpu-bind=none "$OMP_WORK" $WORK_ARGS >/dev/null &
a=$!
srun --overlap -n1 -c$SLURM_CPUS_ON_NODE --cpu-bind=none "$OMP_WORK" $WORK_ARGS >/dev/null &
b=$!
most=""
while kill -0 $a 2>/dev/null || kill -0 $b 2>/dev/null; do
  now=$(cd /dev/shm && ls -1 | grep "^coexec\.slurm\.$SLURM_JOB_ID\." | sort | tr '\n' ' ')
  [ $(wc -w <<<"$now") -gt $(wc -w <<<"$most") ] && most=$now
  sleep 0.05
done
wait $a; ra=$?
wait $b; rb=$?
echo "steps $ra $rb"
echo "during $most"
echo "after $(cd /dev/shm && ls -1 | grep "^coexec\.slurm\.$SLURM_JOB_ID\." | tr '\n' ' ')"
)sh";
    std::string out;
    int status = -1;
    std::string id = run_job(body, {"-N1", "--exclusive", "--coexec=step"}, out, status);
    ASSERT_EQ(status, 0) << out;
    EXPECT_EQ(field(out, "steps"), "0 0") << out;
    const std::string u = ".u" + std::to_string(geteuid());
    std::set<std::string> during;
    std::istringstream words(field(out, "during"));
    for (std::string w; words >> w;)
        during.insert(w);
    // Two step segments, slurm.<job>.<step>, and no job segment.
    EXPECT_EQ(during.size(), 2u) << out;
    for (const std::string& s : during) {
        EXPECT_EQ(s.rfind("coexec.slurm." + id + ".", 0), 0u) << s;
        EXPECT_NE(s, "coexec.slurm." + id + u) << s;
    }
    EXPECT_EQ(field(out, "after"), "") << out;
    EXPECT_TRUE(segments_gone(id));
}

// A task killed with SIGKILL leaves its segment (and libomp's file) behind
// until its job ends; then the plugin removes them.
TEST_F(Slurm, NothingIsLeftAfterATaskIsKilled) {
    const char* body = R"sh(
seg=slurm.$SLURM_JOB_ID
srun --overlap -n1 -c$SLURM_CPUS_ON_NODE --cpu-bind=none "$OMP_WORK" 100000 20000 >/dev/null 2>&1 &
step=$!
pid=""
for i in $(seq 400); do
  pid=$("$COEXEC" --name $seg ps --json 2>/dev/null | grep -o '"pid": *[0-9]*' | head -1 | grep -o '[0-9]*$')
  [ -n "$pid" ] && break
  sleep 0.05
done
echo "pid $pid"
kill -9 $pid
wait $step
echo "step $?"
echo "left $(cd /dev/shm && ls -1 | grep "^coexec\.$seg\." | tr '\n' ' ')"
)sh";
    std::string out;
    int status = -1;
    std::string id = run_job(body, {"-N1", "--exclusive", "--coexec"}, out, status);
    ASSERT_EQ(status, 0) << out;
    const long pid = std::atol(field(out, "pid").c_str());
    ASSERT_GT(pid, 0) << out;
    EXPECT_NE(field(out, "step"), "0") << out;
    // The kill left the segment there while the job ran...
    EXPECT_NE(field(out, "left"), "") << out;
    // ...and the job's end removed it.
    EXPECT_TRUE(segments_gone(id));
    EXPECT_TRUE(openmp_files(pid).empty());
}

// scancel of a running job: its segment is gone once the job has ended.
TEST_F(Slurm, NothingIsLeftAfterScancel) {
    const std::string id = submit("srun -n1 -c$SLURM_CPUS_ON_NODE --cpu-bind=none \"$OMP_WORK\" "
                                  "100000 20000\n",
                                  {"-N1", "--exclusive", "--coexec"}, scratch_ + "/cancelled.out");
    ASSERT_FALSE(id.empty());
    // Wait until the step's process is a member of the job's segment.
    const std::string name = "slurm." + id;
    long pid = 0;
    for (int i = 0; i < 600 && pid == 0; ++i) {
        ProcessResult ps = coexec::test::run({COEXEC_CLI, "--name", name, "ps", "--json"}, {}, 10s);
        auto j = nlohmann::json::parse(ps.out, nullptr, false);
        if (ps.exit_code == 0 && j.is_array() && !j.empty()) pid = j[0].value("pid", 0L);
        if (pid == 0) std::this_thread::sleep_for(50ms);
    }
    ASSERT_GT(pid, 0) << "the job's step never joined segment " << name << "\n"
                      << read_file(scratch_ + "/cancelled.out");
    ASSERT_FALSE(job_segments(id).empty());
    ProcessResult cancel = slurm({"/usr/bin/scancel", id});
    ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
    std::string state;
    wait_for_job(id, &state);
    EXPECT_EQ(state, "CANCELLED");
    // The job epilog runs once every step is gone.
    EXPECT_TRUE(segments_gone(id)) << "job " << id << " left its segment after scancel";
    for (int i = 0; i < 200 && kill(pid, 0) == 0; ++i)
        std::this_thread::sleep_for(50ms);
    EXPECT_TRUE(openmp_files(pid).empty());
}

// An option value other than job or step is refused before anything runs.
TEST_F(Slurm, ABadOptionValueIsRefused) {
    ProcessResult r = slurm({"/usr/bin/srun", "-n1", "--coexec=sometimes", "/bin/true"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("'job' or 'step'"), std::string::npos) << r.err;
}

// `srun -n 2 --coexec` of an MPI + OpenMP program whose ranks exchange
// halos: both ranks join the job's segment, and the result is the one of
// the same step without coexec.
TEST_F(Slurm, MpiRanksShareTheSegmentWithUnchangedResults) {
    if (std::string(HALO_PROGRAM).empty()) GTEST_SKIP() << "Open MPI's C library was not found";
    ProcessResult list = slurm({"/usr/bin/srun", "--mpi=list"});
    const std::string mpis = list.out + list.err;
    std::string mpi = mpis.find("pmix") != std::string::npos   ? "pmix"
                      : mpis.find("pmi2") != std::string::npos ? "pmi2"
                                                               : "";
    if (mpi.empty())
        GTEST_SKIP() << "this Slurm has neither its pmix nor its pmi2 plugin:\n" << mpis;
    const std::string body =
        R"sh(
set -u
seg=slurm.$SLURM_JOB_ID
srun -n2 --mpi=)sh" +
        mpi + R"sh( --cpu-bind=none "$HALO" 100000 300 >"$SCRATCH/native.$SLURM_JOB_ID" 2>&1
echo "native $? $(cat "$SCRATCH/native.$SLURM_JOB_ID")"
srun -n2 --mpi=)sh" +
        mpi +
        R"sh( --cpu-bind=none --coexec "$HALO" 100000 300 >"$SCRATCH/coexec.$SLURM_JOB_ID" 2>&1 &
step=$!
members=0
while kill -0 $step 2>/dev/null; do
  n=$("$COEXEC" --name $seg ps --json 2>/dev/null | grep -o '"pid"' | wc -l)
  [ "$n" -gt "$members" ] && members=$n
  sleep 0.05
done
wait $step
echo "coexec $? $(cat "$SCRATCH/coexec.$SLURM_JOB_ID")"
echo "members $members"
)sh";
    std::string out;
    int status = -1;
    std::string id = run_job(body, {"-N1", "-n2", "--exclusive"}, out, status);
    ASSERT_EQ(status, 0) << out;
    const std::string native = field(out, "native");
    ASSERT_EQ(native.rfind("0 checksum ", 0), 0u) << out;
    EXPECT_EQ(field(out, "coexec"), native) << out;
    EXPECT_EQ(field(out, "members"), "2") << out;
    EXPECT_TRUE(segments_gone(id));
}

} // namespace
