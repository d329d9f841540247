// `coexec plot`: a Gantt chart of a `coexec record` trace, drawn by gnuplot.
#include "commands.hpp"
#include "trace_json.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

namespace coexec::cli {
namespace {

using nlohmann::json;

// Distinct colours, one per process and runtime label, in order of first use.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                                    "#393b79", "#ad494a", "#637939", "#7b4173"};

struct Bar {
    double start_s, end_s;
    int cpu;
    bool running; // running: full height; held idle, asleep or lent: thin
};

// Keeps what gnuplot may print as-is: no quotes, no control characters.
std::string quoted_safe(const std::string& text) {
    std::string out;
    for (char ch : text)
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\'' && ch != '\\') out += ch;
    return out;
}

// The CPU slices of a trace, grouped by "process label". Throws
// std::runtime_error when the document is not a coexec trace.
std::map<std::string, std::vector<Bar>> read_bars(const json& doc, int& cpus,
                                                  std::vector<std::string>& order) {
    if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
        throw std::runtime_error("it has no traceEvents array");
    int64_t cpu_pid = kCpuTrackPid;
    if (doc.contains("otherData") && doc["otherData"].is_object() &&
        doc["otherData"].contains("cpu_track_pid") &&
        doc["otherData"]["cpu_track_pid"].is_number_integer())
        cpu_pid = doc["otherData"]["cpu_track_pid"].get<int64_t>();
    std::map<std::string, std::vector<Bar>> groups;
    cpus = 0;
    for (const json& e : doc["traceEvents"]) {
        if (!e.is_object() || e.value("ph", "") != "X" || e.value("pid", int64_t(0)) != cpu_pid)
            continue;
        const int cpu = int(e.value("tid", int64_t(0)) - kCpuTrackTid);
        if (cpu < 0 || cpu >= 4096) continue;
        const double ts = e.value("ts", 0.0), dur = e.value("dur", 0.0);
        const json args = e.value("args", json::object());
        std::string key = quoted_safe(args.value("process", std::string("?")) + " " +
                                      args.value("label", std::string("?")));
        if (!groups.count(key)) order.push_back(key);
        groups[key].push_back({ts / 1e6, (ts + dur) / 1e6, cpu,
                               args.value("state", std::string("running")) == "running"});
        cpus = std::max(cpus, cpu + 1);
    }
    return groups;
}

std::string gnuplot_script(const std::map<std::string, std::vector<Bar>>& groups,
                           const std::vector<std::string>& order, int cpus,
                           const PlotOptions& options) {
    std::ostringstream s;
    const int height = std::max(240, 80 + 28 * cpus);
    s << "set terminal pngcairo size 1400," << height << " noenhanced font ',10'\n";
    s << "set output '" << quoted_safe(options.output) << "'\n";
    s << "set title '" << quoted_safe(options.title.empty() ? options.trace : options.title)
      << "'\n";
    s << "set xlabel 'time since the recording started (s)'\nset ylabel 'CPU'\n";
    s << "set yrange [" << cpus - 0.5 << ":-0.5]\nset ytics (";
    for (int c = 0; c < cpus; ++c)
        s << (c ? ", " : "") << "'" << c << "' " << c;
    s << ")\nset key outside right top\nset style fill solid 1.0 noborder\nset grid xtics\n";
    // Each group's bars as a datablock: x-centre, y, x-half-width, y-half-height.
    int i = 0;
    for (const auto& key : order) {
        s << "$g" << i++ << " << EOD\n";
        for (const Bar& b : groups.at(key))
            s << fmt::format("{:.6f} {} {:.6f} {}\n", (b.start_s + b.end_s) / 2, b.cpu,
                             (b.end_s - b.start_s) / 2, b.running ? 0.4 : 0.12);
        s << "EOD\n";
    }
    s << "plot ";
    for (size_t g = 0; g < order.size(); ++g)
        s << (g ? ", \\\n     " : "") << "$g" << g << " using 1:2:3:4 with boxxyerror lc rgb '"
          << kPalette[g % (sizeof kPalette / sizeof *kPalette)] << "' title '" << order[g] << "'";
    if (order.empty()) s << "NaN title 'no CPU was held'";
    s << "\n";
    return s.str();
}

} // namespace

int plot_command(const PlotOptions& options) {
    std::ifstream in(options.trace);
    if (!in) {
        print_error(fmt::format("cannot read '{}': {}", options.trace, std::strerror(errno)));
        return 2;
    }
    int cpus = 0;
    std::vector<std::string> order;
    std::map<std::string, std::vector<Bar>> groups;
    try {
        groups = read_bars(json::parse(in), cpus, order);
    } catch (const std::exception& e) {
        print_error(fmt::format("'{}' is not a coexec trace: {}", options.trace, e.what()));
        return 2;
    }
    const std::string script = gnuplot_script(groups, order, std::max(cpus, 1), options);
    // gnuplot reads the script on its stdin; its own errors reach our stderr.
    FILE* gp = popen("gnuplot", "w");
    if (!gp) {
        print_error("cannot run gnuplot (install the gnuplot package)");
        return 2;
    }
    std::signal(SIGPIPE, SIG_IGN); // a gnuplot that died early is reported below
    std::fwrite(script.data(), 1, script.size(), gp);
    const int rc = pclose(gp);
    if (rc != 0) {
        print_error(WIFEXITED(rc) && WEXITSTATUS(rc) == 127
                        ? "cannot run gnuplot (install the gnuplot package)"
                        : "gnuplot failed to draw the chart");
        return 2;
    }
    std::fprintf(stderr, "coexec plot: %zu process/runtime pairs on %d CPUs drawn to %s\n",
                 order.size(), cpus, options.output.c_str());
    return 0;
}

} // namespace coexec::cli
