// Overhead of the coexec RML server for a TBB program running alone.
//
//   tbb_overhead --irml PATH [--repeats N]   compare stock TBB with the adapter
//   tbb_overhead --kernel NAME               run one kernel, print its median (ns)
//
// The comparison runs each kernel in fresh processes, alternating stock and
// adapted runs, and prints for each kernel the median over the repeats of the
// per-process medians, and the median over the repeats of the ratio of each
// adapted run to the stock run just before it: this VM switches between a
// fast and a slow regime every few seconds, and pairs taken close together
// see the same one. The adapted runs use a coexec instance of their own
// (shared_memory.name=tbb-overhead-PID), so nothing else on the node's
// default instance competes for its CPUs.

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_group.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

std::vector<double> data(1 << 20, 1.0);

// Many tiny chunks: grainsize 64, so scheduling dominates.
void parallel_for_small_grain() {
    oneapi::tbb::parallel_for(
        oneapi::tbb::blocked_range<size_t>(0, data.size(), 64),
        [](const auto& r) {
            for (size_t i = r.begin(); i != r.end(); ++i)
                data[i] = data[i] * 1.000001 + 1e-9;
        },
        oneapi::tbb::simple_partitioner());
}

// Few big chunks of real work: the adapter should be invisible.
void parallel_for_large_grain() {
    oneapi::tbb::parallel_for(oneapi::tbb::blocked_range<size_t>(0, data.size(), 1 << 16),
                              [](const auto& r) {
                                  for (int pass = 0; pass < 20; ++pass)
                                      for (size_t i = r.begin(); i != r.end(); ++i)
                                          data[i] = data[i] * 1.000001 + 1e-9;
                              });
}

// A short piece of work the compiler cannot remove (about 0.4 µs here), as
// EPCC's task benchmarks put in each task.
void delay() {
    double a = 0.0;
    for (int i = 0; i < 400; ++i)
        a += i;
    volatile double sink = a;
    (void)sink;
}

// 20000 short tasks spawned from one thread. Empty tasks would measure how
// often a thief fights the spawner over its deque (stock TBB alone swings 3x
// between runs with them); with some work in each, both threads take part.
void task_group_spawn() {
    std::atomic<int> done{0};
    oneapi::tbb::task_group group;
    for (int i = 0; i < 20000; ++i)
        group.run([&] {
            delay();
            done.fetch_add(1, std::memory_order_relaxed);
        });
    group.wait();
    if (done.load() != 20000) std::abort();
}

const std::map<std::string, std::function<void()>>& kernels() {
    static const std::map<std::string, std::function<void()>> table = {
        {"parallel_for_small_grain", parallel_for_small_grain},
        {"parallel_for_large_grain", parallel_for_large_grain},
        {"task_group_spawn", task_group_spawn},
    };
    return table;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Runs a kernel 3 times to warm up, then 15 timed times; prints the median.
int run_kernel(const std::string& name) {
    const auto& kernel = kernels().at(name);
    for (int i = 0; i < 3; ++i)
        kernel();
    std::vector<double> times;
    for (int i = 0; i < 15; ++i) {
        const auto start = Clock::now();
        kernel();
        times.push_back(std::chrono::duration<double, std::nano>(Clock::now() - start).count());
    }
    std::printf("%.0f\n", median(times));
    return 0;
}

// Runs `self --kernel name` with LD_PRELOAD set to `preload` (or unset) on
// the coexec instance `segment`; returns the median it printed in ns, or a
// negative value on failure.
double measure_in_child(const char* self, const std::string& name, const char* preload,
                        const std::string& segment) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0 &&
            std::strncmp(*e, "COEXEC_CONFIG_OVERRIDE=", 23) != 0)
            env.emplace_back(*e);
    if (preload != nullptr) env.push_back(std::string("LD_PRELOAD=") + preload);
    env.push_back("COEXEC_CONFIG_OVERRIDE=shared_memory.name=" + segment);
    std::vector<char*> envp;
    for (auto& e : env)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string kernel_flag = "--kernel";
    std::string kernel_name = name;
    std::string program = self;
    char* argv[] = {program.data(), kernel_flag.data(), kernel_name.data(), nullptr};

    int out[2];
    if (pipe(out) != 0) return -1;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, out[0]);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, self, &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    if (rc != 0) {
        close(out[0]);
        return -1;
    }
    std::string text;
    char buffer[256];
    ssize_t n;
    while ((n = read(out[0], buffer, sizeof buffer)) > 0)
        text.append(buffer, static_cast<size_t>(n));
    close(out[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
    return std::atof(text.c_str());
}

int compare(const char* self, const char* irml, int repeats) {
    if (access(irml, R_OK) != 0) {
        std::fprintf(stderr, "tbb_overhead: cannot read %s\n", irml);
        return 1;
    }
    std::printf("%-26s %14s %14s %8s   (median of %d processes x 15 runs; ratio: median of "
                "pairs)\n",
                "kernel", "stock_us", "coexec_us", "ratio", repeats);
    const std::string segment = "tbb-overhead-" + std::to_string(getpid());
    for (const auto& [name, kernel] : kernels()) {
        std::vector<double> stock, hosted, ratios;
        for (int r = 0; r < repeats; ++r) {
            const double a = measure_in_child(self, name, nullptr, segment);
            const double b = measure_in_child(self, name, irml, segment);
            if (a <= 0 || b <= 0) {
                std::fprintf(stderr, "tbb_overhead: kernel %s failed\n", name.c_str());
                return 1;
            }
            stock.push_back(a);
            hosted.push_back(b);
            ratios.push_back(b / a);
        }
        std::printf("%-26s %14.1f %14.1f %8.3f\n", name.c_str(), median(stock) / 1e3,
                    median(hosted) / 1e3, median(ratios));
    }
    return 0;
}

int usage(const char* program) {
    std::fprintf(stderr,
                 "usage: %s --irml PATH [--repeats N]\n"
                 "       %s --kernel NAME\n",
                 program, program);
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "--kernel") == 0) {
        if (kernels().count(argv[2]) == 0) {
            std::fprintf(stderr, "tbb_overhead: unknown kernel %s\n", argv[2]);
            return 2;
        }
        return run_kernel(argv[2]);
    }
    const char* irml = nullptr;
    int repeats = 5;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--irml") == 0 && i + 1 < argc) {
            irml = argv[++i];
        } else if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = std::atoi(argv[++i]);
            if (repeats < 1 || repeats > 1000) return usage(argv[0]);
        } else {
            return usage(argv[0]);
        }
    }
    if (irml == nullptr) return usage(argv[0]);
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return 1;
    self[len] = '\0';
    return compare(self, irml, repeats);
}
