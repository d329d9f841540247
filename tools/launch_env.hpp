// The environment a program gets to run on coexec: the adapters on the
// loader path, the program's threads hosted, and coexec's settings appended
// to the configuration override. `coexec run`, `coexec record` and the Slurm plugin
// (tools/slurm/) all build it here, each from an environment of its own (the
// CLI's, or a Slurm task's).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace coexec::launch {

// Which adapters to load; none asked for means every adapter that is built.
struct Adapters {
    bool openmp = false;
    bool tbb = false;
    bool pocl = false;
};

// Reads a variable of the environment being changed; nullopt when unset.
using GetEnv = std::function<std::optional<std::string>(const std::string& name)>;

// A getter of this process's own environment (std::getenv).
GetEnv own_environment();

// One variable to set. `overwrite` false: only when it is not set already.
struct EnvVar {
    std::string name;
    std::string value;
    bool overwrite = true;
};

// The variables that make a program started with environment `get` run on
// the adapters found under `lib` (the directory of libcoexec.so, with
// coexec/<adapter>/ in it): LD_LIBRARY_PATH and LD_PRELOAD, each with
// coexec's entries in front of what `get` has, COEXEC_HOST_THREADS=all
// unless it is set, and then OPENBLAS_THREAD_TIMEOUT=23 unless it is set
// (the hosted OpenBLAS pool spins for 3 ms after a call, not 0.1 s).
// Returns false with `error` set when an adapter asked for is not built.
bool run_environment(const Adapters& adapters, const std::filesystem::path& lib, const GetEnv& get,
                     std::vector<EnvVar>& out, std::string& error);

// `pieces` ("key=value,key=value") appended to the configuration override
// that the runtime reads (config/config.cpp): NOSV_CONFIG_OVERRIDE when it
// is set and not empty, else COEXEC_CONFIG_OVERRIDE when it is, else a new
// NOSV_CONFIG_OVERRIDE. Appended, the pieces win over earlier settings of
// the same keys.
EnvVar append_config_override(const std::string& pieces, const GetEnv& get);

} // namespace coexec::launch
