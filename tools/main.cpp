// The `coexec` command: inspect and manage the shared scheduler, and run
// programs with the runtime adapters.
#include "commands.hpp"

#include <CLI/CLI.hpp>
#include <limits>

// Keeps the CLI out of the instance when libcoexec is preloaded into it
// (core/interpose/program_threads.cpp): `coexec ps` under `coexec run` only looks.
extern "C" __attribute__((visibility("default"), used)) const int coexec_never_host_threads = 1;

namespace {

using namespace coexec::cli;

// The parsed command line; the callbacks of the subcommands fill `status`.
struct Cli {
    GlobalOptions global;
    TopOptions top;
    bool json = false;
    bool force = false;
    RunOptions run;
    RecordOptions record;
    PlotOptions plot;
    int status = 0;
};

void add_global_options(CLI::App& app, Cli& cli) {
    app.add_option("--name", cli.global.name,
                   "Segment name (shared_memory.name), instead of the configured one");
    app.add_option("--isolation", cli.global.isolation,
                   "Isolation level (shared_memory.isolation_level): user, group or public");
}

void add_top(CLI::App& app, Cli& cli) {
    CLI::App* top =
        app.add_subcommand("top", "Live view of who holds each CPU, and of the processes");
    top->add_option("--interval", cli.top.interval_s, "Seconds between refreshes")
        ->check(CLI::Range(0.05, 3600.0))
        ->capture_default_str();
    top->add_flag("--once", cli.top.once, "Print one snapshot and exit");
    top->add_flag("--json", cli.top.json,
                  "Print JSON (with --once: one document; else one per line)");
    top->add_option("-n,--iterations", cli.top.iterations,
                    "Stop after this many snapshots (0: never)")
        ->check(CLI::NonNegativeNumber);
    top->callback([&] { cli.status = top_command(cli.global, cli.top); });
}

void add_reports(CLI::App& app, Cli& cli) {
    CLI::App* ps = app.add_subcommand("ps", "List the processes using the segment");
    ps->add_flag("--json", cli.json, "Print JSON");
    ps->callback([&] { cli.status = ps_command(cli.global, cli.json); });

    CLI::App* info =
        app.add_subcommand("info", "Show topology, configuration in force and segment usage");
    info->add_flag("--json", cli.json, "Print JSON");
    info->callback([&] { cli.status = info_command(cli.global, cli.json); });

    CLI::App* reset = app.add_subcommand("reset", "Remove a segment whose processes are all dead");
    reset->add_flag("--force", cli.force,
                    "Remove it even if in use, foreign, corrupt or of another version");
    reset->callback([&] { cli.status = reset_command(cli.global, cli.force); });

    CLI::App* check = app.add_subcommand(
        "check",
        "Verify the segment's invariants under its lock (exit 0 sound, 1 violated, 2 no segment)");
    check->callback([&] { cli.status = check_command(cli.global); });
}

void add_run(CLI::App& app, Cli& cli) {
    CLI::App* run = app.add_subcommand(
        "run", "Run a program with the runtime adapters (default: every adapter that is built)");
    run->footer("Usage: coexec run [--openmp] [--tbb] [--pocl] -- CMD [ARGS...]\n"
                "Puts the adapters on LD_LIBRARY_PATH and LD_PRELOAD and execs CMD, so it\n"
                "exits with the status of CMD. The program's threads are coexec threads\n"
                "too: COEXEC_HOST_THREADS is set to all unless it is set (main: the main\n"
                "thread only; none: no program thread), and under all\n"
                "OPENBLAS_THREAD_TIMEOUT to 23 unless it is set. COEXEC_OPENBLAS_DIR\n"
                "names a directory of libopenblas.so.0 to use instead of the system's\n"
                "(with --openmp, or no adapter named).");
    run->add_flag("--openmp", cli.run.openmp, "Re-host OpenMP (libomp and libgomp programs)");
    run->add_flag("--tbb", cli.run.tbb, "Re-host oneTBB workers");
    run->add_flag("--pocl", cli.run.pocl, "Re-host PoCL's CPU driver threads");
    // Everything from the first positional argument on (or after "--") is
    // the command, options included.
    run->add_option("command", cli.run.command, "The program to run and its arguments");
    run->positionals_at_end();
    run->fallthrough(false);
    run->callback([&] { cli.status = run_command(cli.run); });
}

void add_trace(CLI::App& app, Cli& cli) {
    CLI::App* record = app.add_subcommand(
        "record", "Record who held each CPU into a trace for Perfetto (ui.perfetto.dev)");
    record->footer("Usage: coexec record [-o FILE] [--png] [--duration S | -- CMD [ARGS...]]\n"
                   "       coexec record --native [-o FILE] [--png]\n"
                   "                            (--pid PID [--duration S] | -- CMD [ARGS...])\n"
                   "Records every process on the segment while CMD runs, for S seconds, or\n"
                   "until Ctrl-C. With CMD, exits with its status.\n"
                   "--native runs CMD outside coexec (or watches PID) and samples its process\n"
                   "tree from /proc every millisecond: each CPU shows the thread the kernel ran\n"
                   "longest on it in each millisecond, not the exact context switches.");
    record->add_option("-o,--output", cli.record.output, "Trace file to write (JSON)")
        ->capture_default_str();
    CLI::Option* duration =
        record->add_option("--duration", cli.record.duration_s, "Stop after this many seconds")
            ->check(CLI::Range(0.001, 1e7));
    record->add_flag("--png", cli.record.png,
                     "Also draw the trace with gnuplot, next to it (FILE with .png)");
    CLI::Option* command =
        record->add_option("command", cli.record.command, "The program to run and its arguments");
    CLI::Option* native = record->add_flag(
        "--native", cli.record.native,
        "Run CMD outside coexec and sample what the kernel ran on each CPU (/proc, 1 ms)");
    CLI::Option* pid =
        record
            ->add_option("--pid", cli.record.pid,
                         "With --native: sample this running process and its descendants")
            ->check(CLI::Range(1, std::numeric_limits<int>::max()));
    pid->needs(native);
    pid->excludes(command);
    duration->excludes(command);
    record->positionals_at_end();
    record->callback([&] { cli.status = record_command(cli.global, cli.record); });

    CLI::App* plot = app.add_subcommand(
        "plot", "Draw a `coexec record` trace as a Gantt chart (PNG, with gnuplot)");
    plot->add_option("trace", cli.plot.trace, "Trace written by `coexec record`")->required();
    plot->add_option("-o,--output", cli.plot.output, "PNG file to write")->capture_default_str();
    plot->add_option("--title", cli.plot.title, "Chart title (default: the trace's path)");
    plot->callback([&] { cli.status = plot_command(cli.plot); });
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"coexec: inspect the system-wide scheduler and run programs on it", "coexec"};
    app.set_version_flag("--version", COEXEC_VERSION);
    app.require_subcommand(1);
    app.fallthrough(); // global options are accepted after the subcommand too
    Cli cli;
    add_global_options(app, cli);
    add_top(app, cli);
    add_reports(app, cli);
    add_run(app, cli);
    add_trace(app, cli);
    // After the subcommands, which would otherwise inherit it.
    app.footer("The segment is the one nosv_init() would join from this environment:\n"
               "NOSV_CONFIG (a TOML file) and NOSV_CONFIG_OVERRIDE (key=value,...), or\n"
               "COEXEC_CONFIG and COEXEC_CONFIG_OVERRIDE; --name and --isolation override\n"
               "them, before or after the subcommand. `coexec SUBCOMMAND --help` shows the\n"
               "options of a subcommand.");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // CLI11 reports a mistyped subcommand as a missing one: name it.
        std::vector<std::string> extra = app.remaining();
        if (app.get_subcommands().empty() && !extra.empty() && extra.front()[0] != '-') {
            print_error("unknown subcommand '" + extra.front() + "' (see coexec --help)");
            return e.get_exit_code();
        }
        return app.exit(e);
    }
    return cli.status;
}
