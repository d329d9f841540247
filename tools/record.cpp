// `coexec record`: a timeline trace of CPU ownership, for Perfetto.
#include "commands.hpp"
#include "launch_env.hpp"
#include "native_sampler.hpp"
#include "trace_json.hpp"
#include "trace_recorder.hpp"

#include "shm/clock.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <optional>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

namespace coexec::cli {
namespace {

// A ring holds shm::kTraceRingSize records: at this period a CPU may see
// some 250 ownership changes per millisecond before any is lost.
constexpr uint64_t kPollNs = 1'000'000;

std::atomic<int> stop_signal{0};

// Only sets a flag: the loop below polls it between its sleeps.
void on_stop_signal(int sig) {
    stop_signal.store(sig, std::memory_order_relaxed);
}

// Ctrl-C and SIGTERM end the recording (the trace is still written). No
// SA_RESTART, so the poll loop's sleep returns at once.
void catch_stop_signals() {
    struct sigaction sa {};
    sa.sa_handler = &on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

// The command's environment: ours, with the global options turned into
// configuration overrides so that the command joins the recorded segment.
std::vector<std::string> child_environment(const GlobalOptions& global) {
    // Appended piecewise: `"literal" + std::string&&` trips a false
    // -Wrestrict in gcc 12 at -O2 (as in launch_env.cpp).
    std::string extra;
    if (global.name) {
        extra += "shared_memory.name=";
        extra += *global.name;
    }
    if (global.isolation) {
        if (!extra.empty()) extra += ',';
        extra += "shared_memory.isolation_level=";
        extra += *global.isolation;
    }
    // Appended to the override the runtime reads (launch_env.hpp).
    launch::EnvVar override = launch::append_config_override(extra, launch::own_environment());
    const std::string key = override.name + "=";
    std::vector<std::string> env;
    bool done = extra.empty();
    for (char** e = environ; *e; ++e) {
        std::string var = *e;
        if (!done && var.rfind(key, 0) == 0) {
            var = key + override.value;
            done = true;
        }
        env.push_back(std::move(var));
    }
    if (!done) env.push_back(key + override.value);
    return env;
}

// Starts `command` (looked up on PATH) with environment `env`; -1 and a
// message when it cannot.
pid_t start_command(const std::vector<std::string>& command, std::vector<std::string> env) {
    std::vector<char*> argv, envp;
    for (const auto& a : command)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (auto& e : env)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = -1;
    if (int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()); rc != 0) {
        print_error(fmt::format("cannot run '{}': {}", command[0], std::strerror(rc)));
        return -1;
    }
    return pid;
}

// Our own environment, unchanged.
std::vector<std::string> own_environment() {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e)
        env.emplace_back(*e);
    return env;
}

// The exit status `coexec record` passes on: the command's, or 128+signal.
int exit_status(int wstatus) {
    if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
    return 1;
}

void sleep_ns(uint64_t ns) {
    timespec ts{time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)};
    nanosleep(&ts, nullptr); // a signal ends it early, as wanted
}

bool write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    return bool(out);
}

// Calls `poll` every kPollNs until `child` (if > 0) exits, the duration
// passes, or a stop signal arrives. Returns the child's exit status if it
// exited (and sets `child` to -1), else 0.
int poll_until_done(const RecordOptions& options, pid_t& child, const std::function<void()>& poll) {
    const uint64_t deadline =
        options.duration_s > 0 ? shm::now_ns() + uint64_t(options.duration_s * 1e9) : 0;
    for (;;) {
        poll();
        if (stop_signal.load(std::memory_order_relaxed) != 0) break;
        if (deadline != 0 && shm::now_ns() >= deadline) break;
        if (child > 0) {
            int ws = 0;
            if (waitpid(child, &ws, WNOHANG) == child) {
                child = -1;
                return exit_status(ws);
            }
        }
        sleep_ns(kPollNs);
    }
    return 0;
}

