// `coexec top`: redraws in place on a terminal, prints successive snapshots
// when piped.
#include "commands.hpp"
#include "views.hpp"

#include <cerrno>
#include <csignal>
#include <ctime>
#include <fmt/format.h>
#include <iostream>
#include <optional>
#include <sys/ioctl.h>
#include <unistd.h>

namespace coexec::cli {
namespace {

// Set by SIGINT/SIGTERM; sig_atomic_t is the only type a handler may write.
volatile std::sig_atomic_t g_stop = 0;

void on_stop_signal(int) {
    g_stop = 1;
}

// Installs the stop handlers without SA_RESTART, so a sleep ends at once.
void catch_stop_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

// Sleeps `seconds` unless a stop signal arrives first.
void sleep_interruptibly(double seconds) {
    timespec left{time_t(seconds), long((seconds - double(time_t(seconds))) * 1e9)};
    while (!g_stop && nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
}

// The alternate screen with a hidden cursor, restored on destruction.
class FullScreen {
  public:
    FullScreen() { std::cout << "\x1b[?1049h\x1b[?25l" << std::flush; }
    ~FullScreen() { std::cout << "\x1b[?25h\x1b[?1049l" << std::flush; }
    FullScreen(const FullScreen&) = delete;
    FullScreen& operator=(const FullScreen&) = delete;

    // Draws `lines` from the top-left corner, cut to the window size.
    void draw(const std::vector<std::string>& lines) {
        winsize ws{};
        bool sized = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0;
        size_t rows = sized ? ws.ws_row : lines.size();
        size_t cols = sized ? ws.ws_col : std::string::npos;
        std::string frame = "\x1b[H";
        for (size_t i = 0; i < lines.size() && i < rows; ++i) {
            if (i) frame += "\n";
            frame += lines[i].substr(0, cols) + "\x1b[K";
        }
        std::cout << frame << "\x1b[J" << std::flush;
    }
};

std::string wall_clock() {
    time_t now = time(nullptr);
    tm local{};
    localtime_r(&now, &local);
    char text[16];
    strftime(text, sizeof text, "%H:%M:%S", &local);
    return text;
}

std::vector<std::string> frame_lines(const Snapshot& snap, const Snapshot* previous) {
    std::vector<std::string> lines{top_title(snap) + " - " + wall_clock(), ""};
    for (auto& l : cpu_table(snap))
        lines.push_back(std::move(l));
    lines.emplace_back();
    for (auto& l : process_table(snap, previous, true))
        lines.push_back(std::move(l));
    lines.emplace_back();
    for (auto& l : runtime_table(snap))
        lines.push_back(std::move(l));
    return lines;
}

// JSON: indented for one snapshot, one line per snapshot when live.
void print_snapshot(const Snapshot& snap, const Snapshot* previous, bool json, bool once) {
    if (json) {
        std::cout << top_json(snap).dump(once ? 2 : -1) << "\n" << std::flush;
        return;
    }
    for (const auto& l : frame_lines(snap, previous))
        std::cout << l << "\n";
    // Live snapshots are separated by a blank line.
    std::cout << (once ? "" : "\n") << std::flush;
}

} // namespace

int top_command(const GlobalOptions& global, const TopOptions& options) {
    std::optional<OpenSegment> open = open_for_reading(global);
    if (!open) return 1;
    if (options.once) {
        print_snapshot(take_snapshot(*open->mapping.get(), open->target.shm_name), nullptr,
                       options.json, true);
        return 0;
    }
    catch_stop_signals();
    std::optional<FullScreen> screen;
    if (!options.json && isatty(STDOUT_FILENO)) screen.emplace();
    std::optional<Snapshot> previous;
    for (int shown = 0; !g_stop && (options.iterations == 0 || shown < options.iterations);
         ++shown) {
        if (shown) sleep_interruptibly(options.interval_s);
        if (g_stop) break;
        Snapshot snap = take_snapshot(*open->mapping.get(), open->target.shm_name);
        const Snapshot* before = previous ? &*previous : nullptr;
        if (screen)
            screen->draw(frame_lines(snap, before));
        else
            print_snapshot(snap, before, options.json, false);
        previous = std::move(snap);
    }
    return 0;
}

} // namespace coexec::cli
