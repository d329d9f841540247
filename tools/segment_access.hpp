// Finding and attaching to the segment the CLI inspects.
#pragma once

#include "config/config.hpp"
#include "shm/segment.hpp"

#include <functional>
#include <optional>
#include <string>

namespace coexec::cli {

// The global options every subcommand shares; unset means "as configured".
struct GlobalOptions {
    std::optional<std::string> name;
    std::optional<std::string> isolation;
};

// The segment a command works on: the configuration in force, resolved
// exactly as the runtime resolves it, with the global options on top.
struct Target {
    config::Config config;
    shm::SegmentOptions options;
    std::string shm_name; // e.g. "/coexec.coexec.u1000"
};

// Resolves the target. On failure (bad configuration, bad option, or the
// process isolation level, which has no shared segment) returns nullopt and
// sets `error` to a message for the user. Configuration warnings go to stderr.
std::optional<Target> resolve_target(const GlobalOptions& global, std::string& error);

// Attaches to the existing segment of `target`, never creating one. Beyond
// the library's magic/ABI checks, refuses a header whose counts are out of
// range, so later reads can index the segment safely. On failure returns an
// empty mapping and fills `error`.
shm::SegmentMapping open_existing(const Target& target, shm::SegmentError& error);

// As open_existing(), but creates the segment (with an empty CPU table,
// which the first member lays out) when there is none.
shm::SegmentMapping open_or_create(const Target& target, shm::SegmentError& error);

// Prints "coexec: <message>" on stderr.
void print_error(const std::string& message);

// A resolved target and its attached segment.
struct OpenSegment {
    Target target;
    shm::SegmentMapping mapping;
};

// resolve_target() then open_existing(); on failure prints why and returns
// nullopt, so commands can just exit non-zero. When there is no segment,
// `when_absent` (if given) runs after the message, with the target.
std::optional<OpenSegment>
open_for_reading(const GlobalOptions& global,
                 const std::function<void(const Target&)>& when_absent = {});

} // namespace coexec::cli
