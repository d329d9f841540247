// `coexec record` and `coexec plot`, run as real processes around a real
// two-process script; the traces are parsed and checked against the
// invariants of CPU ownership.
#include "process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace coexec::clitest {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

const std::string kCli = COEXEC_CLI;
const std::string kScript = TRACE_SCRIPT;
// Timestamps are microseconds as doubles: equal instants may differ by
// rounding.
constexpr double kEps = 0.01;

struct Slice {
    int cpu;
    double start, end;
    int pid, tid;
    std::string label, state;
};
struct Instant {
    std::string name;
    double ts;
    int pid;
};
struct Sample {
    int pid;
    double ts;
    int cpus;
};

// A trace written by `coexec record`, taken apart.
struct Trace {
    json doc;
    int64_t cpu_pid = 0;
    std::vector<Slice> slices; // CPU tracks
    std::vector<Instant> instants;
    std::vector<Sample> samples; // "CPUs held" counters
    std::map<int, std::string> process_names;

    std::vector<Slice> slices_of(int pid) const {
        std::vector<Slice> out;
        for (const auto& s : slices)
            if (s.pid == pid) out.push_back(s);
        return out;
    }
    const Instant* instant(const std::string& name, int pid) const {
        for (const auto& i : instants)
            if (i.name == name && i.pid == pid) return &i;
        return nullptr;
    }
};

Trace read_trace(const std::string& path) {
    std::ifstream in(path);
    Trace t;
    t.doc = json::parse(in);
    t.cpu_pid = t.doc["otherData"]["cpu_track_pid"].get<int64_t>();
    for (const json& e : t.doc["traceEvents"]) {
        const std::string ph = e["ph"];
        if (ph == "X") {
            EXPECT_EQ(e["pid"].get<int64_t>(), t.cpu_pid) << e.dump();
            const json& a = e["args"];
            const double ts = e["ts"], dur = e["dur"];
            t.slices.push_back({int(e["tid"].get<int64_t>() - t.cpu_pid), ts, ts + dur,
                                a["pid"].get<int>(), a["tid"].get<int>(), a["label"], a["state"]});
        } else if (ph == "i") {
            t.instants.push_back({e["name"], e["ts"], e["args"].value("pid", 0)});
        } else if (ph == "C") {
            t.samples.push_back({e["pid"].get<int>(), e["ts"], e["args"]["cpus"].get<int>()});
        } else if (ph == "M" && e["name"] == "process_name") {
            t.process_names[int(e["pid"].get<int64_t>())] = e["args"]["name"];
        }
    }
    return t;
}

// Slices on one CPU's track never overlap.
void expect_no_overlap(const Trace& t) {
    std::map<int, std::vector<Slice>> by_cpu;
    for (const auto& s : t.slices)
        by_cpu[s.cpu].push_back(s);
    for (auto& [cpu, list] : by_cpu) {
        std::sort(list.begin(), list.end(),
                  [](const Slice& a, const Slice& b) { return a.start < b.start; });
        for (size_t i = 1; i < list.size(); ++i)
            EXPECT_GE(list[i].start, list[i - 1].end - kEps)
                << "CPU " << cpu << ": pid " << list[i - 1].pid << " [" << list[i - 1].start << ", "
                << list[i - 1].end << ") overlaps pid " << list[i].pid << " at " << list[i].start;
    }
}

// Every slice's process was a member throughout: between its "join" (or
// "member at start") and its "leave" or "reaped".
void expect_members(const Trace& t) {
    const double end = t.doc["otherData"]["end_monotonic_ns"].get<double>() / 1000.0 -
                       t.doc["otherData"]["start_monotonic_ns"].get<double>() / 1000.0;
    for (const auto& s : t.slices) {
        const Instant* in = t.instant("join", s.pid);
        if (!in) in = t.instant("member at start", s.pid);
        ASSERT_NE(in, nullptr) << "pid " << s.pid << " holds CPU " << s.cpu << " but never joined";
        const Instant* out = t.instant("leave", s.pid);
        if (!out) out = t.instant("reaped", s.pid);
        const double until = out ? out->ts : end + kEps;
        EXPECT_GE(s.start, in->ts - kEps)
            << "pid " << s.pid << " held CPU " << s.cpu << " before it joined";
        EXPECT_LE(s.end, until + kEps)
            << "pid " << s.pid << " held CPU " << s.cpu << " after it left";
    }
}

