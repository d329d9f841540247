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
#include <tuple>
#include <utility>

namespace coexec::cli {
namespace {

using nlohmann::json;

// One colour per process, in order of its first slice. Past the palette the
// colours come round again, hatched: palette size × (1 + hatches) processes
// get a style of their own.
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
                                    "#393b79", "#ad494a", "#637939", "#7b4173"};
constexpr size_t kColours = sizeof kPalette / sizeof *kPalette;
// gnuplot's fill patterns, for the palette's second lap and later: diagonal
// lines both ways, steep diagonals both ways, two cross-hatches.
constexpr int kHatches[] = {4, 5, 6, 7, 1, 2};
constexpr size_t kHatchCount = sizeof kHatches / sizeof *kHatches;
// A process's runtime labels, in order of first use, are shades of its
// colour: itself, then mixed with white (> 0) or black (< 0) by this much.
constexpr double kShades[] = {0.0, 0.45, -0.4, 0.7, -0.65};
constexpr size_t kShadeCount = sizeof kShades / sizeof *kShades;

struct Bar {
    double start_s, end_s;
    int cpu;
    bool running; // running: full height; held idle, asleep or lent: thin
};

// What one process held under one runtime label.
struct Series {
    std::string label;
    double first_s; // its first slice's start
    std::vector<Bar> bars;
};

// A process of the trace: a pid with the name it had (a pid the kernel
// reused for another program is another process).
struct Process {
    int64_t pid;
    std::string name;
    double first_s;
    std::vector<Series> series; // one per runtime label, in order of first use
};

// Keeps what gnuplot may print as-is: no quotes, no control characters.
std::string quoted_safe(const std::string& text) {
    std::string out;
    for (char ch : text)
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\'' && ch != '\\') out += ch;
    return out;
}

// "#rrggbb" mixed with white (amount > 0) or black (amount < 0).
std::string shade(const char* rgb, double amount) {
    unsigned r = 0, g = 0, b = 0;
    std::sscanf(rgb, "#%2x%2x%2x", &r, &g, &b);
    auto mix = [&](unsigned c) {
        const double v = amount >= 0 ? c + (255 - c) * amount : c * (1 + amount);
        return unsigned(std::clamp(v + 0.5, 0.0, 255.0));
    };
    return fmt::format("#{:02x}{:02x}{:02x}", mix(r), mix(g), mix(b));
}

// The CPU slices of a trace, by process and runtime label, processes and
// labels in order of first slice. Throws std::runtime_error when the document
// is not a coexec trace.
std::vector<Process> read_processes(const json& doc, int& cpus) {
    if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
        throw std::runtime_error("it has no traceEvents array");
    int64_t cpu_pid = kCpuTrackPid;
    if (doc.contains("otherData") && doc["otherData"].is_object() &&
        doc["otherData"].contains("cpu_track_pid") &&
        doc["otherData"]["cpu_track_pid"].is_number_integer())
        cpu_pid = doc["otherData"]["cpu_track_pid"].get<int64_t>();
    std::vector<Process> processes;
    std::map<std::pair<int64_t, std::string>, size_t> index; // (pid, name) -> processes[i]
    cpus = 0;
    for (const json& e : doc["traceEvents"]) {
        if (!e.is_object() || e.value("ph", "") != "X" || e.value("pid", int64_t(0)) != cpu_pid)
            continue;
        const int cpu = int(e.value("tid", int64_t(0)) - kCpuTrackTid);
        if (cpu < 0 || cpu >= 4096) continue;
        const double ts = e.value("ts", 0.0), dur = e.value("dur", 0.0);
        const json args = e.value("args", json::object());
        const int64_t pid = args.contains("pid") && args["pid"].is_number_integer()
                                ? args["pid"].get<int64_t>()
                                : 0;
        const std::string name = quoted_safe(args.value("process", std::string("?")));
        std::string label = quoted_safe(args.value("label", std::string("")));
        if (label.empty()) label = "?";
        const Bar bar{ts / 1e6, (ts + dur) / 1e6, cpu,
                      args.value("state", std::string("running")) == "running"};
        auto [it, added] = index.try_emplace({pid, name}, processes.size());
        if (added) processes.push_back({pid, name, bar.start_s, {}});
        Process& p = processes[it->second];
        p.first_s = std::min(p.first_s, bar.start_s);
        auto s = std::find_if(p.series.begin(), p.series.end(),
                              [&](const Series& x) { return x.label == label; });
        if (s == p.series.end()) s = p.series.insert(p.series.end(), {label, bar.start_s, {}});
        s->first_s = std::min(s->first_s, bar.start_s);
        s->bars.push_back(bar);
        cpus = std::max(cpus, cpu + 1);
    }
    // Slices are written when they end: order by when they started.
    for (Process& p : processes)
        std::stable_sort(p.series.begin(), p.series.end(),
                         [](const Series& a, const Series& b) { return a.first_s < b.first_s; });
    std::stable_sort(processes.begin(), processes.end(), [](const Process& a, const Process& b) {
        return std::tie(a.first_s, a.pid) < std::tie(b.first_s, b.pid);
    });
    return processes;
}

