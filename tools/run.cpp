// `coexec run`: execs a program with the adapters on the loader path.
#include "commands.hpp"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace coexec::cli {
namespace {

namespace fs = std::filesystem;
using namespace std::string_view_literals;

// How an adapter is injected: its directory on LD_LIBRARY_PATH (the
// program's own libomp/libgomp resolve to it), its library in LD_PRELOAD, or
// both.
struct Adapter {
    const char* name;
    const char* library;
    bool on_path;
    bool preload;
};

// libomp is preloaded too, last: its libc wrappers (sched_yield, the sleeps)
// must come before libc's for every caller, and a library that reaches
// OpenMP through dlopen (NumPy's OpenBLAS) is searched only after libc. The
// TBB adapter's own wrappers hand what is not theirs to the next definition,
// which is then libomp's.
constexpr std::array<Adapter, 3> kAdapters{{{"tbb", "libirml.so.1", false, true},
                                            {"pocl", "libcoexec-pocl.so", false, true},
                                            {"openmp", "libomp.so.5", true, true}}};

// The directory holding libcoexec.so and coexec/<adapter>/: <exe_dir>/../lib
// in the build tree (and most install trees), else the install libdir.
fs::path library_dir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    fs::path build_tree = (exe.parent_path() / ".." / "lib").lexically_normal();
    fs::path installed = (exe.parent_path() / COEXEC_LIBDIR_FROM_BINDIR).lexically_normal();
    if (!fs::exists(build_tree / "libcoexec.so", ec) && fs::exists(installed / "libcoexec.so", ec))
        return installed;
    return build_tree;
}

// A BLAS directory the user asked for (COEXEC_OPENBLAS_DIR: OpenBLAS's
// OpenMP build, say, whose threads are OpenMP threads that the re-hosted
// libomp hosts), when it holds libopenblas.so.0; else none, and the process
// uses the BLAS the system's libblas.so.3 alternative names. OpenBLAS's
// pthreads build, Debian's default, is faster than the OpenMP build when
// BLAS is called from several threads at once (docs/python.md has the
// figures); its pool runs on coexec (COEXEC_HOST_THREADS=all, the default
// below), or beside it with main or none. On the loader path it wins for this
// process only; the alternative is left alone.
std::string blas_dir() {
    const char* chosen = std::getenv("COEXEC_OPENBLAS_DIR");
    std::error_code ec;
    if (!chosen || !*chosen || !fs::exists(fs::path(chosen) / "libopenblas.so.0", ec)) return {};
    return chosen;
}

// Prepends `first` to the ':'-separated list in variable `name`.
void prepend_env(const char* name, const std::string& first) {
    const char* old = std::getenv(name);
    std::string value = old && *old ? first + ":" + old : first;
    setenv(name, value.c_str(), 1);
}

bool requested(const RunOptions& o, const Adapter& a) {
    std::string_view n = a.name;
    return (n == "openmp" && o.openmp) || (n == "tbb" && o.tbb) || (n == "pocl" && o.pocl);
}

// Sets the loader variables for the chosen adapters. With none asked for,
// takes every adapter that is built. Returns false (after printing why) when
// an adapter asked for is not built.
bool set_loader_env(const RunOptions& o, const fs::path& lib) {
    const bool any = o.openmp || o.tbb || o.pocl;
    std::string preload;
    std::string lib_path = lib.string();
    for (const Adapter& a : kAdapters) {
        fs::path file = lib / "coexec" / a.name / a.library;
        bool built = fs::exists(file);
        if (any && requested(o, a) && !built) {
            print_error(std::string("run: the ") + a.name + " adapter is not built (" +
                        file.string() + " does not exist)");
            return false;
        }
        if (!built || (any && !requested(o, a))) continue;
        // Appended piecewise: `"literal" + std::string&&` trips a false
        // -Wrestrict in gcc 12 at -O2 (a known gcc 12 false positive).
        if (a.preload) {
            if (!preload.empty()) preload += ':';
            preload += file.string();
        }
        if (!a.on_path) continue;
        if (std::string blas = blas_dir(); !blas.empty() && a.name == "openmp"sv)
            lib_path = blas + ":" + lib_path;
        lib_path = file.parent_path().string() + ":" + lib_path;
    }
    prepend_env("LD_LIBRARY_PATH", lib_path);
    // libcoexec itself first: the adapters load it after libc, and then its
    // sched_getaffinity & co. (a managed thread shows its own mask, not
    // coexec's pinning; docs/affinity.md) would never be called. Then
    // libcoexec-host.so, which hosts the main thread and wraps the C
    // library's blocking calls before libc's and the adapters' own
    // (docs/threads.md).
    if (fs::path core = lib / "libcoexec.so"; !preload.empty() && fs::exists(core)) {
        std::string first = core.string();
        first += ':';
        if (fs::path host = lib / "coexec" / "host" / "libcoexec-host.so"; fs::exists(host)) {
            first += host.string();
            first += ':';
        }
        preload.insert(0, first);
    }
    if (!preload.empty()) prepend_env("LD_PRELOAD", preload);
    return true;
}

} // namespace

int run_command(const RunOptions& options) {
    if (options.command.empty()) {
        print_error(
            "run: no command given (usage: coexec run [--openmp] [--tbb] [--pocl] -- CMD ARGS...)");
        return 2;
    }
    fs::path lib = library_dir();
    if (lib.empty()) {
        print_error("run: cannot find the coexec installation (/proc/self/exe unreadable)");
        return 2;
    }
    if (!set_loader_env(options, lib)) return 2;
    // Every thread the program starts runs on CPUs coexec grants, like the
    // threads of its runtimes (core/host/), unless the user chose otherwise:
    // with the main thread only, four NumPy processes took 1.64x the best of
    // the modes without coexec, with every thread 0.95x (docs/threads.md,
    // which also has the case where main is better: CPU hogs outside
    // coexec).
    setenv("COEXEC_HOST_THREADS", "all", 0);
    std::vector<char*> argv;
    for (const auto& arg : options.command)
        argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    int err = errno;
    print_error("run: cannot run '" + options.command[0] + "': " + std::strerror(err));
    return err == ENOENT ? 127 : 126;
}

} // namespace coexec::cli
