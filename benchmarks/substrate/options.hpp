// Command-line options of coexec-bench-substrate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace coexec::bench {

// Which benchmarks to run and how big each measured repeat is.
struct Options {
    int repeats = 7;               // measured repeats per benchmark (plus one warm-up)
    int64_t tasks = 200'000;       // empty tasks per throughput repeat
    int64_t handoffs = 100'000;    // same-CPU hand-offs per repeat
    int64_t attaches = 20'000;     // attach+detach pairs per repeat
    int64_t round_trips = 20'000;  // cross-process round trips per repeat
    uint64_t quantum_ns = 50'000;  // scheduler quantum of the cross-process yield segment
    std::optional<int> cpu;        // system CPU id for strict binding (default: first managed)
    int timeout_s = 300;           // per benchmark; a hang is killed and reported
    std::vector<std::string> only; // benchmark names to run (empty: all)
    // Prefix of this run's segments: "coexec-bench-<pid of the driver>",
    // so that runs at the same time (two checkouts, two users' CI) never
    // share one. Set by parse_options(), before any benchmark forks.
    std::string segment;

    // True when benchmark `name` was selected.
    bool selected(const std::string& name) const;
};

// Parses argv. On --help prints usage and exits 0; on bad input prints a clear
// error and exits 2.
Options parse_options(int argc, char** argv);

// The names accepted by --only, in run order.
const std::vector<std::string>& benchmark_names();

} // namespace coexec::bench
