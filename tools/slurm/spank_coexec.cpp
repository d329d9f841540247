// libcoexec-spank.so: the Slurm SPANK plugin behind `srun --coexec`.
//
// `--coexec[=job|step]` (srun, sbatch, salloc) runs every task of a step
// with the environment `coexec run` gives a program (tools/launch_env.hpp),
// on a segment named after the job (`job`, the default: all the job's steps
// on a node share one) or after the step (`step`), that manages the job's
// (or the step's) CPUs on the node. When a step ends (`step`) or the job
// ends (`job`, in the job epilog), its segments on the node are removed,
// also after a task was killed. docs/slurm.md is the guide.
//
// plugstack.conf arguments: `libdir=DIR` (where libcoexec.so and
// coexec/<adapter>/ are; default: two levels above this plugin, as built
// and installed).
#include "job_node.hpp"

#include "scheduler/topology.hpp"
#include "tools/launch_env.hpp"

#include <dlfcn.h>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

// What SPANK_PLUGIN(coexec, 1) declares, with C linkage and visible: in C++
// a namespace-scope const has internal linkage. Slurm loads only a plugin
// built against its own version.
extern "C" {
extern const char plugin_name[] = "coexec";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace {

namespace fs = std::filesystem;
using coexec::launch::EnvVar;

enum class Mode { Off, Job, Step };

// The state of this plugin in one Slurm process (srun, slurmstepd of one
// step, slurmd): set by the option's callback and the plugstack.conf
// arguments.
Mode mode = Mode::Off;
std::string libdir_argument;

int option_callback(int val, const char* optarg, int remote);

char kOptionName[] = "coexec";
char kOptionArg[] = "job|step";
char kOptionUsage[] =
    "Run every task on coexec: the job's steps on a node share its CPUs through one coexec "
    "segment (job, the default), or each step has a segment of its own (step).";
spank_option coexec_option{kOptionName, kOptionArg, kOptionUsage, 2, 0, option_callback};

int option_callback(int, const char* optarg, int) {
    std::string value = optarg ? optarg : "";
    // sbatch and salloc pass their options on to the job's sruns through the
    // environment, where an option given no value reads "(null)".
    if (value.empty() || value == "(null)" || value == "job") {
        mode = Mode::Job;
    } else if (value == "step") {
        mode = Mode::Step;
    } else {
        slurm_error("coexec: --coexec=%s: the value must be 'job' or 'step'", value.c_str());
        return -1;
    }
    return 0;
}

// Steps that run no task of the user's srun: the batch script, the extern
// and interactive steps, and the like (slurm.h numbers them above
// SLURM_MAX_NORMAL_STEP_ID).
bool special_step(uint32_t step_id) {
    return step_id > SLURM_MAX_NORMAL_STEP_ID;
}

// The directory of libcoexec.so: the `libdir=` argument, else two levels
// above this plugin (lib/coexec/slurm/libcoexec-spank.so, in the build tree
// and installed).
fs::path library_dir() {
    if (!libdir_argument.empty()) return libdir_argument;
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&option_callback), &info) == 0 || !info.dli_fname) return {};
    std::error_code ec;
    fs::path self = fs::canonical(info.dli_fname, ec);
    if (ec) return {};
    return self.parent_path().parent_path().parent_path();
}

// The task's environment, read through Slurm.
coexec::launch::GetEnv task_environment(spank_t sp) {
    return [sp](const std::string& name) -> std::optional<std::string> {
        std::vector<char> buf(4096);
        for (;;) {
            spank_err_t rc = spank_getenv(sp, name.c_str(), buf.data(), int(buf.size()));
            if (rc == ESPANK_SUCCESS) return std::string(buf.data());
            if (rc != ESPANK_NOSPACE || buf.size() >= (1u << 20)) return std::nullopt;
            buf.resize(buf.size() * 4);
        }
    };
}

bool set_env(spank_t sp, const EnvVar& v) {
    spank_err_t rc = spank_setenv(sp, v.name.c_str(), v.value.c_str(), v.overwrite ? 1 : 0);
    if (rc == ESPANK_SUCCESS || (!v.overwrite && rc == ESPANK_ENV_EXISTS)) return true;
    slurm_error("coexec: cannot set %s in the task's environment: %s", v.name.c_str(),
                spank_strerror(rc));
    return false;
}

// Removes the segments with this name on this node, and says so in slurmd's
// or slurmstepd's log.
void remove_segments(const std::string& name) {
    std::vector<std::string> errors;
    for (const std::string& path : coexec::slurm::remove_segments(name, errors))
        slurm_info("coexec: removed %s", path.c_str());
    for (const std::string& e : errors)
        slurm_error("coexec: %s", e.c_str());
}

} // namespace