// Each "CPUs held" sample equals the slices of its process open at that
// moment (slices are half-open: one that ends at the sample does not count).
void expect_counters_match(const Trace& t) {
    ASSERT_FALSE(t.samples.empty());
    for (const auto& c : t.samples) {
        int open = 0;
        for (const auto& s : t.slices)
            open += s.pid == c.pid && s.start <= c.ts + kEps && s.end > c.ts + kEps;
        EXPECT_EQ(open, c.cpus) << "pid " << c.pid << " at " << c.ts;
    }
}

// No record lost, but for at most `dead_writers` that a process killed
// mid-record never finished (the rest of the trace stays sound without them).
void expect_invariants(const Trace& t, int dead_writers = 0) {
    const json& other = t.doc["otherData"];
    EXPECT_EQ(other["overwritten_events"], 0);
    EXPECT_LE(other["unfinished_events"].get<int>(), dead_writers);
    EXPECT_EQ(other["lost_events"].get<int>(), other["unfinished_events"].get<int>());
    expect_no_overlap(t);
    expect_members(t);
    expect_counters_match(t);
}

// Parses the "<role> <pid>" lines the script prints.
std::map<std::string, int> roles(const std::string& out) {
    std::map<std::string, int> r;
    std::istringstream in(out);
    std::string role;
    int pid;
    while (in >> role >> pid)
        r[role] = pid;
    return r;
}

// ---- coexec plot ------------------------------------------------------------

// What `coexec plot` gave gnuplot: its legend entries (one per process) and
// series (one per process and runtime label), each with its style, the
// "fs ... lc rgb '#rrggbb'" between the plot style and the title.
struct PlotScript {
    std::string text;
    std::vector<std::pair<std::string, std::string>> legend; // title, style
    std::vector<std::pair<std::string, std::string>> series; // title ("" if none), style
    std::string style_of(const std::string& legend_prefix) const {
        for (const auto& [title, style] : legend)
            if (title.rfind(legend_prefix, 0) == 0) return style;
        return "";
    }
};

PlotScript parse_plot_script(const std::string& text) {
    PlotScript p{text, {}, {}};
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        const bool key = line.find("keyentry with boxes ") != std::string::npos;
        const bool series = line.find(" with boxxyerror ") != std::string::npos;
        if (!key && !series) continue;
        const std::string with = key ? "keyentry with boxes " : " with boxxyerror ";
        const size_t from = line.find(with) + with.size();
        size_t end = line.find(" title '", from);
        std::string title;
        if (end != std::string::npos) {
            const size_t open = end + 8;
            title = line.substr(open, line.find('\'', open) - open);
        } else {
            end = line.find(" notitle", from);
        }
        std::string style = line.substr(from, end - from);
        (key ? p.legend : p.series).emplace_back(title, style);
    }
    return p;
}

// Runs `coexec plot TRACE -o PNG` with a gnuplot on PATH that keeps the
// script it is given, then hands it to the real gnuplot.
PlotScript plot_keeping_script(const std::string& dir, const std::string& trace,
                               const std::string& png, Outcome* outcome = nullptr) {
    std::string real;
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string d; real.empty() && std::getline(dirs, d, ':');)
        if (!d.empty() && access((d + "/gnuplot").c_str(), X_OK) == 0) real = d + "/gnuplot";
    EXPECT_FALSE(real.empty()) << "no gnuplot on PATH";
    const std::string bin = dir + "/fakebin", kept = dir + "/plot.gp";
    fs::create_directories(bin);
    std::ofstream(bin + "/gnuplot")
        << "#!/bin/sh\ncat > '" << kept << "' && exec '" << real << "' '" << kept << "'\n";
    fs::permissions(bin + "/gnuplot", fs::perms::owner_all);
    Outcome o = run_process({kCli, "plot", trace, "-o", png},
                            {{"PATH", bin + ":" + (path ? path : "/usr/bin:/bin")}});
    EXPECT_EQ(o.status, 0) << o.err;
    if (outcome) *outcome = o;
    std::ifstream in(kept);
    std::stringstream text;
    text << in.rdbuf();
    return parse_plot_script(text.str());
}

