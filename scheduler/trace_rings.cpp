#include "scheduler/trace_rings.hpp"

#include "shm/clock.hpp"
#include "shm/trace_ring.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>

namespace coexec::scheduler {

using namespace coexec::shm;

namespace {
constexpr auto rlx = std::memory_order_relaxed;

// Copies a fixed-size text field into the record's label: a fixed-size
// copy, never a string scan, on the hot path. A reader may see a label torn
// by a concurrent set_label(), as `coexec top` may.
template <size_t N>
void copy_label(TraceEvent& e, const char (&text)[N]) {
    static_assert(N >= kTraceLabelSize);
    std::memcpy(e.label.data(), text, kTraceLabelSize);
}
} // namespace

bool TraceRings::add_recorder(pid_t pid) {
    for (auto& slot : s_.header.recorder_pids) {
        if (slot.load(rlx) != 0) continue;
        slot.store(pid, rlx);
        count_recorders();
        return true;
    }
    return false;
}

void TraceRings::remove_recorder(pid_t pid) {
    for (auto& slot : s_.header.recorder_pids)
        if (pid != 0 && slot.load(rlx) == pid) {
            slot.store(0, rlx);
            break;
        }
    count_recorders();
}

void TraceRings::reap_recorders() {
    for (auto& slot : s_.header.recorder_pids) {
        const int32_t pid = slot.load(rlx);
        // kill(pid, 0): ESRCH only when no such process exists (a reused
        // pid keeps recording on, at worst, until that process exits).
        if (pid != 0 && ::kill(pid, 0) != 0 && errno == ESRCH) slot.store(0, rlx);
    }
    count_recorders();
}

void TraceRings::count_recorders() {
    // Derived from the slots, under the lock: a recorder that died halfway
    // through adding or removing itself leaves no count behind.
    uint32_t n = 0;
    for (const auto& slot : s_.header.recorder_pids)
        n += slot.load(rlx) != 0;
    // Relaxed: see cpu_event(); the lock orders it with the locked changes.
    s_.header.trace_recorders.store(n, rlx);
}

void TraceRings::append_cpu_event(TraceKind kind, int32_t cpu, int32_t thread, uint64_t now) {
    if (cpu < 0 || cpu >= s_.header.max_cpus) return;
    TraceEvent e;
    e.time_ns = now != 0 ? now : now_ns();
    e.kind = kind;
    e.cpu = cpu;
    if (thread >= 0 && thread < kMaxThreads) {
        const ThreadSlot& th = s_.threads[thread];
        e.thread = thread;
        e.tid = th.tid.load(rlx);
        e.proc = th.proc;
        if (th.proc >= 0 && th.proc < kMaxProcs) e.pid = s_.procs[th.proc].pid;
        copy_label(e, th.label);
    }
    trace_append(s_.traces[cpu], e);
}

void TraceRings::append_label_event(int32_t thread) {
    // Only while recording, and labels change only when a thread starts a
    // task of another type: a scan of the CPUs is cheap enough here.
    for (int32_t c = 0; c < s_.header.cpu_count && c < s_.header.max_cpus; ++c) {
        const CpuSlot& cpu = s_.cpus[c];
        if (cpu.owner_thread.load(rlx) == thread && cpu.state.load(rlx) == CpuState::Running) {
            append_cpu_event(TraceKind::Label, c, thread, 0);
            return;
        }
    }
}

void TraceRings::append_process_event(TraceKind kind, int32_t proc, uint64_t now, uint64_t detail) {
    if (proc < 0 || proc >= kMaxProcs) return;
    const ProcSlot& p = s_.procs[proc];
    TraceEvent e;
    e.time_ns = now;
    e.kind = kind;
    e.proc = proc;
    e.pid = p.pid;
    e.detail = detail;
    static_assert(kNameSize <= kTraceLabelSize);
    std::memcpy(e.label.data(), p.name, kNameSize);
    trace_append(s_.traces[process_trace_ring(s_.header)], e);
}

} // namespace coexec::scheduler
