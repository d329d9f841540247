#include "membership.hpp"

#include "support/env.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace coexec::pocl {

PoclMembership& PoclMembership::instance() {
    static PoclMembership membership;
    return membership;
}

PoclMembership::PoclMembership() : verbose_(adapter::env_flag("COEXEC_VERBOSE")) {}

PoclMembership::~PoclMembership() {
    // Workers still parked in PoCL (it does not join them at exit) belong to a
    // coexec instance that process exit reclaims; shutting down under them
    // would pull the task state from threads that are still alive.
    if (active_ && live_workers_.load(std::memory_order_relaxed) == 0) nosv_shutdown();
}

bool PoclMembership::start() {
    // call_once publishes active_ to every caller that returns from it.
    std::call_once(once_, [this] { start_once(); });
    return active_;
}

void PoclMembership::start_once() {
    if (adapter::env_flag("COEXEC_DISABLE")) {
        std::fprintf(stderr, "coexec-pocl: COEXEC_DISABLE is set, PoCL keeps its own threads\n");
        return;
    }
    int rc = coexec_init_quiet();
    if (rc != NOSV_SUCCESS) {
        std::fprintf(stderr,
                     "coexec-pocl: coexec could not start (%s), PoCL keeps its own threads\n",
                     coexec_last_error());
        return;
    }
    active_ = true;
    if (verbose_) std::fprintf(stderr, "coexec-pocl: PoCL's pthread workers run on coexec\n");
}

} // namespace coexec::pocl
