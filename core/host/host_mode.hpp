// Which program threads libcoexec-host.so hosts: COEXEC_HOST_THREADS, read
// once by its constructor (host_main.cpp) before the program runs.
#pragma once

namespace coexec::host {

enum class HostMode {
    none, // no program thread (unset, empty or "none")
    main, // the main thread
    all,  // the main thread, and every thread the program starts (what
          // `coexec run` sets unless the user did)
};

// The mode in effect: none until the main thread is hosted, whatever the
// variable says (a process whose main thread could not join hosts nothing).
HostMode host_mode();

// A thread the program started (hosted_threads.cpp) attached, or is about
// to detach: the main thread's exit leaves the runtime to the process's
// exit path while any is still attached.
void hosted_thread_started();
void hosted_thread_ended();

// Under all, whether every thread the program started so far is hosted:
// none failed to attach (program_thread_unhosted() was never called). False
// under main and none.
bool every_program_thread_hosted();
// A thread the program started runs unhosted (it could not attach).
void program_thread_unhosted();

} // namespace coexec::host
