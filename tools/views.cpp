#include "views.hpp"

#include "table.hpp"

#include "scheduler/shared_scheduler.hpp"
#include "scheduler/topology.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cstdint>
#include <fmt/format.h>
#include <optional>

namespace coexec::cli {
namespace {

using Align = Table::Align;
using nlohmann::json;

constexpr uint64_t kUs = 1'000, kMs = 1'000'000, kSec = 1'000'000'000;

// a + b, or the largest value where that would wrap around: a sum of
// damaged counters stays at least as large as each of them, so that no
// share of it exceeds 100%.
uint64_t saturating_add(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t total_cpu_time(const Snapshot& snap) {
    uint64_t total = 0;
    for (const auto& p : snap.procs)
        total = saturating_add(total, p.cpu_time_ns);
    return total;
}

// `value`, or "?" when the segment holds it out of its range.
std::string shown_number(bool known, int64_t value) {
    return known ? std::to_string(value) : "?";
}

// The process's name, marked when it died and is not reaped yet.
std::string shown_name(const ProcRow& p) {
    return p.alive ? p.name : p.name + " (dead)";
}

// The ProcRow of `row`'s process in `previous`, or null when it joined since.
const ProcRow* earlier_row(const ProcRow& row, const Snapshot& previous) {
    for (const auto& before : previous.procs)
        if (before.slot == row.slot && before.pid == row.pid) return &before;
    return nullptr;
}

// CPU time `row`'s process received since `previous` (nullopt: not listed
// then, or its counter went back, as after a reset).
std::optional<uint64_t> cpu_time_since(const ProcRow& row, const Snapshot& previous) {
    const ProcRow* before = earlier_row(row, previous);
    if (!before || row.cpu_time_ns < before->cpu_time_ns) return std::nullopt;
    return row.cpu_time_ns - before->cpu_time_ns;
}

// CPU time all processes listed in both snapshots received in between.
uint64_t total_cpu_time_since(const Snapshot& snap, const Snapshot& previous) {
    uint64_t total = 0;
    for (const auto& p : snap.procs)
        total = saturating_add(total, cpu_time_since(p, previous).value_or(0));
    return total;
}

// `part` in percent of `whole`, or "-" when there is nothing to divide.
std::string percent(uint64_t part, uint64_t whole) {
    return whole ? fmt::format("{:.1f}%", 100.0 * double(part) / double(whole)) : "-";
}

// CPU time `row`'s process received since `previous`, in percent of one CPU.
std::string cpu_rate(const ProcRow& row, const Snapshot& snap, const Snapshot& previous) {
    uint64_t elapsed = snap.taken_ns > previous.taken_ns ? snap.taken_ns - previous.taken_ns : 0;
    const std::optional<uint64_t> got = cpu_time_since(row, previous);
    if (elapsed == 0 || !got) return "-";
    return fmt::format("{:.0f}", 100.0 * double(*got) / double(elapsed));
}

// The label classes in display order.
constexpr std::array<shm::LabelClass, shm::kLabelClasses> kClasses{
    shm::LabelClass::OpenMP, shm::LabelClass::Tbb, shm::LabelClass::Pocl, shm::LabelClass::Other};

// Whether `p`'s time under class `c` is known: a time above the process's
// CPU time is damaged, and has no share of it.
bool label_time_known(const ProcRow& p, shm::LabelClass c) {
    return p.label_time_known[size_t(c)] && p.label_time_ns[size_t(c)] <= p.cpu_time_ns;
}

template <typename T>
json or_null(bool present, const T& value) {
    return present ? json(value) : json(nullptr);
}

} // namespace

std::string format_duration(uint64_t ns) {
    if (ns < kMs) return fmt::format("{}us", ns / kUs);
    if (ns < kSec) return fmt::format("{}ms", ns / kMs);
    if (ns < 60 * kSec) return fmt::format("{:.2f}s", double(ns) / double(kSec));
    uint64_t s = ns / kSec;
    if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
    return fmt::format("{}h{:02}m", s / 3600, s / 60 % 60);
}

namespace {

// The CPU rows grouped by NUMA node: node by node in ascending order, each
// node's CPUs in index order, CPUs of an unknown node last.
std::vector<const CpuRow*> by_node(const Snapshot& snap) {
    std::vector<const CpuRow*> rows;
    for (const auto& c : snap.cpus)
        rows.push_back(&c);
    std::stable_sort(rows.begin(), rows.end(), [](const CpuRow* a, const CpuRow* b) {
        const int na = a->numa_known ? a->numa : INT_MAX, nb = b->numa_known ? b->numa : INT_MAX;
        return na < nb;
    });
    return rows;
}

// One line per NUMA node, when there is more than one: its CPUs (system
// ids) and how many are in each state.
std::vector<NodeSummary> node_summaries(const Snapshot& snap) {
    std::vector<NodeSummary> nodes;
    for (const CpuRow* c : by_node(snap)) {
        if (!c->numa_known) continue;
        if (nodes.empty() || nodes.back().node != c->numa) nodes.push_back({c->numa, {}, {}});
        NodeSummary& n = nodes.back();
        if (c->system_cpu_known) n.system_cpus.push_back(c->system_cpu);
        ++n.states[c->state];
    }
    return nodes;
}

std::string id_list(const std::vector<int>& ids) {
    return ids.empty() ? "-" : scheduler::format_cpu_list(ids);
}

} // namespace

std::vector<std::string> node_lines(const Snapshot& snap) {
    std::vector<std::string> lines;
    const std::vector<NodeSummary> nodes = node_summaries(snap);
    if (nodes.size() < 2) return lines;
    for (const NodeSummary& n : nodes) {
        std::string states;
        for (const char* st : {"running", "idle", "sleeping", "lent", "free", "unknown"})
            if (auto it = n.states.find(st); it != n.states.end())
                states += fmt::format(", {} {}", it->second, st);
        lines.push_back(fmt::format("node {}: {} CPU{} (system {}){}", n.node, n.system_cpus.size(),
                                    n.system_cpus.size() == 1 ? "" : "s", id_list(n.system_cpus),
                                    states));
    }
    return lines;
}

std::vector<std::string> cpu_table(const Snapshot& snap) {
    Table t({{"CPU", Align::Right},
             {"SYS", Align::Right},
             {"NUMA", Align::Right},
             {"STATE"},
             {"PID", Align::Right},
             {"PROCESS"},
             {"LABEL"},
             {"TID", Align::Right},
             {"HELD", Align::Right}});
    for (const CpuRow* row : by_node(snap)) {
        const CpuRow& c = *row;
        std::vector<std::string> cells{std::to_string(c.cpu),
                                       shown_number(c.system_cpu_known, c.system_cpu),
                                       shown_number(c.numa_known, c.numa), c.state};
        if (c.held)
            cells.insert(cells.end(), {std::to_string(c.pid), c.name, c.label,
                                       std::to_string(c.tid), format_duration(c.held_ns)});
        else
            cells.insert(cells.end(), {"-", "-", "-", "-", "-"});
        t.add_row(std::move(cells));
    }
    std::vector<std::string> lines = node_lines(snap);
    for (auto& l : t.render())
        lines.push_back(std::move(l));
    return lines;
}

std::vector<std::string> process_table(const Snapshot& snap, const Snapshot* previous, bool share) {
    std::vector<Table::Column> columns{{"PID", Align::Right},
                                       {"PROCESS"},
                                       {"CPUS", Align::Right},
                                       {"READY", Align::Right},
                                       {"CPU-TIME", Align::Right}};
    if (previous)
        columns.insert(columns.end(), {{"%CPU", Align::Right}, {"SHARE-NOW", Align::Right}});
    if (share) columns.push_back({"SHARE", Align::Right});
    columns.insert(columns.end(), {{"HANDOFFS", Align::Right}, {"THREADS", Align::Right}});
    Table t(std::move(columns));
    const uint64_t total = total_cpu_time(snap);
    const uint64_t recent = previous ? total_cpu_time_since(snap, *previous) : 0;
    for (const auto& p : snap.procs) {
        std::vector<std::string> cells{std::to_string(p.pid), shown_name(p), std::to_string(p.cpus),
                                       shown_number(p.ready_known, p.ready),
                                       format_duration(p.cpu_time_ns)};
        if (previous) {
            cells.push_back(cpu_rate(p, snap, *previous));
            const std::optional<uint64_t> got = cpu_time_since(p, *previous);
            cells.push_back(got ? percent(*got, recent) : "-");
        }
        if (share) cells.push_back(percent(p.cpu_time_ns, total));
        cells.insert(cells.end(),
                     {std::to_string(p.handoffs), shown_number(p.threads_known, p.threads)});
        t.add_row(std::move(cells));
    }
    return t.render();
}

std::vector<std::string> runtime_table(const Snapshot& snap) {
    std::vector<Table::Column> columns{{"PID", Align::Right}, {"PROCESS"}};
    for (shm::LabelClass c : kClasses) {
        std::string name = scheduler::label_class_name(c);
        for (char& ch : name)
            ch = char(std::toupper(static_cast<unsigned char>(ch)));
        columns.push_back({std::move(name), Align::Right});
    }
    Table t(std::move(columns));
    for (const auto& p : snap.procs) {
        std::vector<std::string> cells{std::to_string(p.pid), shown_name(p)};
        for (shm::LabelClass c : kClasses) {
            const uint64_t ns = p.label_time_ns[size_t(c)];
            if (!label_time_known(p, c))
                cells.push_back("?");
            else
                cells.push_back(ns ? format_duration(ns) + " " + percent(ns, p.cpu_time_ns) : "-");
        }
        t.add_row(std::move(cells));
    }
    return t.render();
}

std::string top_title(const Snapshot& snap) {
    int running = 0;
    for (const auto& c : snap.cpus)
        running += c.state == "running" ? 1 : 0;
    const int quota = snap.segment.quota_cpus;
    return fmt::format("coexec top - {} - {} CPU{} ({} running){}, {} process{}",
                       snap.segment.shm_name, snap.cpus.size(), snap.cpus.size() == 1 ? "" : "s",
                       running, quota ? fmt::format(", cgroup CPU quota {}", quota) : "",
                       snap.procs.size(), snap.procs.size() == 1 ? "" : "es");
}

std::vector<std::string> info_lines(const Snapshot& snap, const std::string& binding) {
    const SegmentInfo& s = snap.segment;
    const std::string recording = !s.trace_recorders_known ? "?"
                                  : s.trace_recorders
                                      ? fmt::format("on ({} coexec record)", s.trace_recorders)
                                      : "off";
    std::vector<std::string> lines{
        fmt::format("segment      {} ({:.1f} MiB, ABI version {}{})", s.shm_name,
                    double(s.size) / (1024.0 * 1024.0), s.abi_version,
                    s.age_ns ? ", created " + format_duration(s.age_ns) + " ago" : ""),
        fmt::format("isolation    {}", s.isolation),
        fmt::format("quantum      {}", format_duration(s.quantum_ns)),
        s.preempt_after_ns
            ? fmt::format("preemption   {} past the quantum, with no scheduling point",
                          format_duration(s.preempt_after_ns))
            : std::string("preemption   off"),
        fmt::format("governor     {} ({} spins before sleeping)", s.governor, s.governor_spins),
        fmt::format("binding      {} (configured)", binding),
        fmt::format("processes    {} of {}", s.procs_used, s.procs_max),
        fmt::format("threads      {} of {} slots", s.threads_used, s.threads_max),
        fmt::format("unheld CPUs  {} of {}", shown_number(s.unheld_cpus_known, s.unheld_cpus),
                    s.cpu_count),
        fmt::format("recoveries   {} (lock repairs after a holder died)", s.recoveries),
        "recording    " + recording,
        fmt::format("topology     {} CPU{}, {} NUMA node{}", s.cpu_count,
                    s.cpu_count == 1 ? "" : "s", s.numa_count, s.numa_count == 1 ? "" : "s"),
        fmt::format("cpus from    {}", s.cpu_origin.empty() ? "unknown" : s.cpu_origin),
        s.quota_cpus ? fmt::format("cpu quota    {} CPU{} ({})", s.quota_cpus,
                                   s.quota_cpus == 1 ? "" : "s", s.quota_origin)
                     : std::string("cpu quota    none"),
    };
    Table t({{"CPU", Align::Right},
             {"SYS", Align::Right},
             {"NUMA", Align::Right},
             {"CORE", Align::Right}});
    for (const CpuRow* c : by_node(snap))
        t.add_row({std::to_string(c->cpu), shown_number(c->system_cpu_known, c->system_cpu),
                   shown_number(c->numa_known, c->numa), shown_number(c->core_known, c->core)});
    for (auto& line : node_lines(snap))
        lines.push_back("  " + line);
    for (auto& line : t.render())
        lines.push_back("  " + line);
    return lines;
}

json cpus_json(const Snapshot& snap) {
    json cpus = json::array();
    for (const auto& c : snap.cpus)
        cpus.push_back({{"cpu", c.cpu},
                        {"system_cpu", or_null(c.system_cpu_known, c.system_cpu)},
                        {"numa", or_null(c.numa_known, c.numa)},
                        {"core", or_null(c.core_known, c.core)},
                        {"state", c.state},
                        {"pid", or_null(c.held, c.pid)},
                        {"name", or_null(c.held, c.name)},
                        {"tid", or_null(c.held, c.tid)},
                        {"label", or_null(c.held, c.label)},
                        {"held_ns", or_null(c.held, c.held_ns)}});
    return cpus;
}

namespace {
// A process's cpu_time_by_label_ns object: {"openmp": ns, "tbb": ns, ...}.
json label_times_json(const ProcRow& p) {
    json times = json::object();
    for (shm::LabelClass c : kClasses)
        times[scheduler::label_class_name(c)] =
            or_null(label_time_known(p, c), p.label_time_ns[size_t(c)]);
    return times;
}
} // namespace

json processes_json(const Snapshot& snap) {
    json procs = json::array();
    for (const auto& p : snap.procs)
        procs.push_back({{"pid", p.pid},
                         {"name", p.name},
                         {"cpus", p.cpus},
                         {"ready", or_null(p.ready_known, p.ready)},
                         {"cpu_time_ns", p.cpu_time_ns},
                         {"cpu_time_by_label_ns", label_times_json(p)},
                         {"handoffs", p.handoffs},
                         {"preemptions", p.preemptions},
                         {"threads", or_null(p.threads_known, p.threads)},
                         {"alive", p.alive}});
    return procs;
}

// The NUMA nodes, each with its CPUs (logical indices) and the count of
// its CPUs in each state.
json nodes_json(const Snapshot& snap) {
    json nodes = json::array();
    for (const NodeSummary& n : node_summaries(snap)) {
        json cpus = json::array();
        for (const CpuRow* c : by_node(snap))
            if (c->numa_known && c->numa == n.node) cpus.push_back(c->cpu);
        nodes.push_back({{"node", n.node}, {"cpus", cpus}, {"states", n.states}});
    }
    return nodes;
}

json top_json(const Snapshot& snap) {
    return {{"segment", snap.segment.shm_name},
            {"cpus", cpus_json(snap)},
            {"numa_nodes", nodes_json(snap)},
            {"processes", processes_json(snap)}};
}

json info_json(const Snapshot& snap, const std::string& binding) {
    const SegmentInfo& s = snap.segment;
    json topology = json::array();
    for (const CpuRow* row : by_node(snap)) {
        const CpuRow& c = *row;
        topology.push_back({{"cpu", c.cpu},
                            {"system_cpu", or_null(c.system_cpu_known, c.system_cpu)},
                            {"numa", or_null(c.numa_known, c.numa)},
                            {"core", or_null(c.core_known, c.core)}});
    }
    return {{"segment",
             {{"name", s.shm_name},
              {"size", s.size},
              {"abi_version", s.abi_version},
              {"age_ns", or_null(s.age_ns != 0, s.age_ns)}}},
            {"config",
             {{"quantum_ns", s.quantum_ns},
              {"preempt_after_ns", s.preempt_after_ns},
              {"governor", s.governor},
              {"governor_spins", s.governor_spins},
              {"isolation", s.isolation},
              {"binding", binding}}},
            {"usage",
             {{"processes", s.procs_used},
              {"max_processes", s.procs_max},
              {"threads", s.threads_used},
              {"max_threads", s.threads_max},
              {"unheld_cpus", or_null(s.unheld_cpus_known, s.unheld_cpus)},
              {"lock_recoveries", s.recoveries},
              {"trace_recorders", or_null(s.trace_recorders_known, s.trace_recorders)}}},
            {"topology",
             {{"cpus", s.cpu_count},
              {"numa_nodes", s.numa_count},
              {"cpu_list", topology},
              {"nodes", nodes_json(snap)},
              {"origin", s.cpu_origin},
              {"quota_cpus", or_null(s.quota_cpus > 0, s.quota_cpus)},
              {"quota_origin", or_null(s.quota_cpus > 0, s.quota_origin)}}}};
}

} // namespace coexec::cli
