// The subcommands of `coexec`. Each returns the process exit status.
#pragma once

#include "segment_access.hpp"

#include <string>
#include <vector>

namespace coexec::cli {

struct TopOptions {
    double interval_s = 1.0;
    bool once = false;
    bool json = false;
    int iterations = 0; // snapshots to show; 0 = until interrupted
};

// Live (or one-shot) view of CPU ownership and processes.
int top_command(const GlobalOptions& global, const TopOptions& options);

// One line per process registered in the segment.
int ps_command(const GlobalOptions& global, bool json);

// Topology, configuration in force and segment usage.
int info_command(const GlobalOptions& global, bool json);

// Removes the segment once every process that used it is dead; `force`
// removes it unconditionally (in use, foreign, corrupt, other version).
int reset_command(const GlobalOptions& global, bool force);

// Takes the segment lock and checks every invariant of the segment
// (scheduler::check_invariants). Prints one line and returns 0 when it is
// sound; lists each violation and returns 1 when it is not; returns 2 when
// there is no usable segment.
int check_command(const GlobalOptions& global);

struct RunOptions {
    bool openmp = false;
    bool tbb = false;
    bool pocl = false;
    std::vector<std::string> command;
};

struct RecordOptions {
    std::string output = "coexec-trace.json";
    double duration_s = 0;            // > 0: stop after this long
    bool png = false;                 // also draw the trace (plot_command) next to it
    std::vector<std::string> command; // run it and stop when it exits
    // Run `command` outside coexec and sample what the kernel scheduler did
    // with its process tree from /proc (NativeSampler), not the segment.
    bool native = false;
    // With `native` instead of a command: sample this running process's
    // tree until it exits, the duration passes, or Ctrl-C.
    int pid = 0;
};

// Records every ownership change of the segment (created if missing) into
// a Chrome/Perfetto trace-event JSON file: while `command` runs, for
// `duration_s`, or until SIGINT/SIGTERM. Returns the command's exit status
// (128+signal if a signal ended it), or 2 when the segment or the file
// cannot be used, 127 when the command cannot be started. With `native`,
// `command` runs with our environment as is (or `pid` is watched), and its
// process tree is sampled every millisecond instead; no segment is used.
int record_command(const GlobalOptions& global, const RecordOptions& options);

// The PNG path `coexec record --png` writes for a trace: ".json" -> ".png".
std::string png_path_for(const std::string& trace_path);

struct PlotOptions {
    std::string trace;
    std::string output = "timeline.png";
    std::string title; // empty: the trace's path
};

// Draws the CPU slices of a `coexec record` trace as a Gantt chart with
// gnuplot: CPUs on y, time on x, one colour per process (by pid), a shade of
// it per runtime label, and a legend entry "NAME PID (LABELS)" per process.
// Returns 0, or 2 when the trace cannot be read or gnuplot fails.
int plot_command(const PlotOptions& options);

// Execs `command` with the chosen adapters' libraries on the loader path;
// returns only on failure (2: usage, 127: cannot exec).
int run_command(const RunOptions& options);

} // namespace coexec::cli