class RecordTest : public ::testing::Test {
  protected:
    void TearDown() override {
        shm_unlink(("/coexec." + name_ + ".u" + std::to_string(geteuid())).c_str());
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    // `coexec record -o <trace> --name <ours> ARGS...`.
    Outcome record(std::vector<std::string> args) const {
        std::vector<std::string> argv{kCli, "record", "-o", trace_path(), "--name", name_};
        argv.insert(argv.end(), args.begin(), args.end());
        return run_process(argv, {}, 60s);
    }
    std::string trace_path() const { return dir_ + "/trace.json"; }
    const std::string& dir() const { return dir_; }
    const std::string& name() const { return name_; }
    // `coexec ARGS... --name <ours>`.
    Outcome cli(std::vector<std::string> args) const {
        args.insert(args.begin(), kCli);
        args.insert(args.end(), {"--name", name_});
        return run_process(args);
    }

  private:
    std::string name_ = "rectest-" + std::to_string(getpid()) + "-" +
                        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string dir_ = [] {
        std::string d = fs::temp_directory_path() / "coexec-record-XXXXXX";
        if (!mkdtemp(d.data())) throw std::runtime_error("mkdtemp");
        return d;
    }();
};

TEST_F(RecordTest, TwoProcessScriptInOrder) {
    Outcome o = record({"--", kScript, "order"});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.err.find(trace_path()), std::string::npos) << o.err;
    EXPECT_NE(o.err.find("ui.perfetto.dev"), std::string::npos) << o.err;
    const auto who = roles(o.out);
    ASSERT_EQ(who.size(), 2u) << o.out;
    const int a = who.at("A"), b = who.at("B");
    Trace t = read_trace(trace_path());
    expect_invariants(t);

    // The script: A joins, runs "alpha", B joins, runs "beta", A leaves, B leaves.
    const Instant* join_a = t.instant("join", a);
    const Instant* join_b = t.instant("join", b);
    const Instant* leave_a = t.instant("leave", a);
    const Instant* leave_b = t.instant("leave", b);
    ASSERT_TRUE(join_a && join_b && leave_a && leave_b) << t.doc.dump();
    auto first_running = [&](int pid, const std::string& label) {
        double first = -1;
        for (const auto& s : t.slices_of(pid))
            if (s.label == label && s.state == "running" && (first < 0 || s.start < first))
                first = s.start;
        return first;
    };
    const double alpha = first_running(a, "alpha"), beta = first_running(b, "beta");
    ASSERT_GE(alpha, 0) << "no alpha slice of A";
    ASSERT_GE(beta, 0) << "no beta slice of B";
    EXPECT_LT(join_a->ts, alpha);
    EXPECT_LT(alpha, join_b->ts);
    EXPECT_LT(join_b->ts, beta);
    EXPECT_LT(beta, leave_a->ts);
    EXPECT_LT(leave_a->ts, leave_b->ts);
    // A's only task ran on one CPU for its 40 ms, as one slice (a grant).
    double alpha_ms = 0;
    for (const auto& s : t.slices_of(a))
        if (s.label == "alpha") alpha_ms += (s.end - s.start) / 1000.0;
    EXPECT_GE(alpha_ms, 39.0);
    // Names: the processes by their kernel names, the CPUs as tracks.
    EXPECT_EQ(t.process_names.at(a), "coexec-trace-sc");
    EXPECT_EQ(t.process_names.at(int(t.cpu_pid)), "CPUs (coexec)");
}

