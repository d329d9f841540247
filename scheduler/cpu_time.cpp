#include "scheduler/cpu_time.hpp"

namespace coexec::scheduler {

using namespace coexec::shm;

namespace {
constexpr auto rlx = std::memory_order_relaxed;
} // namespace

void CpuTime::run_for(int32_t c, int32_t proc, uint64_t now) {
    if (s_.cpus[c].stint_proc == proc) return;
    stop(c, now);
    start(c, proc, now);
}

void CpuTime::start(int32_t c, int32_t proc, uint64_t now) {
    CpuSlot& cpu = s_.cpus[c];
    cpu.stint_proc = proc;
    cpu.stint_start_ns = now;
}

void CpuTime::relabel(int32_t c, LabelClass next, uint64_t now) {
    const CpuSlot& cpu = s_.cpus[c];
    const int32_t proc = cpu.stint_proc;
    if (proc == kNone || holder_class(cpu) == next) return;
    stop(c, now);
    start(c, proc, now);
}

void CpuTime::stop_if_of(int32_t c, int32_t proc, uint64_t now) {
    if (s_.cpus[c].stint_proc == proc) stop(c, now);
}

void CpuTime::stop(int32_t c, uint64_t now) {
    CpuSlot& cpu = s_.cpus[c];
    if (cpu.stint_proc == kNone) return;
    ProcSlot& p = s_.procs[cpu.stint_proc];
    const uint64_t d = now - cpu.stint_start_ns;
    p.cpu_time_ns.fetch_add(d, rlx);
    p.label_time_ns[int(holder_class(cpu))].fetch_add(d, rlx);
    cpu.stint_proc = kNone;
}

uint64_t CpuTime::total_ns(int32_t proc, uint64_t now) const {
    uint64_t total = s_.procs[proc].cpu_time_ns.load(rlx);
    for (int c = 0; c < s_.header.cpu_count && c < s_.header.max_cpus; ++c) {
        const CpuSlot& cpu = s_.cpus[c];
        if (cpu.stint_proc != proc || now <= cpu.stint_start_ns) continue;
        // Saturating: a stored time near the top of its range (a damaged
        // segment) gives the largest time, never one wrapped around to a
        // small value.
        const uint64_t open = now - cpu.stint_start_ns;
        total = open > UINT64_MAX - total ? UINT64_MAX : total + open;
    }
    return total;
}

LabelTimes CpuTime::by_label_ns(int32_t proc, uint64_t now) const {
    LabelTimes times{};
    for (int l = 0; l < kLabelClasses; ++l)
        times[l] = s_.procs[proc].label_time_ns[l].load(rlx);
    for (int c = 0; c < s_.header.cpu_count && c < s_.header.max_cpus; ++c) {
        const CpuSlot& cpu = s_.cpus[c];
        if (cpu.stint_proc != proc || now <= cpu.stint_start_ns) continue;
        // Saturating, as in total_ns().
        const uint64_t open = now - cpu.stint_start_ns;
        uint64_t& time = times[int(holder_class(cpu))];
        time = open > UINT64_MAX - time ? UINT64_MAX : time + open;
    }
    return times;
}

LabelClass CpuTime::holder_class(const CpuSlot& cpu) const {
    const int32_t t = cpu.owner_thread.load(rlx);
    if (t < 0 || t >= kMaxThreads) return LabelClass::Other;
    // Relaxed: set_label() stores it without the lock; a class one label
    // change late only moves that stint to the previous label.
    const auto c = s_.threads[t].label_class.load(rlx);
    return uint32_t(c) < uint32_t(kLabelClasses) ? c : LabelClass::Other;
}

} // namespace coexec::scheduler