extern "C" {

int slurm_spank_init(spank_t sp, int ac, char** av) {
    for (int i = 0; i < ac; ++i) {
        std::string arg = av[i];
        if (arg.rfind("libdir=", 0) == 0) {
            libdir_argument = arg.substr(7);
        } else {
            slurm_error("coexec: unknown plugstack.conf argument '%s' (known: libdir=DIR)",
                        arg.c_str());
            return -1;
        }
    }
    // Registered in every context, so that sbatch and salloc know it too
    // (the spank_options table is read by srun and slurmstepd only).
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE || ctx == S_CTX_ALLOCATOR) {
        if (spank_option_register(sp, &coexec_option) != ESPANK_SUCCESS) {
            slurm_error("coexec: cannot register the --coexec option");
            return -1;
        }
    }
    return 0;
}

// In each task, as its user, just before it execs the program: the loader
// variables, the program's threads hosted, and the segment's name and CPUs.
int slurm_spank_task_init(spank_t sp, int, char**) {
    if (mode == Mode::Off || spank_remote(sp) != 1) return 0;
    uint32_t job_id = 0, step_id = 0;
    if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS) {
        slurm_error("coexec: cannot read the job and step ids");
        return -1;
    }
    if (special_step(step_id)) return 0;

    fs::path lib = library_dir();
    std::error_code ec;
    if (lib.empty() || !fs::exists(lib / "libcoexec.so", ec)) {
        slurm_error("coexec: libcoexec.so not found in '%s' (give plugstack.conf the plugin "
                    "argument libdir=DIR)",
                    lib.c_str());
        return -1;
    }
    const coexec::launch::GetEnv get = task_environment(sp);
    std::vector<EnvVar> vars;
    std::string error;
    if (!coexec::launch::run_environment({}, lib, get, vars, error)) {
        slurm_error("coexec: %s", error.c_str());
        return -1;
    }

    // The segment: the job's or the step's, on the CPUs Slurm gave it here.
    char* cores = nullptr;
    spank_item_t item = mode == Mode::Step ? S_STEP_ALLOC_CORES : S_JOB_ALLOC_CORES;
    if (spank_get_item(sp, item, &cores) != ESPANK_SUCCESS || !cores) {
        slurm_error("coexec: cannot read the %s's allocated cores on this node",
                    mode == Mode::Step ? "step" : "job");
        return -1;
    }
    std::vector<int> cpus;
    if (!coexec::slurm::job_cpus(cores, cpus, error)) {
        slurm_error("coexec: %s", error.c_str());
        return -1;
    }
    std::string name = mode == Mode::Step ? coexec::slurm::segment_name(job_id, step_id)
                                          : coexec::slurm::segment_name(job_id);
    std::string pieces = "shared_memory.name=";
    pieces += name;
    pieces += ",topology.binding=";
    pieces += coexec::scheduler::format_cpu_list(cpus);
    vars.push_back(coexec::launch::append_config_override(pieces, get));

    for (const EnvVar& v : vars)
        if (!set_env(sp, v)) return -1;
    slurm_debug("coexec: task of step %u.%u on segment %s, CPUs %s", job_id, step_id, name.c_str(),
                coexec::scheduler::format_cpu_list(cpus).c_str());
    return 0;
}

// After each task has ended (killed or not): the registration file libomp
// leaves in /dev/shm when its process is killed.
int slurm_spank_task_exit(spank_t sp, int, char**) {
    if (mode == Mode::Off || spank_remote(sp) != 1) return 0;
    pid_t pid = 0;
    if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS) return 0;
    for (const std::string& path : coexec::slurm::remove_openmp_registration(pid))
        slurm_debug("coexec: removed %s", path.c_str());
    return 0;
}

// When a step with --coexec=step ends, after all its tasks: its segment.
int slurm_spank_exit(spank_t sp, int, char**) {
    if (mode != Mode::Step || spank_remote(sp) != 1) return 0;
    uint32_t job_id = 0, step_id = 0;
    if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS || special_step(step_id))
        return 0;
    remove_segments(coexec::slurm::segment_name(job_id, step_id));
    return 0;
}

// When the job ends on this node (slurmd runs it after killing every step,
// also after scancel): every segment of the job, its steps' too, whether or
// not a step asked for coexec (only coexec's own names are touched).
int slurm_spank_job_epilog(spank_t sp, int, char**) {
    uint32_t job_id = 0;
    if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS) return 0;
    remove_segments(coexec::slurm::segment_name(job_id));
    return 0;
}

} // extern "C"
