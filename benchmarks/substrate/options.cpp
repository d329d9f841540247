#include "options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <unistd.h>

namespace coexec::bench {

const std::vector<std::string>& benchmark_names() {
    static const std::vector<std::string> names{
        "throughput", "submit-only", "handoff",  "os-threads", "barrier",  "attach", "init",
        "join",       "xproc",       "os-relay", "xready",     "os-procs", "xyield"};
    return names;
}

bool Options::selected(const std::string& name) const {
    return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
}

Options parse_options(int argc, char** argv) {
    Options o;
    CLI::App app{"coexec substrate micro-benchmarks: empty-task throughput, same-CPU "
                 "pause/submit hand-off, attach+detach and cross-process hand-off latency. "
                 "Each figure is the median of --repeats measured runs (after one warm-up), "
                 "with min and max.",
                 "coexec-bench-substrate"};
    app.add_option("-r,--repeats", o.repeats, "Measured repeats per benchmark")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    app.add_option("--tasks", o.tasks, "Empty tasks per throughput repeat")
        ->check(CLI::Range(int64_t{1}, int64_t{10'000'000}))
        ->capture_default_str();
    app.add_option("--handoffs", o.handoffs, "Same-CPU hand-offs per repeat")
        ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}))
        ->capture_default_str();
    app.add_option("--attaches", o.attaches, "attach+detach pairs per repeat")
        ->check(CLI::Range(int64_t{1}, int64_t{100'000'000}))
        ->capture_default_str();
    app.add_option("--round-trips", o.round_trips, "Cross-process round trips per repeat")
        ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}))
        ->capture_default_str();
    app.add_option("--quantum-ns", o.quantum_ns,
                   "Scheduler quantum of the cross-process yield benchmark's segment")
        ->check(CLI::Range(uint64_t{1'000}, uint64_t{60'000'000'000}))
        ->capture_default_str();
    app.add_option("--cpu", o.cpu,
                   "System CPU id the strictly bound tasks use (default: the first CPU "
                   "coexec manages)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--timeout", o.timeout_s, "Seconds before a benchmark is killed as hung")
        ->check(CLI::Range(1, 86'400))
        ->capture_default_str();
    app.add_option("--only", o.only, "Run only these benchmarks")
        ->check(CLI::IsMember(benchmark_names()))
        ->delimiter(',');
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int rc = app.exit(e);
        std::exit(rc == 0 ? 0 : 2);
    }
    o.segment = "coexec-bench-" + std::to_string(::getpid());
    return o;
}

} // namespace coexec::bench
