// `coexec ps` and `coexec info`: one-shot reports.
#include "commands.hpp"
#include "views.hpp"

#include "scheduler/topology.hpp"

#include <cstdio>
#include <iostream>

namespace coexec::cli {

int ps_command(const GlobalOptions& global, bool json) {
    std::optional<OpenSegment> open = open_for_reading(global);
    if (!open) return 1;
    Snapshot snap = take_snapshot(*open->mapping.get(), open->target.shm_name);
    if (json) {
        std::cout << processes_json(snap).dump(2) << "\n";
        return 0;
    }
    for (const auto& line : process_table(snap, nullptr, true))
        std::cout << line << "\n";
    return 0;
}

int info_command(const GlobalOptions& global, bool json) {
    // Without a segment, what the first process would find: the CPUs it
    // would manage, or why it could not start.
    auto what_a_new_instance_finds = [](const Target& target) {
        scheduler::Discovery found;
        std::string problem;
        if (scheduler::discover_cpus(target.config.binding, found, problem))
            std::fprintf(stderr, "coexec: a new instance would manage %zu CPU%s (%s)\n",
                         found.cpus.size(), found.cpus.size() == 1 ? "" : "s",
                         found.origin.c_str());
        else
            print_error("a new instance could not start: " + problem);
    };
    std::optional<OpenSegment> open = open_for_reading(global, what_a_new_instance_finds);
    if (!open) return 1;
    Snapshot snap = take_snapshot(*open->mapping.get(), open->target.shm_name);
    const std::string& binding = open->target.config.binding;
    if (json) {
        std::cout << info_json(snap, binding).dump(2) << "\n";
        return 0;
    }
    for (const auto& line : info_lines(snap, binding))
        std::cout << line << "\n";
    return 0;
}

} // namespace coexec::cli
