// pocl_bench: the PoCL adapter's benchmarks. `compare` runs every measurement
// in child processes under each set-up (stock PoCL, PoCL under coexec, static
// partition), interleaved, and prints medians and ratios; `measure` is one
// child measurement and prints a single number.
#include "measurements.hpp"
#include "subprocess.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace coexec::pocl_bench;
using coexec::pocl_testing::Command;
using coexec::pocl_testing::Outcome;

int cpu_count() {
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int to_int(const std::string& text, const char* what) {
    size_t used = 0;
    int v = 0;
    try {
        v = std::stoi(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || v < 0) throw std::invalid_argument(std::string("bad ") + what);
    return v;
}

// Restricts the process to CPUs first..last (the static partition's host side).
void pin_host(const std::string& range) {
    auto dash = range.find('-');
    if (dash == std::string::npos) throw std::invalid_argument("--host-cpus wants FIRST-LAST");
    int first = to_int(range.substr(0, dash), "--host-cpus"),
        last = to_int(range.substr(dash + 1), "--host-cpus");
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c = first; c <= last; ++c)
        CPU_SET(c, &set);
    if (first > last || sched_setaffinity(0, sizeof set, &set) != 0)
        throw std::invalid_argument("cannot pin to CPUs " + range);
}

// `measure KIND [SUBMITTER TASKS] [--host-cpus A-B]`: one number on stdout.
int measure(std::vector<std::string> args) {
    if (args.size() >= 2 && args[args.size() - 2] == "--host-cpus") {
        pin_host(args.back());
        args.resize(args.size() - 2);
    }
    if (args.size() == 1 && args[0] == "latency")
        std::printf("%.3f\n", launch_latency_us());
    else if (args.size() == 1 && args[0] == "bandwidth")
        std::printf("%.3f\n", triad_bandwidth_gbs());
    else if (args.size() == 3 && args[0] == "multi")
        std::printf("%.6f\n",
                    multi_runtime_seconds(parse_submitter(args[1]), to_int(args[2], "TASKS")));
    else
        throw std::invalid_argument("measure wants latency | bandwidth | multi SUBMITTER TASKS");
    return 0;
}

// A runtime set-up: environment changes and extra child arguments.
struct Setup {
    std::string name;
    std::map<std::string, std::optional<std::string>> env;
    std::vector<std::string> extra_args;
};

struct Options {
    int repeats = 5;
    std::vector<int> tasks{2, 8, 32, 128, 256};
    std::string adapter = POCL_ADAPTER;
    std::string openmp_dir = OPENMP_ADAPTER_DIR;
    std::string tbb_adapter = TBB_ADAPTER;
    bool overhead = true;
    bool multi = true;
};

Setup stock() {
    return {"stock", {{"LD_PRELOAD", std::nullopt}}, {}};
}

Setup coexec_setup(const Options& o, Submitter s) {
    Setup c{"coexec", {{"LD_PRELOAD", o.adapter}}, {}};
    if (s == Submitter::OpenMP && fs::exists(fs::path(o.openmp_dir) / "libomp.so.5")) {
        c.env["LD_LIBRARY_PATH"] = o.openmp_dir;
        c.name = "coexec+omp";
    }
    if (s == Submitter::Tbb && fs::exists(o.tbb_adapter)) {
        c.env["LD_PRELOAD"] = o.tbb_adapter + ":" + o.adapter;
        c.name = "coexec+tbb";
    }
    return c;
}

// PoCL's workers pinned to the first half of the CPUs, the host runtime to
// the rest.
Setup static_partition() {
    int n = cpu_count(), half = std::max(1, n / 2);
    std::string pocl_cus = std::to_string(half);
    Setup s{"static",
            {{"LD_PRELOAD", std::nullopt},
             {"POCL_CPU_MAX_CU_COUNT", pocl_cus},
             {"POCL_MAX_PTHREAD_COUNT", pocl_cus},
             {"POCL_AFFINITY", "1"}},
            {}};
    if (n > 1) s.extra_args = {"--host-cpus", std::to_string(half) + "-" + std::to_string(n - 1)};
    return s;
}

// Where the children of one `compare` run keep their files (and PoCL kernel
// cache), and the coexec segment they share, private to this run so that
// other coexec processes on the machine cannot skew the numbers.
struct Sandbox {
    fs::path dir;
    std::string segment;
};

// Runs one child measurement; throws with its stderr on failure.
double run_child(const std::vector<std::string>& measure_args, const Setup& setup,
                 const Sandbox& sandbox) {
    const fs::path& scratch = sandbox.dir;
    Command c;
    c.argv = {fs::read_symlink("/proc/self/exe").string(), "measure"};
    c.argv.insert(c.argv.end(), measure_args.begin(), measure_args.end());
    c.argv.insert(c.argv.end(), setup.extra_args.begin(), setup.extra_args.end());
    c.env = setup.env;
    c.env["POCL_CACHE_DIR"] = (scratch / "cache").string();
    c.env["NOSV_CONFIG_OVERRIDE"] = "shared_memory.name=" + sandbox.segment;
    Outcome o = coexec::pocl_testing::run(c, scratch.string());
    if (o.exit_code != 0)
        throw std::runtime_error(setup.name + " child failed (" + std::to_string(o.exit_code) +
                                 "): " + o.err);
    return std::stod(o.out);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// One row of a table: the same measurement under several set-ups.
struct Row {
    std::string label;
    std::vector<std::string> args;
    std::vector<Setup> setups;
    std::vector<std::vector<double>> samples; // per set-up
};

// Interleaves set-ups and rows within each repeat so that machine noise
// spreads over all of them alike.
void measure_rows(std::vector<Row>& rows, int repeats, const Sandbox& scratch) {
    for (auto& r : rows)
        r.samples.assign(r.setups.size(), {});
    for (int rep = 0; rep < repeats; ++rep)
        for (auto& r : rows)
            for (size_t s = 0; s < r.setups.size(); ++s)
                r.samples[s].push_back(run_child(r.args, r.setups[s], scratch));
}

void print_overhead(const Options& o, const Sandbox& scratch) {
    Setup coexec{"coexec", {{"LD_PRELOAD", o.adapter}}, {}};
    std::vector<Row> rows{{"launch latency (us)", {"latency"}, {stock(), coexec}, {}},
                          {"triad bandwidth (GB/s)", {"bandwidth"}, {stock(), coexec}, {}}};
    measure_rows(rows, o.repeats, scratch);
    std::printf("\nOverhead alone (median of %d; slowdown = coexec cost / stock cost)\n",
                o.repeats);
    std::printf("%-24s %12s %12s %10s\n", "measurement", "stock", "coexec", "slowdown");
    double lat_s = median(rows[0].samples[0]), lat_c = median(rows[0].samples[1]);
    double bw_s = median(rows[1].samples[0]), bw_c = median(rows[1].samples[1]);
    std::printf("%-24s %12.2f %12.2f %9.3fx\n", rows[0].label.c_str(), lat_s, lat_c, lat_c / lat_s);
    std::printf("%-24s %12.2f %12.2f %9.3fx\n", rows[1].label.c_str(), bw_s, bw_c, bw_s / bw_c);
}

void print_multi(const Options& o, Submitter s, const char* name, const Sandbox& scratch) {
    std::vector<Row> rows;
    Setup co = coexec_setup(o, s);
    for (int t : o.tasks) {
        std::string tasks = std::to_string(t);
        rows.push_back({tasks, {"multi", "alone", tasks}, {stock()}, {}});
        rows.push_back({tasks, {"multi", name, tasks}, {stock(), co, static_partition()}, {}});
    }
    measure_rows(rows, o.repeats, scratch);
    std::printf("\nMulti. RT: %s tasks each running a PoCL kernel (seconds, median of %d;"
                " ratios to PoCL alone)\n",
                name, o.repeats);
    std::printf("%6s %9s %9s %9s %9s %8s %8s %8s\n", "tasks", "alone", "native", co.name.c_str(),
                "static", "native", "coexec", "static");
    for (size_t i = 0; i < rows.size(); i += 2) {
        double alone = median(rows[i].samples[0]);
        double nat = median(rows[i + 1].samples[0]), cx = median(rows[i + 1].samples[1]),
               st = median(rows[i + 1].samples[2]);
        std::printf("%6s %9.4f %9.4f %9.4f %9.4f %7.2fx %7.2fx %7.2fx\n", rows[i].label.c_str(),
                    alone, nat, cx, st, nat / alone, cx / alone, st / alone);
    }
}

std::vector<int> parse_list(const std::string& text) {
    std::vector<int> out;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
        out.push_back(to_int(item, "--tasks"));
    if (out.empty()) throw std::invalid_argument("--tasks wants a list like 2,8,32");
    return out;
}

Options parse_compare(const std::vector<std::string>& args) {
    Options o;
    for (size_t i = 0; i < args.size(); ++i) {
        auto value = [&](const char* flag) {
            if (i + 1 >= args.size())
                throw std::invalid_argument(std::string(flag) + " wants a value");
            return args[++i];
        };
        if (args[i] == "--repeats")
            o.repeats = std::max(1, to_int(value("--repeats"), "--repeats"));
        else if (args[i] == "--tasks")
            o.tasks = parse_list(value("--tasks"));
        else if (args[i] == "--adapter")
            o.adapter = value("--adapter");
        else if (args[i] == "--openmp-dir")
            o.openmp_dir = value("--openmp-dir");
        else if (args[i] == "--tbb-adapter")
            o.tbb_adapter = value("--tbb-adapter");
        else if (args[i] == "--overhead-only")
            o.multi = false;
        else if (args[i] == "--multi-only")
            o.overhead = false;
        else
            throw std::invalid_argument("unknown option " + args[i]);
    }
    if (!fs::exists(o.adapter)) throw std::invalid_argument("no adapter at " + o.adapter);
    return o;
}

// Removes the run's directory and its segment (through `coexec reset`, which
// only removes a segment whose processes are all gone).
void clean_up(const Sandbox& sandbox) {
    if (fs::exists(COEXEC_CLI)) {
        Command reset;
        reset.argv = {COEXEC_CLI, "--name", sandbox.segment, "reset"};
        coexec::pocl_testing::run(reset, sandbox.dir.string());
    }
    fs::remove_all(sandbox.dir);
}

int compare(const std::vector<std::string>& args) {
    Options o = parse_compare(args);
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // show each table as soon as it is done
    std::string pattern = (fs::temp_directory_path() / "coexec-pocl-bench-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temp dir");
    Sandbox scratch{pattern, "pocl-bench-" + std::to_string(getpid())};
    std::printf("PoCL adapter benchmarks on %d CPUs, adapter %s\n", cpu_count(), o.adapter.c_str());
    try {
        if (o.overhead) print_overhead(o, scratch);
        if (o.multi) {
            print_multi(o, Submitter::OpenMP, "openmp", scratch);
            print_multi(o, Submitter::Tbb, "tbb", scratch);
        }
    } catch (...) {
        clean_up(scratch);
        throw;
    }
    clean_up(scratch);
    return 0;
}

int usage() {
    std::fprintf(stderr,
                 "usage: pocl_bench compare [--repeats R] [--tasks 2,8,...] [--adapter PATH]\n"
                 "                          [--openmp-dir DIR] [--tbb-adapter PATH]\n"
                 "                          [--overhead-only | --multi-only]\n"
                 "       pocl_bench measure latency | bandwidth | multi alone|openmp|tbb TASKS\n"
                 "                          [--host-cpus FIRST-LAST]\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + std::min(argc, 2), argv + argc);
    const std::string command = argc >= 2 ? argv[1] : "";
    try {
        if (command == "compare") return compare(args);
        if (command == "measure") return measure(args);
        return usage();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "pocl_bench: %s\n", e.what());
        return 1;
    }
}
