// Whether the calling thread is a TBB worker that holds a coexec CPU; the
// libc hooks (libc_hooks.cpp) act only on such threads.
#pragma once

namespace coexec::tbb_rml {

// True between a worker's successful nosv_attach() and its nosv_detach().
bool on_coexec_cpu() noexcept;

// Set by the worker right after attaching and cleared right before detaching.
void set_on_coexec_cpu(bool value) noexcept;

} // namespace coexec::tbb_rml
