#include "segment_access.hpp"

#include "scheduler/shared_scheduler.hpp"

#include <cstdio>

namespace coexec::cli {
namespace {

// Counts fixed at creation that every reader uses as loop bounds.
std::string header_problem(const shm::Header& h) {
    if (h.cpu_count < 0 || h.cpu_count > h.max_cpus)
        return "its CPU count " + std::to_string(h.cpu_count) + " is out of range";
    if (h.numa_count < 0 || h.numa_count > shm::kMaxNuma)
        return "its NUMA node count " + std::to_string(h.numa_count) + " is out of range";
    if (h.cpu_count > 0 && h.numa_count == 0) return "it has CPUs but no NUMA node";
    if (h.max_procs != shm::kMaxProcs || h.max_threads != shm::kMaxThreads)
        return "its table sizes do not match this coexec";
    return {};
}

shm::SegmentMapping open_checked(const shm::SegmentOptions& options, const Target& target,
                                 shm::SegmentError& error) {
    shm::SegmentMapping mapping = shm::SegmentMapping::open(options, error);
    if (!mapping) return mapping;
    // open() has read the magic with acquire, so the fixed header fields
    // the creator wrote before publishing it are visible here.
    if (std::string problem = header_problem(mapping->header); !problem.empty()) {
        error = {shm::SegmentError::Kind::Foreign, "shared segment " + target.shm_name +
                                                       " is corrupt (" + problem +
                                                       "); remove it with `coexec reset --force`"};
        return {};
    }
    return mapping;
}

} // namespace

std::optional<Target> resolve_target(const GlobalOptions& global, std::string& error) {
    Target t;
    config::ConfigResult loaded = config::load_config(t.config);
    if (!loaded.ok) {
        error = loaded.error;
        return std::nullopt;
    }
    for (const auto& w : loaded.warnings)
        std::fprintf(stderr, "coexec: warning: %s\n", w.c_str());
    if (global.name) {
        config::ConfigResult r =
            config::apply_setting(t.config, "shared_memory.name", *global.name);
        if (!r.ok) {
            error = "--name: " + r.error;
            return std::nullopt;
        }
    }
    if (global.isolation && !shm::parse_isolation(*global.isolation, t.config.isolation)) {
        error = "--isolation must be user, group or public, not '" + *global.isolation + "'";
        return std::nullopt;
    }
    if (t.config.isolation == shm::Isolation::Process) {
        error = "isolation level 'process' keeps the scheduler private to each process: there is "
                "no shared segment to inspect (use --isolation user|group|public)";
        return std::nullopt;
    }
    t.options.name = t.config.shm_name;
    t.options.isolation = t.config.isolation;
    t.options.create = false;
    t.shm_name = shm::segment_shm_name(t.options);
    return t;
}

shm::SegmentMapping open_existing(const Target& target, shm::SegmentError& error) {
    return open_checked(target.options, target, error);
}

shm::SegmentMapping open_or_create(const Target& target, shm::SegmentError& error) {
    shm::SegmentOptions options = target.options;
    options.create = true;
    // As an entering process does: no CPU table yet; the first member lays
    // it out with its own settings (Membership::enter()).
    options.initialize = [](shm::Segment& s) {
        scheduler::SharedScheduler(s).format_unpublished({}, shm::SegmentConfig{});
    };
    return open_checked(options, target, error);
}

void print_error(const std::string& message) {
    std::fprintf(stderr, "coexec: %s\n", message.c_str());
}

std::optional<OpenSegment> open_for_reading(const GlobalOptions& global,
                                            const std::function<void(const Target&)>& when_absent) {
    std::string problem;
    std::optional<Target> target = resolve_target(global, problem);
    if (!target) {
        print_error(problem);
        return std::nullopt;
    }
    shm::SegmentError error;
    shm::SegmentMapping mapping = open_existing(*target, error);
    if (!mapping) {
        print_error(error.message);
        if (error.kind == shm::SegmentError::Kind::NotFound && when_absent) when_absent(*target);
        return std::nullopt;
    }
    return OpenSegment{std::move(*target), std::move(mapping)};
}

} // namespace coexec::cli
