// libFuzzer target: the `coexec top/ps/info` reader (tools/snapshot.cpp,
// views.cpp, table.cpp).
//
// Input: see segment_edits.hpp. With the 'E' tag, the edits (any field of
// any table, menu below) are applied together to a sound segment; any
// other first byte tiles the input over the whole segment. Either way the
// snapshot is taken and every view, text and JSON, rendered: none may read
// out of bounds, hang or throw, and no value shown may lie outside its
// field's range (check_snapshot() below: CPU and NUMA indices, states,
// pids, tids, counts, shares). Values that only a header the CLI accepts
// bounds (the NUMA count, the unheld CPUs) are checked only for such a
// header (tools/segment_access.cpp, shm/segment.cpp).
#include "fuzz_support.hpp"
#include "segment_edits.hpp"
#include "tools/snapshot.hpp"
#include "tools/views.hpp"

#include <cstdlib>
#include <iterator>
#include <sstream>
#include <string_view>

namespace {

using namespace coexec;
using namespace coexec::fuzz;

void violated(const char* id, const std::string& detail) {
    fail(std::string("the reader shows ") + id + " out of range: " + detail);
}

#define EXPECT_RANGE(ok, id, detail)                                                               \
    do {                                                                                           \
        if (!(ok)) violated(id, detail);                                                           \
    } while (0)

std::string str(int64_t v) {
    return std::to_string(v);
}

// What the CLI checks before it reads a segment (open_existing()).
bool accepted_by_cli(const shm::Header& h) {
    return h.magic.load() == shm::kMagic && h.abi_version == shm::kAbiVersion && h.max_cpus >= 1 &&
           h.max_cpus <= shm::kMaxCpus && h.total_size == shm::segment_layout(h.max_cpus).total &&
           h.cpu_count >= 0 && h.cpu_count <= h.max_cpus && h.numa_count >= 0 &&
           h.numa_count <= shm::kMaxNuma && (h.cpu_count == 0 || h.numa_count > 0) &&
           h.max_procs == shm::kMaxProcs && h.max_threads == shm::kMaxThreads;
}

bool one_of(const std::string& value, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (value == n) return true;
    return false;
}

// "12.5%" as 12.5; "-" (nothing to divide) as 0.
double percent_value(const std::string& cell) {
    if (cell == "-") return 0;
    if (cell.size() < 2 || cell.back() != '%') fail("a share cell is not a percentage: " + cell);
    return std::stod(cell.substr(0, cell.size() - 1));
}

// The ranges of everything the views print, on the snapshot they print.
void check_snapshot(const cli::Snapshot& snap, const shm::Header& h) {
    const bool accepted = accepted_by_cli(h);
    const int rows = int(snap.cpus.size());
    EXPECT_RANGE(rows <= shm::kMaxCpus && (!accepted || rows == h.cpu_count), "cpu.count",
                 str(rows) + " CPU rows, cpu_count " + str(h.cpu_count));
    for (int i = 0; i < rows; ++i) {
        const cli::CpuRow& c = snap.cpus[size_t(i)];
        const std::string at = "CPU row " + str(i);
        EXPECT_RANGE(c.cpu == i, "cpu.index", at + " is CPU " + str(c.cpu));
        EXPECT_RANGE(one_of(c.state, {"free", "running", "idle", "sleeping", "lent", "unknown"}),
                     "cpu.state", at + " state '" + c.state + "'");
        EXPECT_RANGE(!accepted || (c.numa >= 0 && c.numa < h.numa_count), "cpu.numa",
                     at + " NUMA " + str(c.numa) + ", numa_count " + str(h.numa_count));
        EXPECT_RANGE(c.system_cpu >= 0, "cpu.system_cpu", at + " SYS " + str(c.system_cpu));
        EXPECT_RANGE(c.core >= 0, "cpu.core", at + " CORE " + str(c.core));
        if (!c.held) continue;
        EXPECT_RANGE(one_of(c.state, {"running", "idle", "sleeping", "lent"}), "cpu.holder",
                     at + " shows a holder in state '" + c.state + "'");
        EXPECT_RANGE(c.proc >= 0 && c.proc < shm::kMaxProcs, "cpu.owner_proc",
                     at + " holder process slot " + str(c.proc));
        EXPECT_RANGE(c.pid > 0, "cpu.pid", at + " holder PID " + str(c.pid));
        EXPECT_RANGE(c.tid > 0, "cpu.tid", at + " holder TID " + str(c.tid));
    }
    int previous_slot = -1;
    for (const cli::ProcRow& p : snap.procs) {
        const std::string at = "process slot " + str(p.slot);
        EXPECT_RANGE(p.slot > previous_slot && p.slot < shm::kMaxProcs, "proc.slot",
                     at + " after " + str(previous_slot));
        previous_slot = p.slot;
        EXPECT_RANGE(p.pid > 0, "proc.pid", at + " PID " + str(p.pid));
        EXPECT_RANGE(p.cpus >= 0 && p.cpus <= rows, "proc.cpus", at + " CPUS " + str(p.cpus));
        EXPECT_RANGE(p.ready >= 0, "proc.ready", at + " READY " + str(p.ready));
        EXPECT_RANGE(p.threads >= 0 && p.threads <= shm::kMaxThreads, "proc.threads",
                     at + " THREADS " + str(p.threads));
        // The runtime table shows each class's time in percent of
        // cpu_time_ns ("-" when that is 0).
        for (int l = 0; l < shm::kLabelClasses; ++l)
            EXPECT_RANGE(p.cpu_time_ns == 0 || p.label_time_ns[size_t(l)] <= p.cpu_time_ns,
                         "proc.runtime_share",
                         at + " label class " + str(l) + " " +
                             std::to_string(p.label_time_ns[size_t(l)]) + " ns of " +
                             std::to_string(p.cpu_time_ns));
    }
    const cli::SegmentInfo& s = snap.segment;
    EXPECT_RANGE(!accepted || (s.unheld_cpus >= 0 && s.unheld_cpus <= s.cpu_count),
                 "segment.unheld_cpus",
                 "unheld CPUs " + str(s.unheld_cpus) + " of " + str(s.cpu_count));
    EXPECT_RANGE(s.procs_used == int(snap.procs.size()) && s.threads_used >= 0 &&
                     s.threads_used <= s.threads_max,
                 "segment.usage",
                 "processes " + str(s.procs_used) + ", threads " + str(s.threads_used));
    EXPECT_RANGE(s.quota_cpus >= 0, "segment.quota_cpus", "quota " + str(s.quota_cpus));
    EXPECT_RANGE(one_of(s.governor, {"hybrid", "idle", "busy", "unknown"}), "segment.governor",
                 "governor '" + s.governor + "'");
    EXPECT_RANGE(one_of(s.isolation, {"process", "user", "group", "public", "?"}),
                 "segment.isolation", "isolation '" + s.isolation + "'");
    EXPECT_RANGE(s.trace_recorders <= uint32_t(shm::kMaxRecorders), "segment.trace_recorders",
                 std::to_string(s.trace_recorders) + " recorders");
}

// The SHARE column of `coexec ps --share`: each process's share of the CPU
// time of all, at most 100%. HANDOFFS and THREADS follow it, one word each.
void check_share_column(const cli::Snapshot& snap, const std::vector<std::string>& lines) {
    if (lines.size() != snap.procs.size() + 1) fail("the process table has a line per process");
    for (size_t i = 1; i < lines.size(); ++i) {
        std::istringstream in(lines[i]);
        std::vector<std::string> words{std::istream_iterator<std::string>(in), {}};
        if (words.size() < 6) fail("a process table line is cut short: " + lines[i]);
        const std::string& share = words[words.size() - 3];
        EXPECT_RANGE(percent_value(share) <= 100.0, "proc.share",
                     "process slot " + str(snap.procs[i - 1].slot) + " SHARE " + share);
    }
}

const Menu kMenu = [] {
    Menu menu;
    for (int f = 0; f <= int(Field::ThreadLabelClass); ++f)
        menu[size_t(table_of(Field(f)))].push_back(Field(f));
    return menu;
}();

int32_t slots(Field f) {
    const shm::Header& h = sound_segment().header;
    switch (table_of(f)) {
    case Table::Header:
        return f == Field::AliveEntry ? h.alive_count + 1 : 1;
    case Table::Cpu:
        return h.cpu_count + 1;
    case Table::Proc:
        return h.procs_used + 2;
    case Table::Thread:
        return h.threads_used + 2;
    }
    return 1;
}

void set_value(Edit& e) {
    switch (e.mode) {
    case 0:
        e.value = read_field(sound_segment(), e.field, e.slot);
        break;
    case 1:
        e.value = uint64_t(int64_t(int32_t(e.raw)));
        break;
    case 2:
        e.value = uint64_t(int64_t(int8_t(uint8_t(e.raw))));
        break;
    default:
        e.value = uint64_t(e.raw) << 32 | e.raw;
        break;
    }
}

void read_segment(shm::Segment& segment) {
    // One snapshot, also used as the "previous" one of `top`'s %CPU column
    // (a second of the same bytes would only double the run time).
    cli::Snapshot second = cli::take_snapshot(segment, "/coexec.fuzz.u0");
    const cli::Snapshot& first = second;
    check_snapshot(second, segment.header);
    size_t out = 0; // keeps the rendering from being optimised away
    for (const auto& l : cli::cpu_table(second))
        out += l.size();
    for (const auto& l : cli::process_table(second, &first, false))
        out += l.size();
    const std::vector<std::string> with_share = cli::process_table(second, nullptr, true);
    check_share_column(second, with_share);
    for (const auto& l : with_share)
        out += l.size();
    for (const auto& l : cli::runtime_table(second))
        out += l.size();
    for (const auto& l : cli::info_lines(second, "all"))
        out += l.size();
    out += cli::top_title(second).size();
    // dump() throws on strings that are not UTF-8: the reader must have
    // made every name printable.
    out += cli::top_json(second).dump(2).size();
    out += cli::processes_json(second).dump().size();
    out += cli::cpus_json(second).dump().size();
    out += cli::info_json(second, "all").dump().size();
    if (out == 0) fail("nothing rendered");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 0 && data[0] == kEditsTag) {
        shm::Segment& s = sound_segment();
        Patcher patch(s);
        for (const Edit& e : decode_edits(data, size, kMenu, slots, set_value))
            patch.apply(e);
        read_segment(s);
        return 0;
    }
    read_segment(segment_from(data, size));
    return 0;
}
