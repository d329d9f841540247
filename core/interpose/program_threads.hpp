// Program threads that coexec hosts, libcoexec's side. libcoexec-host.so
// (core/host/), which `coexec run` preloads, attaches the program's main
// thread when it loads (COEXEC_HOST_THREADS=main) and wraps the C library's
// blocking calls, where that thread gives its CPU away; it reaches this side
// through host_calls.h. Here: which thread is hosted, which code the
// wrappers leave alone, and what the preemption handler does for such a
// thread (Preemption).
#pragma once

namespace coexec::core {

// Called by the calling program thread's signal handler once it lent its
// CPU because the monitor found it asleep on it (Preemption). The thread is
// outside coexec from then on, as if a blocking call had lent the CPU: the
// next blocking call it makes through a wrapper ends that, and takes a CPU
// back when it returns (coexec_host_take_lent_asleep()).
void program_thread_lent_asleep();

} // namespace coexec::core
