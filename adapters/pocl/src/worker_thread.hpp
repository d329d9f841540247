// PoCL pthread-driver workers re-hosted as coexec threads.
#pragma once

#include <pthread.h>

namespace coexec::pocl {

// Creates a thread like pthread_create, but the new thread attaches to coexec
// (label "pocl") before running `start(arg)` and detaches when it ends, also
// through pthread_exit. If attaching fails, the thread runs as a plain one.
int create_worker(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg);

} // namespace coexec::pocl