// The legend entry of a process: "NAME PID (LABEL, LABEL...)".
std::string legend(const Process& p) {
    std::string text = p.pid > 0 ? fmt::format("{} {}", p.name, p.pid) : p.name;
    for (size_t j = 0; j < p.series.size(); ++j)
        text += (j ? ", " : " (") + p.series[j].label;
    return p.series.empty() ? text : text + ")";
}

std::string gnuplot_script(const std::vector<Process>& processes, int cpus,
                           const PlotOptions& options) {
    std::ostringstream s;
    // Tall enough for the CPUs, and for the legend in one column up to 60 rows.
    size_t rows = 0;
    for (const Process& p : processes)
        rows += 1 + (p.series.size() > 1 ? p.series.size() : 0);
    const int height = std::max({240, 80 + 28 * cpus, 90 + 17 * int(std::min<size_t>(rows, 60))});
    s << "set terminal pngcairo size 1400," << height << " noenhanced font ',10'\n";
    s << "set output '" << quoted_safe(options.output) << "'\n";
    s << "set title '" << quoted_safe(options.title.empty() ? options.trace : options.title)
      << "'\n";
    s << "set xlabel 'time since the recording started (s)'\nset ylabel 'CPU'\n";
    s << "set yrange [" << cpus - 0.5 << ":-0.5]\nset ytics (";
    for (int c = 0; c < cpus; ++c)
        s << (c ? ", " : "") << "'" << c << "' " << c;
    s << ")\nset key outside right top Left reverse\nset grid xtics\n";
    // Each series' bars as a datablock: x-centre, y, x-half-width, y-half-height.
    int n = 0;
    for (const Process& p : processes)
        for (const Series& series : p.series) {
            s << "$s" << n++ << " << EOD\n";
            for (const Bar& b : series.bars)
                s << fmt::format("{:.6f} {} {:.6f} {}\n", (b.start_s + b.end_s) / 2, b.cpu,
                                 (b.end_s - b.start_s) / 2, b.running ? 0.4 : 0.12);
            s << "EOD\n";
        }
    // Per process: its legend entry in its colour, then its series, one
    // shade per runtime label, each in the legend when it has several.
    s << "plot ";
    const char* sep = "";
    n = 0;
    for (size_t i = 0; i < processes.size(); ++i) {
        const Process& p = processes[i];
        const char* colour = kPalette[i % kColours];
        const size_t lap = i / kColours;
        const std::string fill =
            lap == 0 ? "fs solid 1.0 noborder"
                     : fmt::format("fs pattern {} border", kHatches[(lap - 1) % kHatchCount]);
        s << sep << "keyentry with boxes " << fill << " lc rgb '" << colour << "' title '"
          << legend(p) << "'";
        sep = ", \\\n     ";
        for (size_t j = 0; j < p.series.size(); ++j) {
            s << sep << "$s" << n++ << " using 1:2:3:4 with boxxyerror " << fill << " lc rgb '"
              << shade(colour, kShades[j % kShadeCount]) << "' ";
            if (p.series.size() > 1)
                s << "title '    " << p.series[j].label << "'";
            else
                s << "notitle";
        }
    }
    if (processes.empty()) s << "NaN title 'no CPU was held'";
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
    std::vector<Process> processes;
    try {
        processes = read_processes(json::parse(in), cpus);
    } catch (const std::exception& e) {
        print_error(fmt::format("'{}' is not a coexec trace: {}", options.trace, e.what()));
        return 2;
    }
    const std::string script = gnuplot_script(processes, std::max(cpus, 1), options);
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
    size_t pairs = 0;
    for (const Process& p : processes)
        pairs += p.series.size();
    std::fprintf(stderr,
                 "coexec plot: %zu processes, %zu process/runtime pairs, on %d CPUs drawn to %s\n",
                 processes.size(), pairs, cpus, options.output.c_str());
    return 0;
}

} // namespace coexec::cli
