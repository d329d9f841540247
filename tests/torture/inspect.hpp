// Looking inside a process that is stuck: every thread's stack and the state
// of its coexec runtime (thread contexts, ready queue, given tasks), through
// gdb when it is installed.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace coexec::torture {

// gdb's report on process `pid` (which must be stopped or stuck, not
// exiting): stacks of all threads, then the runtime's thread contexts and
// ready queue, then `*(nosv_task*)ADDR` for each address in `tasks`. Runs
// gdb for at most a minute; says so when gdb is missing. `pid` may be the
// calling process itself.
std::string inspect_process(pid_t pid, const std::vector<std::string>& tasks);

// The task addresses in a workload's report ("task 3 (0x7f...)").
std::vector<std::string> task_addresses(const std::string& text);

} // namespace coexec::torture