TEST_F(RecordTest, CrashedHolderSlicesEndAndSurvivorGetsItsCpus) {
    Outcome o = record({"--", kScript, "crash"});
    ASSERT_EQ(o.status, 0) << o.err;
    const auto who = roles(o.out);
    ASSERT_EQ(who.size(), 2u) << o.out;
    const int victim = who.at("victim"), survivor = who.at("survivor");
    Trace t = read_trace(trace_path());
    // SIGKILL may catch a victim thread (one per CPU) between claiming a
    // record and finishing it.
    expect_invariants(t, int(sysconf(_SC_NPROCESSORS_ONLN)));
    const Instant* reaped = t.instant("reaped", victim);
    const Instant* died = t.instant("died", victim);
    ASSERT_NE(reaped, nullptr) << "the victim's death is not in the trace";
    ASSERT_NE(died, nullptr);
    EXPECT_LE(died->ts, reaped->ts + kEps);
    EXPECT_EQ(t.instant("leave", victim), nullptr);
    // The victim held CPUs; none of its slices outlives the reaping, and
    // every CPU it held to the end goes to the survivor afterwards.
    std::vector<Slice> held = t.slices_of(victim);
    ASSERT_FALSE(held.empty());
    std::map<int, double> last_end; // CPU -> end of the victim's last slice there
    for (const auto& s : held) {
        EXPECT_LE(s.end, reaped->ts + kEps);
        last_end[s.cpu] = std::max(last_end[s.cpu], s.end);
    }
    int handed_over = 0;
    for (const auto& [cpu, end] : last_end) {
        bool taken = false;
        for (const auto& s : t.slices_of(survivor))
            taken |= s.cpu == cpu && s.start >= end - kEps && s.label == "survivor";
        handed_over += taken;
        EXPECT_TRUE(taken) << "CPU " << cpu << " never went to the survivor after "
                           << "the victim's last slice there ended at " << end;
    }
    EXPECT_EQ(handed_over, int(last_end.size()));
}

TEST_F(RecordTest, DurationAndPlot) {
    // No process on the segment: an empty but well-formed trace.
    Outcome o = record({"--duration", "0.2", "--png"});
    ASSERT_EQ(o.status, 0) << o.err;
    Trace t = read_trace(trace_path());
    EXPECT_TRUE(t.slices.empty());
    EXPECT_TRUE(fs::exists(dir() + "/trace.png")) << o.err;
}

TEST_F(RecordTest, PlotDrawsAScriptTrace) {
    Outcome rec = record({"--", kScript, "order"});
    ASSERT_EQ(rec.status, 0) << rec.err;
    const auto who = roles(rec.out);
    ASSERT_EQ(who.size(), 2u) << rec.out;
    const std::string png = dir() + "/timeline.png";
    Outcome o = run_process({kCli, "plot", trace_path(), "-o", png});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.err.find("2 processes"), std::string::npos) << o.err;
    std::ifstream in(png, std::ios::binary);
    char magic[8] = {};
    in.read(magic, 8);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG");
    EXPECT_GT(fs::file_size(png), 1000u);

    // A and B are one program (one kernel name): each gets a legend entry
    // "name pid (labels)" and a colour of its own.
    PlotScript p = plot_keeping_script(dir(), trace_path(), png);
    ASSERT_EQ(p.legend.size(), 2u) << p.text;
    const std::string a = "coexec-trace-sc " + std::to_string(who.at("A")) + " (";
    const std::string b = "coexec-trace-sc " + std::to_string(who.at("B")) + " (";
    ASSERT_NE(p.style_of(a), "") << p.text;
    ASSERT_NE(p.style_of(b), "") << p.text;
    EXPECT_NE(p.style_of(a), p.style_of(b)) << p.text;
    for (const auto& [title, style] : p.legend) {
        if (title.rfind(a, 0) == 0) {
            EXPECT_NE(title.find("alpha"), std::string::npos) << title;
        }
        if (title.rfind(b, 0) == 0) {
            EXPECT_NE(title.find("beta"), std::string::npos) << title;
        }
    }
}

