// The environment of a program run on coexec (see launch_env.hpp).
#include "launch_env.hpp"

#include <array>
#include <cstdlib>
#include <string_view>

namespace coexec::launch {
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

// A BLAS directory the user asked for (COEXEC_OPENBLAS_DIR: OpenBLAS's
// OpenMP build, say, whose threads are OpenMP threads that the re-hosted
// libomp hosts), when it holds libopenblas.so.0; else none, and the process
// uses the BLAS the system's libblas.so.3 alternative names. OpenBLAS's
// pthreads build, Debian's default, is faster than the OpenMP build when
// BLAS is called from several threads at once (docs/python.md has the
// figures); its pool runs on coexec (COEXEC_HOST_THREADS=all, the default
// below), or beside it with main or none. On the loader path it wins for this
// process only; the alternative is left alone.
std::string blas_dir(const GetEnv& get) {
    std::optional<std::string> chosen = get("COEXEC_OPENBLAS_DIR");
    std::error_code ec;
    if (!chosen || chosen->empty() || !fs::exists(fs::path(*chosen) / "libopenblas.so.0", ec))
        return {};
    return *chosen;
}

// `first` in front of the ':'-separated list in variable `name`.
EnvVar prepend(const char* name, const std::string& first, const GetEnv& get) {
    std::optional<std::string> old = get(name);
    std::string value = first;
    if (old && !old->empty()) {
        value += ':';
        value += *old;
    }
    return {name, value, true};
}

bool requested(const Adapters& o, const Adapter& a) {
    std::string_view n = a.name;
    return (n == "openmp" && o.openmp) || (n == "tbb" && o.tbb) || (n == "pocl" && o.pocl);
}

} // namespace

GetEnv own_environment() {
    return [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        if (!value) return std::nullopt;
        return std::string(value);
    };
}

bool run_environment(const Adapters& o, const fs::path& lib, const GetEnv& get,
                     std::vector<EnvVar>& out, std::string& error) {
    const bool any = o.openmp || o.tbb || o.pocl;
    std::string preload;
    std::string lib_path = lib.string();
    for (const Adapter& a : kAdapters) {
        fs::path file = lib / "coexec" / a.name / a.library;
        std::error_code ec;
        bool built = fs::exists(file, ec);
        if (any && requested(o, a) && !built) {
            error = std::string("the ") + a.name + " adapter is not built (" + file.string() +
                    " does not exist)";
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
        if (std::string blas = blas_dir(get); !blas.empty() && a.name == "openmp"sv)
            lib_path = blas + ":" + lib_path;
        lib_path = file.parent_path().string() + ":" + lib_path;
    }
    out.push_back(prepend("LD_LIBRARY_PATH", lib_path, get));
    // libcoexec itself first: the adapters load it after libc, and then its
    // sched_getaffinity & co. (a managed thread shows its own mask, not
    // coexec's pinning; docs/affinity.md) would never be called. Then
    // libcoexec-host.so, which hosts the main thread and wraps the C
    // library's blocking calls before libc's and the adapters' own
    // (docs/threads.md).
    std::error_code ec;
    if (fs::path core = lib / "libcoexec.so"; !preload.empty() && fs::exists(core, ec)) {
        std::string first = core.string();
        first += ':';
        if (fs::path host = lib / "coexec" / "host" / "libcoexec-host.so"; fs::exists(host, ec)) {
            first += host.string();
            first += ':';
        }
        preload.insert(0, first);
    }
    if (!preload.empty()) out.push_back(prepend("LD_PRELOAD", preload, get));
    // Every thread the program starts runs on CPUs coexec grants, like the
    // threads of its runtimes (core/host/), unless the user chose otherwise:
    // with the main thread only, four NumPy processes took 1.64x the best of
    // the modes without coexec, with every thread 0.95x (docs/threads.md,
    // which also has the case where main is better: CPU hogs outside
    // coexec).
    out.push_back({"COEXEC_HOST_THREADS", "all", false});
    // OpenBLAS's pthreads pool, hosted then, spins on sched_yield after each
    // call for 2^OPENBLAS_THREAD_TIMEOUT cycles before it sleeps on a
    // condition variable: 2^28 by default, 0.1 s at 2.6 GHz. Each hosted
    // yield hands the CPU to the process's other work, but while the pool
    // spins it queues for a CPU again at once, so the OpenMP team beside it
    // (a scikit-learn fit next to a thread doing matmuls) hands a CPU back
    // and forth with it at every barrier: such runs took 0.48-0.49 s where
    // those whose matmuls ended in the fit's serial code took 0.38-0.41 s,
    // 3 runs in 8 slow; with 2^23 cycles (3 ms) 8 of 8 took 0.37-0.41 s
    // (docs/python.md). A call after a longer idle pays a wake-up: a
    // 300x300 matmul every 5 ms took 610-640 us instead of 600-820 us.
    // Pools that coexec cannot configure nap once they have spun 10 ms
    // (SpinStreak, core/host/blocking_interpose.cpp), but a nap ends on a
    // timer, where OpenBLAS's sleep ends at the next call's signal: with
    // naps alone, 2 scikit-learn runs of 5 took 0.44-0.51 s.
    if (std::optional<std::string> mode = get("COEXEC_HOST_THREADS"); !mode || *mode == "all")
        out.push_back({"OPENBLAS_THREAD_TIMEOUT", "23", false});
    return true;
}

EnvVar append_config_override(const std::string& pieces, const GetEnv& get) {
    std::optional<std::string> nosv = get("NOSV_CONFIG_OVERRIDE");
    std::optional<std::string> ours = get("COEXEC_CONFIG_OVERRIDE");
    const bool use_ours = !(nosv && !nosv->empty()) && ours && !ours->empty();
    const char* name = use_ours ? "COEXEC_CONFIG_OVERRIDE" : "NOSV_CONFIG_OVERRIDE";
    std::string value = use_ours ? *ours : nosv.value_or("");
    if (!value.empty() && !pieces.empty()) value += ',';
    value += pieces;
    return {name, value, true};
}

} // namespace coexec::launch