// Writes `rec` to options.output (and its picture with --png), then waits
// for `child` if it still runs. Returns 2 when the trace or picture could
// not be written, else the command's status (`status` if it exited).
int write_and_wait(const Recording& rec, const RecordOptions& options, pid_t child, int status) {
    // From here a second Ctrl-C stops `coexec record` itself.
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    const std::string text = trace_to_json(rec).dump();
    bool write_failed = false;
    if (!write_file(options.output, text)) {
        print_error(fmt::format("cannot write the trace to '{}'", options.output));
        write_failed = true;
    } else {
        std::fprintf(stderr,
                     "coexec record: %zu events (%llu lost) written to %s\n"
                     "  open it in https://ui.perfetto.dev (Open trace file) or chrome://tracing;\n"
                     "  or draw it: coexec plot %s -o %s\n",
                     rec.events.size(), static_cast<unsigned long long>(rec.lost()),
                     options.output.c_str(), options.output.c_str(),
                     png_path_for(options.output).c_str());
        if (options.png) {
            PlotOptions plot;
            plot.trace = options.output;
            plot.output = png_path_for(options.output);
            write_failed = plot_command(plot) != 0;
        }
    }
    // The command still runs when a signal or the duration ended the
    // recording: the trace is on disk, now wait for it.
    if (child > 0) {
        int ws = 0;
        while (waitpid(child, &ws, 0) < 0 && errno == EINTR) {
        }
        status = exit_status(ws);
    }
    return write_failed ? 2 : status;
}

// Fails early on an unwritable output, before the command runs.
bool output_writable(const std::string& path) {
    if (std::ofstream probe(path, std::ios::app); !probe) {
        print_error(fmt::format("cannot write the trace to '{}': {}", path, std::strerror(errno)));
        return false;
    }
    return true;
}

// `coexec record --native`: the command outside coexec, sampled from /proc.
int record_native(const RecordOptions& options) {
    if (options.command.empty() && options.pid <= 0) {
        print_error("--native needs a command to run or --pid");
        return 2;
    }
    if (options.pid > 0 && ::kill(options.pid, 0) != 0 && errno == ESRCH) {
        print_error(fmt::format("no process {}", options.pid));
        return 2;
    }
    if (!output_writable(options.output)) return 2;
    catch_stop_signals();
    pid_t root = options.pid;
    if (root <= 0) root = start_command(options.command, own_environment());
    if (root < 0) return 127;
    pid_t child = options.pid > 0 ? -1 : root;
    // Scripts (run.py --trace) wait for this line before starting work.
    std::fprintf(stderr, "coexec record: sampling pid %d and its descendants from /proc%s\n",
                 int(root), child < 0 && options.duration_s <= 0 ? " (Ctrl-C to stop)" : "");
    std::fflush(stderr);
    NativeSampler sampler(root);
    int status = poll_until_done(options, child, [&] {
        sampler.sample();
        // A watched process that exits ends the recording too.
        if (child < 0 && sampler.root_gone()) stop_signal.store(-1);
    });
    return write_and_wait(sampler.finish(), options, child, status);
}

} // namespace

std::string png_path_for(const std::string& trace_path) {
    const std::string ext = ".json";
    if (trace_path.size() > ext.size() &&
        trace_path.compare(trace_path.size() - ext.size(), ext.size(), ext) == 0)
        return trace_path.substr(0, trace_path.size() - ext.size()) + ".png";
    return trace_path + ".png";
}

int record_command(const GlobalOptions& global, const RecordOptions& options) {
    if (options.native) return record_native(options);
    std::string problem;
    std::optional<Target> target = resolve_target(global, problem);
    if (!target) {
        print_error(problem);
        return 2;
    }
    if (!output_writable(options.output)) return 2;
    // Created if missing: the command's processes are then recorded from
    // the moment they join.
    shm::SegmentError error;
    shm::SegmentMapping mapping = open_or_create(*target, error);
    if (!mapping) {
        print_error(error.message);
        return 2;
    }
    catch_stop_signals();
    std::optional<TraceRecorder> started;
    try {
        started.emplace(*mapping.get(), target->shm_name);
    } catch (const std::exception& e) {
        print_error(e.what());
        return 2;
    }
    TraceRecorder& recorder = *started;
    // Scripts (run.py --trace) wait for this line before starting work.
    std::fprintf(stderr, "coexec record: recording %s%s\n", target->shm_name.c_str(),
                 options.command.empty() && options.duration_s <= 0 ? " (Ctrl-C to stop)" : "");
    std::fflush(stderr);
    pid_t child = -1;
    if (!options.command.empty()) {
        child = start_command(options.command, child_environment(global));
        if (child < 0) return 127;
    }
    int status = poll_until_done(options, child, [&] { recorder.poll(); });
    return write_and_wait(recorder.finish(), options, child, status);
}

} // namespace coexec::cli