// A synthetic trace: two processes named gmx with the same runtime label,
// one with three labels, and 14 more, on 4 CPUs.
TEST_F(RecordTest, PlotGivesEachProcessItsOwnColour) {
    const int64_t cpu = 1'000'000'000;
    json events = json::array();
    auto slice = [&](int pid, const std::string& process, const std::string& label, double ts,
                     const std::string& state = "running") {
        events.push_back({{"ph", "X"},
                          {"name", process + " · " + label},
                          {"pid", cpu},
                          {"tid", cpu + pid % 4},
                          {"ts", ts},
                          {"dur", 1000.0},
                          {"args",
                           {{"pid", pid},
                            {"tid", pid},
                            {"process", process},
                            {"label", label},
                            {"state", state}}}});
    };
    // Written as a recording writes them, when they end: gmx 102's first
    // slice comes before gmx 101's, though it started later.
    slice(102, "gmx", "openmp", 5000);
    slice(101, "gmx", "openmp", 1000);
    slice(101, "gmx", "openmp", 9000, "idle");
    slice(200, "hpccg", "openmp", 10000);
    slice(200, "hpccg", "pocl", 12000);
    slice(200, "hpccg", "", 14000);
    for (int i = 0; i < 14; ++i)
        slice(300 + i, "p" + std::to_string(i), "native", 20000 + 1000.0 * i);
    const std::string trace = dir() + "/synthetic.json";
    std::ofstream(trace)
        << json{{"traceEvents", events}, {"otherData", {{"cpu_track_pid", cpu}}}}.dump();

    Outcome o;
    PlotScript p = plot_keeping_script(dir(), trace, dir() + "/synthetic.png", &o);
    EXPECT_NE(o.err.find("17 processes, 19 process/runtime pairs, on 4 CPUs"), std::string::npos)
        << o.err;
    ASSERT_EQ(p.legend.size(), 17u) << p.text;
    // In order of their first slice, each with the labels it was seen with.
    EXPECT_EQ(p.legend[0].first, "gmx 101 (openmp)");
    EXPECT_EQ(p.legend[1].first, "gmx 102 (openmp)");
    EXPECT_EQ(p.legend[2].first, "hpccg 200 (openmp, pocl, ?)");
    EXPECT_EQ(p.legend[16].first, "p13 313 (native)");
    // One style per process: the two gmx differ, and so do all 17 (the
    // palette, then hatched).
    EXPECT_NE(p.legend[0].second, p.legend[1].second);
    std::set<std::string> styles;
    for (const auto& [title, style] : p.legend)
        styles.insert(style);
    EXPECT_EQ(styles.size(), 17u) << p.text;
    EXPECT_NE(p.legend[16].second.find("pattern"), std::string::npos) << p.legend[16].second;
    // A process's series are drawn in its colour; hpccg's three labels in
    // three shades of it, each in the legend under the process.
    ASSERT_EQ(p.series.size(), 19u) << p.text;
    EXPECT_EQ(p.series[0], std::make_pair(std::string(), p.legend[0].second));
    EXPECT_EQ(p.series[1], std::make_pair(std::string(), p.legend[1].second));
    EXPECT_EQ(p.series[2].second, p.legend[2].second);
    EXPECT_EQ(p.series[2].first, "    openmp");
    EXPECT_EQ(p.series[3].first, "    pocl");
    EXPECT_EQ(p.series[4].first, "    ?");
    EXPECT_EQ(
        (std::set<std::string>{p.series[2].second, p.series[3].second, p.series[4].second}).size(),
        3u);
    EXPECT_TRUE(fs::exists(dir() + "/synthetic.png"));
}

