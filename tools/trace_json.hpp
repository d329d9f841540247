// A recording as Chrome/Perfetto trace-event JSON (docs/trace.md).
#pragma once

#include "trace_recorder.hpp"

#include <nlohmann/json.hpp>

namespace coexec::cli {

// The pseudo-process whose threads are the CPU tracks, and the tid of CPU
// slot c's track (kCpuTrackTid + c). Far above any kernel pid or tid.
inline constexpr int64_t kCpuTrackPid = 1'000'000'000;
inline constexpr int64_t kCpuTrackTid = 1'000'000'000;

// The trace: one track per CPU (slices: who held it, "process · label ·
// tid", with the state when not running), a "CPUs held" counter per
// process, instant events for preemptions, joins, leaves, deaths and
// reaping, process and thread names as metadata, and under "otherData"
// the recording's facts, the count of lost events among them. Timestamps
// are microseconds since the recording started.
nlohmann::json trace_to_json(const Recording& recording);

} // namespace coexec::cli
