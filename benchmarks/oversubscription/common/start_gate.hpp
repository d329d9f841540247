// The start gate: concurrent processes of one scenario begin their timed work together.
#pragma once

namespace bench {

// When run.py starts several processes at once, it sets BENCH_START_GATE (a directory) and
// BENCH_START_GATE_PROCS (how many processes take part). Each process calls this just before
// its steady-state clock starts: it enters its pid in the directory and returns once all
// have entered, so one process's start-up (interpreter, imports, OpenCL set-up) is never
// counted in another's steady time. Without the variables it returns at once. After
// five minutes without the others, or with unusable variables, it says so on stderr and
// returns.
void await_start_gate();

} // namespace bench