// The command's overrides go to the variable the runtime reads
// (NOSV_CONFIG_OVERRIDE when it is not empty, else COEXEC_CONFIG_OVERRIDE),
// so that the command joins the segment being recorded.
TEST_F(RecordTest, CommandGetsTheOverrideItReads) {
    const std::vector<std::string> show{
        "/bin/sh", "-c", "echo \"nosv=[$NOSV_CONFIG_OVERRIDE] coexec=[$COEXEC_CONFIG_OVERRIDE]\""};
    std::vector<std::string> argv{kCli, "record", "-o", trace_path(), "--name", name(), "--"};
    argv.insert(argv.end(), show.begin(), show.end());
    const std::string joined = "shared_memory.name=" + name();

    Outcome o = run_process(argv, {{"NOSV_CONFIG_OVERRIDE", ""},
                                   {"COEXEC_CONFIG_OVERRIDE", "governor.policy=idle"}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("nosv=[] coexec=[governor.policy=idle," + joined + "]"),
              std::string::npos)
        << o.out;

    o = run_process(argv, {{"NOSV_CONFIG_OVERRIDE", "governor.spins=5"},
                           {"COEXEC_CONFIG_OVERRIDE", "governor.policy=idle"}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("nosv=[governor.spins=5," + joined + "] coexec=[governor.policy=idle]"),
              std::string::npos)
        << o.out;

    o = run_process(argv, {{"NOSV_CONFIG_OVERRIDE", ""}, {"COEXEC_CONFIG_OVERRIDE", ""}});
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.out.find("nosv=[" + joined + "] coexec=[]"), std::string::npos) << o.out;
}

TEST_F(RecordTest, BadInputIsAClearError) {
    Outcome o = record({"--duration", "1", "--", kScript, "order"});
    EXPECT_NE(o.status, 0);
    EXPECT_FALSE(o.signaled);
    Outcome missing = run_process({kCli, "plot", dir() + "/nope.json", "-o", dir() + "/x.png"});
    EXPECT_EQ(missing.status, 2);
    EXPECT_NE(missing.err.find("cannot read"), std::string::npos) << missing.err;
    std::ofstream(dir() + "/bad.json") << "{\"not\": \"a trace\"";
    Outcome bad = run_process({kCli, "plot", dir() + "/bad.json", "-o", dir() + "/x.png"});
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("not a coexec trace"), std::string::npos) << bad.err;
    Outcome cannot = run_process({kCli, "record", "-o", "/nonexistent-dir/t.json", "--name",
                                  "rectest-bad", "--duration", "0.1"});
    EXPECT_EQ(cannot.status, 2);
    EXPECT_NE(cannot.err.find("cannot write"), std::string::npos) << cannot.err;
    Outcome exec_fail = record({"--", "/nonexistent/program"});
    EXPECT_EQ(exec_fail.status, 127) << exec_fail.err;
}

// ---- coexec record --native ---------------------------------------------------

TEST_F(RecordTest, NativeSamplesTheCommandsProcessTree) {
    Outcome o = run_process(
        {kCli, "record", "--native", "-o", trace_path(), "--", kScript, "native"}, {}, 60s);
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_NE(o.err.find(trace_path()), std::string::npos) << o.err;
    const auto who = roles(o.out);
    ASSERT_EQ(who.size(), 2u) << o.out;
    const int main_pid = who.at("main"), child = who.at("child");
    Trace t = read_trace(trace_path());
    expect_invariants(t);
    EXPECT_EQ(t.doc["otherData"]["producer"], "coexec record --native");
    EXPECT_GT(t.doc["otherData"]["sample_period_ns"].get<uint64_t>(), 0u);
    EXPECT_EQ(t.process_names.at(int(t.cpu_pid)), "CPUs (kernel, sampled)");
    // The CPU tracks, one per kernel CPU, and slices of both processes: the
    // main one on both of its threads (3 spinning threads on 2 CPUs or more
    // each get CPU time), the child found by the scan for descendants.
    std::set<int> main_tids;
    int child_slices = 0;
    for (const auto& s : t.slices) {
        EXPECT_EQ(s.label, "native");
        EXPECT_LT(s.cpu, int(std::thread::hardware_concurrency()));
        EXPECT_GT(s.end, s.start);
        if (s.pid == main_pid) main_tids.insert(s.tid);
        if (s.pid == child) ++child_slices;
    }
    // Each thread runs for 300 ms of CPU time, however loaded the machine:
    // the sampler sees every one of them run. How long it saw them depends
    // on its own turns on a loaded machine, so only that they ran is checked.
    EXPECT_EQ(main_tids.size(), 2u) << t.doc.dump();
    EXPECT_GT(child_slices, 0) << t.doc.dump();
    // Plain slices on every CPU the sampler saw, no coexec states.
    for (const auto& s : t.slices)
        EXPECT_EQ(s.state, "running");
    // The child is a fork: the same name and label as its parent, yet its
    // own colour in the plot.
    PlotScript p = plot_keeping_script(dir(), trace_path(), dir() + "/native.png");
    const std::string main_entry = "coexec-trace-sc " + std::to_string(main_pid) + " (native)";
    const std::string child_entry = "coexec-trace-sc " + std::to_string(child) + " (native)";
    ASSERT_NE(p.style_of(main_entry), "") << p.text;
    ASSERT_NE(p.style_of(child_entry), "") << p.text;
    EXPECT_NE(p.style_of(main_entry), p.style_of(child_entry)) << p.text;
}

