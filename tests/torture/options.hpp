// The torture harness's settings (see `coexec-torture --help`).
#pragma once

#include <cstdint>
#include <string>

namespace coexec::torture {

struct Options {
    int procs = 4;             // members alive at once
    int threads = 3;           // driver threads per member
    double seconds = 30;       // how long members are started and disrupted
    uint64_t seed = 0;         // 0: from the clock (printed, to repeat a run)
    double kill_rate = 10;     // disruptions (kill, stop, lock snipe) per second
    uint32_t stop_max_ms = 50; // longest SIGSTOP before the SIGCONT
    // A CPU still Running for a member this long after it died, counting
    // only the time during which a live member had work for that CPU and no
    // member was stopped by the killer, is lost (docs/design.md, invariant 2).
    uint32_t lost_ms = 100;
    uint32_t check_min_ms = 10; // the checker runs every min..max ms
    uint32_t check_max_ms = 50;
    uint32_t life_min_ms = 500; // a member's lifetime: min..max ms
    uint32_t life_max_ms = 4000;
    // A never-killed member must have exited this long after its lifetime
    // (plus the time it was stopped) ended.
    uint32_t finish_ms = 30000;
    bool verbose = false; // print every disruption
    // Bursts beside the members: every burst_every_ms, `burst` processes
    // forked with no barrier join the members' instance, run one task each
    // and leave, their main threads waiting in mixed styles, each with
    // `burst_busy` unmanaged busy threads. burst_program is
    // coexec-bench-many-procs; 0 or no program: no bursts.
    int burst = 0;
    uint32_t burst_every_ms = 5000;
    int burst_busy = 1;
    std::string burst_program;
};

} // namespace coexec::torture
