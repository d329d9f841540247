// What the Slurm plugin (spank_coexec.cpp) works out for a job on one node,
// apart from Slurm's API: the segment's name, its CPUs, and the files in
// /dev/shm that a job's processes may leave behind.
#pragma once

#include <cstdint>
#include <string>
#include <sys/types.h>
#include <vector>

namespace coexec::slurm {

// The segment name of a job ("slurm.<jobid>") or of one of its steps
// ("slurm.<jobid>.<stepid>"): the `shared_memory.name` the plugin sets.
std::string segment_name(uint32_t job_id);
std::string segment_name(uint32_t job_id, uint32_t step_id);

// The OS CPU ids of Slurm's abstract core ids `cores` (S_JOB_ALLOC_CORES or
// S_STEP_ALLOC_CORES, a list such as "0-3,8") on this node. Slurm numbers a
// node's cores 0..N-1 socket by socket, in hwloc's logical order; each core
// brings every hardware thread (PU) of it. The whole machine is counted,
// also the cores outside this process's cgroup, so that the ids agree with
// Slurm's. The result is then bounded by the process's cgroup cpuset (a
// task/cgroup step's CPUs), when it has one. Returns false with `error` set
// when the list is malformed, names a core this node does not have, or
// leaves no CPU.
bool job_cpus(const std::string& cores, std::vector<int>& cpus, std::string& error);

// Removes the coexec segments of a job (or of one step) on this node:
// /dev/shm/coexec.<name>.<suffix> for `name` a segment_name() and any
// suffix (u<uid>, g<gid>, public), and, for the job, every one of its
// steps' segments too. Returns the paths it removed; `errors` gets one line
// per file it could not remove. `dir` is /dev/shm but for tests.
std::vector<std::string> remove_segments(const std::string& name, std::vector<std::string>& errors,
                                         const std::string& dir = "/dev/shm");

// Removes the registration file LLVM's libomp keeps in /dev/shm for
// process `pid` (__KMP_REGISTERED_LIB_<pid>_<uid>), which stays behind
// when the process is killed. Only when `pid` is gone. Returns the paths
// removed.
std::vector<std::string> remove_openmp_registration(pid_t pid, const std::string& dir = "/dev/shm");

} // namespace coexec::slurm
