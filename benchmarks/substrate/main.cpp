// coexec-bench-substrate: runs the substrate micro-benchmarks and prints the
// median, min and max of each.
#include "benchmarks.hpp"
#include "options.hpp"
#include "report.hpp"

#include <cstdio>
#include <exception>

namespace {

using namespace coexec::bench;

struct Entry {
    Metric metric;
    Outcome (*measure)(const Options&);
};

const Entry kEntries[] = {
    {{"throughput", "empty task create+submit+complete", true}, measure_task_throughput},
    {{"submit-only", "  same, tasks created before the clock", true}, measure_submit_throughput},
    {{"handoff", "same-CPU pause/submit hand-off", false}, measure_same_cpu_handoff},
    {{"os-threads", "  OS floor: futex ping-pong, 2 threads/1 CPU", false}, measure_os_threads},
    {{"barrier", "team barrier, every wait sleeps (pause/submit)", false}, measure_team_barrier},
    {{"attach", "attach+detach (plain pthread)", false}, measure_attach_detach},
    {{"init", "nosv_init+shutdown, first member", false}, measure_init_fresh},
    {{"join", "  same, joining an instance in use", false}, measure_init_joining},
    {{"xproc", "cross-process relay (pause + remote submit)", false}, measure_cross_process_pause},
    {{"os-relay", "  OS floor with the same watcher relay", false}, measure_os_relay},
    {{"xready", "cross-process hand-off, partner ready", false}, measure_cross_process_ready},
    {{"os-procs", "  OS floor: futex ping-pong, 2 procs/1 CPU", false}, measure_os_processes},
    {{"xyield", "cross-process yield turn (= quantum)", false}, measure_cross_process_yield},
};

} // namespace

int main(int argc, char** argv) {
    const Options options = parse_options(argc, argv);
    std::vector<Result> results;
    bool failed = false;
    try {
        for (const Entry& e : kEntries) {
            if (!options.selected(e.metric.name)) continue;
            std::fprintf(stderr, "running %s...\n", e.metric.name.c_str());
            results.push_back({e.metric, e.measure(options)});
            failed |= !results.back().outcome.error.empty();
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "coexec-bench-substrate: %s\n", e.what());
        return 1;
    }
    print_report(results, options.repeats);
    return failed ? 1 : 0;
}