TEST_F(RecordTest, NativeWatchesARunningProcessUntilItExits) {
    Background script({kScript, "native"}, {});
    Outcome o = run_process(
        {kCli, "record", "--native", "--pid", std::to_string(script.pid()), "-o", trace_path()}, {},
        60s);
    ASSERT_EQ(o.status, 0) << o.err;
    Trace t = read_trace(trace_path());
    expect_invariants(t);
    EXPECT_FALSE(t.slices_of(script.pid()).empty()) << t.doc.dump();
    EXPECT_NE(t.instant("leave", script.pid()), nullptr) << "it exited while watched";

    Outcome gone =
        run_process({kCli, "record", "--native", "--pid", "999999999", "-o", trace_path()});
    EXPECT_EQ(gone.status, 2);
    EXPECT_NE(gone.err.find("no process"), std::string::npos) << gone.err;
}

TEST_F(RecordTest, NativeNeedsACommand) {
    Outcome o = run_process({kCli, "record", "--native", "-o", trace_path()});
    EXPECT_NE(o.status, 0);
    EXPECT_FALSE(o.signaled);
    EXPECT_NE(o.err.find("needs a command"), std::string::npos) << o.err;
}

// ---- coexec top: CPU time per runtime label, shares -------------------------

// The row of `pid` in `coexec top --json`'s processes, or null.
const json* process_of(const json& top, int pid) {
    for (const json& p : top["processes"])
        if (p["pid"] == pid) return &p;
    return nullptr;
}

// The cells of the text row starting with `pid` in the last table of
// `text` that has `header` in its header line.
std::vector<std::string> row_cells(const std::string& text, const std::string& header, int pid) {
    std::vector<std::string> cells;
    std::istringstream in(text);
    bool in_table = false;
    for (std::string line; std::getline(in, line);) {
        if (line.find(header) != std::string::npos) in_table = true;
        if (line.empty()) in_table = false;
        std::istringstream words(line);
        std::string first;
        if (in_table && words >> first && first == std::to_string(pid)) {
            cells = {first};
            for (std::string w; words >> w;)
                cells.push_back(w);
        }
    }
    return cells;
}

