// Locking contracts the compiler checks: Clang's thread-safety attributes
// (-Wthread-safety), under names of our own. Other compilers see nothing.
//
// A type marked COEXEC_CAPABILITY stands for a lock; a function marked
// COEXEC_REQUIRES(x) may be called only while x is held, and Clang rejects a
// call made without it (as an error in `make test`'s clang builds). The
// segment lock is the one that matters: scheduler::segment_lock stands for
// it, and scheduler::SchedulerLock holds it for a scope
// (scheduler/scheduler_lock.hpp).
//
// Clang's manual: https://clang.llvm.org/docs/ThreadSafetyAnalysis.html
#pragma once

#if defined(__clang__)
#define COEXEC_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define COEXEC_THREAD_ANNOTATION(x)
#endif

// The type is a lock ("capability"); `name` appears in the diagnostics.
#define COEXEC_CAPABILITY(name) COEXEC_THREAD_ANNOTATION(capability(name))
// The type holds a lock for its lifetime (an RAII guard).
#define COEXEC_SCOPED_CAPABILITY COEXEC_THREAD_ANNOTATION(scoped_lockable)
// The caller must hold the lock(s) named.
#define COEXEC_REQUIRES(...) COEXEC_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// The function (a guard's constructor) takes the lock(s) and returns holding them.
#define COEXEC_ACQUIRE(...) COEXEC_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
// The function (a guard's destructor) lets go of the lock(s).
#define COEXEC_RELEASE(...) COEXEC_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// The function is left out of the analysis. Every use says why it is sound.
#define COEXEC_NO_THREAD_SAFETY_ANALYSIS COEXEC_THREAD_ANNOTATION(no_thread_safety_analysis)
