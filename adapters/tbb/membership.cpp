#include "membership.h"

#include "support/env.hpp"

#include <coexec/ext.h>
#include <nosv.h>
#include <nosv/error.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace coexec::tbb_rml {

namespace {

// Serialises start() and stop(); they run once or twice per process.
std::mutex& start_stop_mutex() {
    static std::mutex mutex;
    return mutex;
}

} // namespace

void log_line(const char* format, ...) {
    // Build the whole line first so that concurrent messages do not interleave.
    char text[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof text, format, args);
    va_end(args);
    std::fprintf(stderr, "coexec tbb: %s\n", text);
}

TbbMembership& TbbMembership::instance() {
    // Never destroyed: worker threads may still use it while exit() runs.
    static TbbMembership* membership = new TbbMembership();
    return *membership;
}

TbbMembership::TbbMembership() : verbose_(adapter::env_flag("COEXEC_VERBOSE")) {}

bool TbbMembership::start() {
    std::lock_guard lock(start_stop_mutex());
    if (active_.load(std::memory_order_relaxed)) return true;
    if (failed_.load(std::memory_order_relaxed)) return false;
    if (adapter::env_flag("COEXEC_DISABLE")) {
        log_line("COEXEC_DISABLE is set; TBB uses its own worker threads");
        failed_.store(true, std::memory_order_relaxed);
        return false;
    }
    const int rc = coexec_init_quiet();
    if (rc != NOSV_SUCCESS) {
        log_line("cannot start coexec (%s); TBB uses its own worker threads", coexec_last_error());
        failed_.store(true, std::memory_order_relaxed);
        return false;
    }
    active_.store(true, std::memory_order_release);
    if (verbose_) log_line("coexec started; %d CPUs managed", nosv_get_num_cpus());
    return true;
}

void TbbMembership::stop() {
    std::lock_guard lock(start_stop_mutex());
    if (!active_.load(std::memory_order_relaxed)) return;
    if (live_servers_.load(std::memory_order_acquire) > 0) {
        if (verbose_) log_line("TBB closed while its workers still run; staying joined");
        return;
    }
    if (attached_masters_.load(std::memory_order_acquire) > 0) {
        if (verbose_) log_line("TBB closed while other threads it hosted live; staying joined");
        return;
    }
    active_.store(false, std::memory_order_release);
    nosv_shutdown();
    if (verbose_) log_line("coexec stopped");
}

} // namespace coexec::tbb_rml