TEST_F(RecordTest, TopShowsCpuTimePerRuntimeLabelAndBothShares) {
    // A: 240 ms attached as "openmp", 2 x 50 ms "alpha" tasks, then idle; then B:
    // 100 ms attached as "pocl", then busy attached as "tbb" while A lives.
    Background script({kScript, "shares"},
                      {{"NOSV_CONFIG_OVERRIDE", "shared_memory.name=" + name()}});
    const int a = script.pid();
    json top;
    int b = 0;
    for (auto until = std::chrono::steady_clock::now() + 20s;
         b == 0 && std::chrono::steady_clock::now() < until;) {
        std::this_thread::sleep_for(20ms);
        Outcome o = cli({"top", "--once", "--json"});
        if (o.status != 0) continue;
        top = json::parse(o.out);
        for (const json& p : top["processes"])
            if (p["pid"] != a && p["cpu_time_by_label_ns"]["tbb"].get<uint64_t>() > 0) b = p["pid"];
    }
    ASSERT_NE(b, 0) << "B never ran as tbb: " << top.dump(1);

    // B is the only process that runs now: over the refresh interval it gets
    // every CPU second, while since start A has its share too.
    Outcome o = cli({"top", "--iterations", "2", "--interval", "0.3"});
    ASSERT_EQ(o.status, 0) << o.err;
    const std::string second = o.out.substr(o.out.rfind("coexec top - "));
    const std::vector<std::string> ra = row_cells(second, "SHARE-NOW", a);
    const std::vector<std::string> rb = row_cells(second, "SHARE-NOW", b);
    // PID PROCESS CPUS READY CPU-TIME %CPU SHARE-NOW SHARE HANDOFFS THREADS
    ASSERT_EQ(ra.size(), 10u) << second;
    ASSERT_EQ(rb.size(), 10u) << second;
    EXPECT_EQ(ra[6], "0.0%") << second;
    EXPECT_EQ(rb[6], "100.0%") << second;
    const double share_a = std::stod(ra[7]), share_b = std::stod(rb[7]);
    EXPECT_GT(share_a, 1.0) << second;
    EXPECT_LT(share_b, 99.0) << second;
    EXPECT_NEAR(share_a + share_b, 100.0, 0.2) << second;
    // The runtime table: A ran openmp and other, B tbb and pocl; a used
    // class shows its time and its share of the process's ("240ms 69.8%").
    const std::vector<std::string> la = row_cells(second, "OPENMP", a);
    const std::vector<std::string> lb = row_cells(second, "OPENMP", b);
    ASSERT_EQ(la.size(), 8u) << second;
    ASSERT_EQ(lb.size(), 8u) << second;
    EXPECT_TRUE(la[3].ends_with("%") && la[4] == "-" && la[5] == "-" && la[7].ends_with("%"))
        << second;
    EXPECT_TRUE(lb[2] == "-" && lb[4].ends_with("%") && lb[6].ends_with("%") && lb[7] == "-")
        << second;
    EXPECT_NEAR(std::stod(la[3]) + std::stod(la[7]), 100.0, 0.2) << second;

    // The same figures in JSON, taken while A stays idle.
    Outcome j = cli({"top", "--once", "--json"});
    ASSERT_EQ(j.status, 0) << j.err;
    top = json::parse(j.out);
    const json* pa = process_of(top, a);
    const json* pb = process_of(top, b);
    ASSERT_TRUE(pa && pb) << top.dump(1);
    const json& la_ns = (*pa)["cpu_time_by_label_ns"];
    const json& lb_ns = (*pb)["cpu_time_by_label_ns"];
    constexpr uint64_t kMs = 1'000'000;
    // Each thread held a CPU for all of its busy time, so each class got at
    // least that; a loaded machine may keep a holder off its CPU longer, so
    // no upper bound holds. A's task workers are labelled "worker" or
    // "alpha": other.
    EXPECT_GE(la_ns["openmp"].get<uint64_t>(), 240 * kMs) << la_ns;
    EXPECT_GE(la_ns["other"].get<uint64_t>(), 2 * 50 * kMs) << la_ns;
    EXPECT_EQ(la_ns["tbb"], 0) << la_ns;
    EXPECT_EQ(la_ns["pocl"], 0) << la_ns;
    EXPECT_EQ(la_ns["openmp"].get<uint64_t>() + la_ns["other"].get<uint64_t>(),
              (*pa)["cpu_time_ns"].get<uint64_t>());
    EXPECT_GE(lb_ns["pocl"].get<uint64_t>(), 100 * kMs) << lb_ns;
    EXPECT_GE(lb_ns["tbb"].get<uint64_t>(), 300 * kMs) << lb_ns;
    EXPECT_EQ(lb_ns["openmp"], 0) << lb_ns;
    EXPECT_EQ(lb_ns["other"], 0) << lb_ns;
}

} // namespace
} // namespace coexec::clitest
