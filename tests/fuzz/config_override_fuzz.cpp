// libFuzzer target: a NOSV_CONFIG_OVERRIDE string, parsed and applied, and
// the topology.binding CPU list it sets.
#include "fuzz_support.hpp"
#include "scheduler/topology.hpp"

#include <algorithm>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace coexec;
    config::Config config;
    std::string overrides(reinterpret_cast<const char*>(data), size);
    config::ConfigResult r = config::apply_overrides(config, overrides);
    fuzz::check_config(r, config);
    if (!r.ok || config.binding == "all" || config.binding == "inherit") return 0;
    // The runtime hands the binding to parse_cpu_list() at nosv_init.
    std::vector<int> cpus;
    std::string error;
    if (!scheduler::parse_cpu_list(config.binding, cpus, error)) {
        if (error.empty()) fuzz::fail("a rejected CPU list has no error message");
        return 0;
    }
    if (cpus.empty()) fuzz::fail("an accepted CPU list is empty");
    if (!std::is_sorted(cpus.begin(), cpus.end()) ||
        std::adjacent_find(cpus.begin(), cpus.end()) != cpus.end())
        fuzz::fail("an accepted CPU list is not sorted and unique");
    if (cpus.front() < 0 || cpus.back() >= scheduler::kCpuIds)
        fuzz::fail("a CPU id out of range");
    return 0;
}
