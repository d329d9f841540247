// What the commands print: text tables and JSON documents of a snapshot.
// A value the snapshot does not know (the segment holds it out of its
// range) prints as "?" in text and as null in JSON.
#pragma once

#include "snapshot.hpp"

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace coexec::cli {

// "850us", "12ms", "3.25s", "4m05s", "2h07m".
std::string format_duration(uint64_t ns);

// The per-CPU table of `coexec top`.
// A NUMA node's CPUs, as the views group them.
struct NodeSummary {
    int node = 0;
    std::vector<int> system_cpus;      // the known system ids, ascending
    std::map<std::string, int> states; // CpuRow::state -> how many
};
// One line per NUMA node, when the segment has more than one: its CPUs and
// how many are in each state (above the CPU tables of top and info).
std::vector<std::string> node_lines(const Snapshot& snap);
// The CPUs, grouped by NUMA node (node_lines() first when there are two or
// more), one row each.
std::vector<std::string> cpu_table(const Snapshot& snap);

// The per-process table of `coexec top` and `coexec ps`. With `previous`
// (an earlier snapshot) adds a %CPU column, CPU time received since then in
// percent of one CPU, and SHARE-NOW, the process's share of the CPU time all
// processes listed in both snapshots received since then. `share` adds
// SHARE, its share of the CPU time all listed processes received since
// they joined.
std::vector<std::string> process_table(const Snapshot& snap, const Snapshot* previous, bool share);

// Per process, its CPU time under each runtime label class (openmp, tbb,
// pocl, other) and that time's share of the process's CPU time; "-" for
// none, "?" for a time above the process's CPU time.
std::vector<std::string> runtime_table(const Snapshot& snap);

// The summary line at the top of `coexec top`.
std::string top_title(const Snapshot& snap);

// `coexec info` as text lines. `binding` is the configured topology.binding.
std::vector<std::string> info_lines(const Snapshot& snap, const std::string& binding);

// JSON documents. Absent owners and unknown values are null. Schema in
// docs/cli.md.
nlohmann::json cpus_json(const Snapshot& snap);
nlohmann::json processes_json(const Snapshot& snap);
nlohmann::json top_json(const Snapshot& snap);
nlohmann::json info_json(const Snapshot& snap, const std::string& binding);

} // namespace coexec::cli
