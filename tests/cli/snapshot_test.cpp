// The reader behind `coexec top/ps/info` on segments whose bytes it cannot
// trust: it must stay in bounds and render every view. (The CLI refuses
// such headers before reading, see CliTest.OutOfRangeCountsAreRefused; the
// snapshot does not rely on that.) Regressions found by tests/fuzz.
#include "shm/liveness.hpp"
#include "shm/segment.hpp"
#include "tools/snapshot.hpp"
#include "tools/views.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace coexec;

namespace {

// A zeroed segment on the heap (2.4 MiB: too big for the stack).
// A zeroed segment on the heap with room for 8 CPU slots (so ASan sees a
// read past them).
struct FreeSegment {
    void operator()(shm::Segment* s) const { std::free(s); }
};
std::unique_ptr<shm::Segment, FreeSegment> zeroed_segment() {
    constexpr size_t size = shm::segment_layout(8).total;
    std::unique_ptr<shm::Segment, FreeSegment> s{
        static_cast<shm::Segment*>(std::aligned_alloc(64, size))};
    std::memset(static_cast<void*>(s.get()), 0, size);
    shm::lay_out(*s, 8);
    return s;
}

// Renders every view, as top, ps and info do, and returns the text size.
size_t render_all(const cli::Snapshot& snap) {
    size_t n = cli::top_title(snap).size();
    for (const auto& lines : {cli::cpu_table(snap), cli::process_table(snap, &snap, false),
                              cli::process_table(snap, nullptr, true), cli::runtime_table(snap),
                              cli::info_lines(snap, "all")})
        for (const auto& l : lines)
            n += l.size();
    n += cli::top_json(snap).dump().size() + cli::info_json(snap, "all").dump().size();
    return n;
}

// The words of a table line (no cell below is empty or has a blank).
std::vector<std::string> words(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;)
        out.push_back(w);
    return out;
}

// Makes process slot `p` Alive with a pid and a name. With the pid of a
// live process (this test's own), the views show it alive: no "(dead)".
void register_proc(shm::Segment& s, int p, int32_t pid, const char* name) {
    s.procs[p].state.store(shm::ProcState::Alive);
    s.procs[p].pid = pid;
    s.procs[p].start_time = pid > 0 ? shm::process_start_time(pid) : 0;
    std::strncpy(s.procs[p].name, name, sizeof s.procs[p].name - 1);
}

} // namespace

// Found by the segment_reader fuzzer: a CPU count beyond the table indexed
// past CpuSlot[256] (in the snapshot and in CpuTime::total_ns).
TEST(Snapshot, OutOfRangeCpuCountGivesNoCpuRows) {
    auto s = zeroed_segment();
    register_proc(*s, 3, 4242, "p3");
    s->procs[3].cpu_time_ns.store(42);
    for (int32_t count : {shm::kMaxCpus + 1, 1000, -1, INT32_MIN}) {
        s->header.cpu_count = count;
        cli::Snapshot snap = cli::take_snapshot(*s, "/coexec.t");
        EXPECT_TRUE(snap.cpus.empty()) << count;
        ASSERT_EQ(snap.procs.size(), 1u);
        EXPECT_EQ(snap.procs[0].cpu_time_ns, 42u); // closed stints only
        EXPECT_GT(render_all(snap), 0u);
    }
}

// Open stints count under their holder's label class; a holder out of range
// or a class this version does not know counts as other.
TEST(Snapshot, LabelTimesAddOpenStintsUnderTheHoldersClass) {
    auto s = zeroed_segment();
    s->header.cpu_count = 3;
    register_proc(*s, 2, 4242, "p2");
    s->procs[2].cpu_time_ns.store(100);
    s->procs[2].label_time_ns[int(shm::LabelClass::Tbb)].store(60);
    s->procs[2].label_time_ns[int(shm::LabelClass::Other)].store(40);
    s->threads[5].label_class.store(shm::LabelClass::Pocl);
    s->threads[6].label_class.store(shm::LabelClass(77));
    const int32_t holders[3] = {5, 6, shm::kMaxThreads};
    for (int c = 0; c < 3; ++c) {
        s->cpus[c].stint_proc = 2;
        s->cpus[c].stint_start_ns = 1; // open since (nearly) boot
        s->cpus[c].owner_thread.store(holders[c]);
    }
    cli::Snapshot snap = cli::take_snapshot(*s, "/coexec.t");
    ASSERT_EQ(snap.procs.size(), 1u);
    const auto& times = snap.procs[0].label_time_ns;
    const uint64_t open = times[int(shm::LabelClass::Pocl)];
    EXPECT_GT(open, 0u);
    EXPECT_EQ(times[int(shm::LabelClass::OpenMP)], 0u);
    EXPECT_EQ(times[int(shm::LabelClass::Tbb)], 60u);
    // CPUs 1 and 2: the same open time each (one clock reading), as other.
    EXPECT_EQ(times[int(shm::LabelClass::Other)], 40 + 2 * open);
    EXPECT_EQ(snap.procs[0].cpu_time_ns, 100 + 3 * open);
    EXPECT_GT(render_all(snap), 0u);
}

TEST(Snapshot, BadOwnersAndUnterminatedNamesStayInBounds) {
    auto s = zeroed_segment();
    s->header.cpu_count = 3;
    s->header.config.governor_policy = 77;
    s->header.config.isolation = shm::Isolation(9);
    const int32_t owners[3][2] = {{shm::kMaxProcs, 0}, {0, shm::kMaxThreads}, {-7, -7}};
    for (int c = 0; c < 3; ++c) {
        s->cpus[c].state.store(shm::CpuState::Running);
        s->cpus[c].owner_proc.store(owners[c][0]);
        s->cpus[c].owner_thread.store(owners[c][1]);
    }
    register_proc(*s, 0, 4242, "");
    std::memset(s->procs[0].name, '\x1b', sizeof s->procs[0].name); // no NUL, escapes
    std::memset(s->threads[0].label, 'x', sizeof s->threads[0].label);
    cli::Snapshot snap = cli::take_snapshot(*s, "/coexec.t");
    ASSERT_EQ(snap.cpus.size(), 3u);
    for (const auto& c : snap.cpus)
        EXPECT_FALSE(c.held) << "an owner index out of range is no owner";
    ASSERT_EQ(snap.procs.size(), 1u);
    EXPECT_EQ(snap.procs[0].name, std::string(shm::kNameSize, '?'));
    EXPECT_EQ(snap.segment.governor, "unknown");
    EXPECT_GT(render_all(snap), 0u);
}

TEST(Snapshot, CorruptOriginsGiveValidJsonAndNoQuota) {
    auto s = zeroed_segment();
    s->header.cpu_count = 1;
    std::memset(s->header.cpu_origin, '\xff', sizeof s->header.cpu_origin); // no NUL, not UTF-8
    std::memset(s->header.quota_origin, '\x80', sizeof s->header.quota_origin);
    s->header.quota_cpus = -3;
    cli::Snapshot snap = cli::take_snapshot(*s, "/coexec.t");
    EXPECT_EQ(snap.segment.cpu_origin, std::string(shm::kOriginSize, '?'));
    EXPECT_EQ(snap.segment.quota_cpus, 0);
    EXPECT_NO_THROW(cli::info_json(snap, "inherit").dump());
    EXPECT_GT(render_all(snap), 0u);
}

// Found by the segment_reader fuzzer (gap_cpu_fields_raw): a NUMA node not
// below numa_count, or a negative CPU or core number, is shown as unknown.
TEST(Snapshot, DamagedTopologyShowsAsUnknown) {
    auto s = zeroed_segment();
    s->header.cpu_count = 3;
    s->header.numa_count = 2;
    const int32_t topology[3][3] = {{0, 1, 0}, {1, 2, 1}, {-1, 5, -4}}; // system_id, numa, core
    for (int c = 0; c < 3; ++c) {
        s->cpus[c].system_id = topology[c][0];
        s->cpus[c].numa = topology[c][1];
        s->cpus[c].core = topology[c][2];
    }
    cli::Snapshot snap = cli::take_snapshot(*s, "/coexec.t");
    ASSERT_EQ(snap.cpus.size(), 3u);
    EXPECT_TRUE(snap.cpus[0].numa_known);
    EXPECT_EQ(snap.cpus[0].numa, 1);
    EXPECT_FALSE(snap.cpus[1].numa_known) << "NUMA 2 of 2 nodes";
    EXPECT_FALSE(snap.cpus[2].numa_known);
    EXPECT_FALSE(snap.cpus[2].system_cpu_known);
    EXPECT_FALSE(snap.cpus[2].core_known);

    // CPU  SYS  NUMA  STATE  PID ...
    const std::vector<std::string> table = cli::cpu_table(snap);
    ASSERT_EQ(table.size(), 4u);
    EXPECT_EQ(words(table[1]),
              (std::vector<std::string>{"0", "0", "1", "free", "-", "-", "-", "-", "-"}));
    EXPECT_EQ(words(table[2])[2], "?") << table[2];
    EXPECT_EQ(words(table[3])[1], "?") << table[3];
    EXPECT_EQ(words(table[3])[2], "?") << table[3];
    // `coexec info`'s topology: CPU  SYS  NUMA  CORE.
    const std::vector<std::string> info = cli::info_lines(snap, "all");
    EXPECT_EQ(words(info[info.size() - 2]), (std::vector<std::string>{"1", "1", "?", "1"}));
    EXPECT_EQ(words(info.back()), (std::vector<std::string>{"2", "?", "?", "?"}));

    const nlohmann::json cpus = cli::cpus_json(snap);
    EXPECT_EQ(cpus[0]["numa"], 1);
    EXPECT_TRUE(cpus[1]["numa"].is_null()) << cpus.dump();
    EXPECT_EQ(cpus[1]["core"], 1);
    EXPECT_TRUE(cpus[2]["system_cpu"].is_null() && cpus[2]["core"].is_null()) << cpus.dump();
    EXPECT_TRUE(cli::info_json(snap, "all")["topology"]["cpu_list"][1]["numa"].is_null());
}

// Found by the segment_reader fuzzer (gap_owner_of_an_unused_process_slot,
// gap_process_fields_raw): a process slot Alive with pid 0 is no process;
// a CPU shows a holder only in a held state, with an owner process the
// snapshot lists and an owner thread in use with a tid.
TEST(Snapshot, HoldersAndProcessesNeedAPid) {
    auto s = zeroed_segment();
    s->header.cpu_count = 5;
    s->header.numa_count = 1;
    const int32_t me = ::getpid();
    register_proc(*s, 0, 0, "nopid"); // Alive, but pid 0
    register_proc(*s, 1, me, "alpha");
    // CPU: owner process, owner thread, state.
    const int32_t owners[5][2] = {{0, 0}, {1, 1}, {1, 2}, {2, 1}, {1, 1}};
    const shm::CpuState states[5] = {shm::CpuState::Running, shm::CpuState::Running,
                                     shm::CpuState::Idle, shm::CpuState::Sleeping,
                                     shm::CpuState(9)};
    for (int c = 0; c < 5; ++c) {
        s->cpus[c].owner_proc.store(owners[c][0]);
        s->cpus[c].owner_thread.store(owners[c][1]);
        s->cpus[c].state.store(states[c]);
    }
    for (int t = 0; t < 3; ++t) {
        s->threads[t].state.store(shm::ThreadState::Running);
        s->threads[t].proc = t == 0 ? 0 : 1;
        s->threads[t].tid.store(t == 2 ? 0 : 5000 + t); // thread 2 not started yet
    }
    cli::Snapshot snap = cli::take_snapshot(*s, "/coexec.t");
    ASSERT_EQ(snap.procs.size(), 1u) << "the slot with pid 0 is left out";
    EXPECT_EQ(snap.procs[0].pid, me);
    EXPECT_EQ(snap.procs[0].cpus, 1);
    ASSERT_EQ(snap.cpus.size(), 5u);
    const bool held[5] = {false, true, false, false, false};
    for (int c = 0; c < 5; ++c)
        EXPECT_EQ(snap.cpus[size_t(c)].held, held[c]) << "CPU " << c;

    // CPU  SYS  NUMA  STATE  PID  PROCESS  LABEL  TID  HELD; the labels are
    // empty, so CPU 1 has one word less.
    const std::vector<std::string> table = cli::cpu_table(snap);
    ASSERT_EQ(table.size(), 6u);
    EXPECT_EQ(words(table[1]),
              (std::vector<std::string>{"0", "0", "0", "running", "-", "-", "-", "-", "-"}));
    const std::vector<std::string> cpu1 = words(table[2]);
    ASSERT_EQ(cpu1.size(), 8u) << table[2];
    EXPECT_EQ(cpu1[4], std::to_string(me));
    EXPECT_EQ(cpu1[5], "alpha");
    EXPECT_EQ(cpu1[6], "5001");
    EXPECT_EQ(words(table[5])[3], "unknown");
    EXPECT_EQ(words(table[5])[4], "-") << "no holder in an unknown state";
    const std::vector<std::string> procs = cli::process_table(snap, nullptr, false);
    ASSERT_EQ(procs.size(), 2u);
    EXPECT_EQ(words(procs[1])[0], std::to_string(me));
    const nlohmann::json cpus = cli::cpus_json(snap);
    EXPECT_TRUE(cpus[0]["pid"].is_null() && cpus[0]["tid"].is_null()) << cpus.dump();
    EXPECT_EQ(cpus[1]["pid"], me);
}

// Found by the segment_reader fuzzer (gap_share_over_100): a CPU time near
// the top of its range plus an open stint wrapped around to a small value,
// and the sum of all wrapped too, giving a SHARE of 267.7%. Both saturate
// now; a class's time above its process's CPU time is unknown.
TEST(Snapshot, WrappedCpuTimeSaturates) {
    auto s = zeroed_segment();
    s->header.cpu_count = 1;
    s->header.numa_count = 1;
    const int32_t me = ::getpid();
    const std::string pid = std::to_string(me);
    register_proc(*s, 0, me, "alpha");
    register_proc(*s, 1, me, "beta");
    s->procs[0].cpu_time_ns.store(UINT64_MAX - 10);
    s->procs[0].label_time_ns[int(shm::LabelClass::Other)].store(UINT64_MAX - 10);
    s->cpus[0].stint_proc = 0;
    s->cpus[0].stint_start_ns = 1;             // open since (nearly) boot
    s->cpus[0].owner_thread.store(shm::kNone); // so the open stint counts as other
    s->procs[1].cpu_time_ns.store(3'000'000'000);
    s->procs[1].label_time_ns[int(shm::LabelClass::Tbb)].store(1'000'000'000);
    s->procs[1].label_time_ns[int(shm::LabelClass::OpenMP)].store(UINT64_MAX);
    cli::Snapshot snap = cli::take_snapshot(*s, "/coexec.t");
    ASSERT_EQ(snap.procs.size(), 2u);
    EXPECT_EQ(snap.procs[0].cpu_time_ns, UINT64_MAX);
    EXPECT_EQ(snap.procs[0].label_time_ns[int(shm::LabelClass::Other)], UINT64_MAX);
    EXPECT_FALSE(snap.procs[1].label_time_known[int(shm::LabelClass::OpenMP)]);

    // PID  PROCESS  CPUS  READY  CPU-TIME  SHARE  HANDOFFS  THREADS
    const std::vector<std::string> procs = cli::process_table(snap, nullptr, true);
    ASSERT_EQ(procs.size(), 3u);
    EXPECT_EQ(words(procs[1])[5], "100.0%") << procs[1];
    EXPECT_EQ(words(procs[2])[5], "0.0%") << procs[2];
    // PID  PROCESS  OPENMP  TBB  POCL  OTHER
    const std::vector<std::string> runtime = cli::runtime_table(snap);
    ASSERT_EQ(runtime.size(), 3u);
    EXPECT_EQ(words(runtime[1]),
              (std::vector<std::string>{pid, "alpha", "-", "-", "-", "5124095h34m", "100.0%"}));
    EXPECT_EQ(words(runtime[2]),
              (std::vector<std::string>{pid, "beta", "?", "1.00s", "33.3%", "-", "-"}));
    const nlohmann::json times = cli::processes_json(snap)[1]["cpu_time_by_label_ns"];
    EXPECT_TRUE(times["openmp"].is_null()) << times.dump();
    EXPECT_EQ(times["tbb"], 1'000'000'000u);
}

// Found by the segment_reader fuzzer (gap_process_fields_raw,
// gap_header_counts_raw): counts out of their range show as unknown.
TEST(Snapshot, CountsOutOfRangeShowAsUnknown) {
    auto s = zeroed_segment();
    s->header.cpu_count = 2;
    s->header.numa_count = 1;
    s->header.unheld_cpus.store(-1);
    s->header.trace_recorders.store(1000);
    const int32_t me = ::getpid();
    const std::string pid = std::to_string(me);
    register_proc(*s, 0, me, "alpha");
    s->procs[0].ready_total.store(-1);
    s->procs[0].threads.store(shm::kMaxThreads + 1);
    register_proc(*s, 1, me, "beta");
    s->procs[1].ready_total.store(3);
    s->procs[1].threads.store(shm::kMaxThreads);
    for (int c = 0; c < 2; ++c)
        s->cpus[c].stint_proc = shm::kNone; // no open stint
    cli::Snapshot snap = cli::take_snapshot(*s, "/coexec.t");
    ASSERT_EQ(snap.procs.size(), 2u);

    // PID  PROCESS  CPUS  READY  CPU-TIME  HANDOFFS  THREADS
    const std::vector<std::string> procs = cli::process_table(snap, nullptr, false);
    ASSERT_EQ(procs.size(), 3u);
    EXPECT_EQ(words(procs[1]), (std::vector<std::string>{pid, "alpha", "0", "?", "0us", "0", "?"}));
    EXPECT_EQ(words(procs[2]),
              (std::vector<std::string>{pid, "beta", "0", "3", "0us", "0", "8192"}));
    const nlohmann::json json = cli::processes_json(snap);
    EXPECT_TRUE(json[0]["ready"].is_null() && json[0]["threads"].is_null()) << json.dump();
    EXPECT_EQ(json[1]["threads"], shm::kMaxThreads);

    const std::vector<std::string> info = cli::info_lines(snap, "all");
    auto line = [&](const std::string& start) {
        for (const auto& l : info)
            if (l.rfind(start, 0) == 0) return l;
        return std::string("(no line) ") + start;
    };
    EXPECT_EQ(line("unheld CPUs"), "unheld CPUs  ? of 2");
    EXPECT_EQ(line("recording"), "recording    ?");
    const nlohmann::json usage = cli::info_json(snap, "all")["usage"];
    EXPECT_TRUE(usage["unheld_cpus"].is_null() && usage["trace_recorders"].is_null())
        << usage.dump();

    s->header.unheld_cpus.store(2);
    s->header.trace_recorders.store(shm::kMaxRecorders);
    snap = cli::take_snapshot(*s, "/coexec.t");
    EXPECT_EQ(snap.segment.unheld_cpus, 2);
    EXPECT_EQ(snap.segment.trace_recorders, uint32_t(shm::kMaxRecorders));
    EXPECT_EQ(cli::info_json(snap, "all")["usage"]["unheld_cpus"], 2);
}

// top and info group the CPUs by NUMA node: a line per node (its CPUs and
// their states) above a table ordered node by node, and the nodes in JSON.
TEST(Snapshot, CpusAreGroupedByNumaNode) {
    cli::Snapshot snap;
    for (int c = 0; c < 4; ++c) {
        cli::CpuRow row;
        row.cpu = c;
        row.system_cpu = 10 + c;
        row.numa = c % 2 == 0 ? 1 : 0; // CPUs 1 and 3 on node 0, 0 and 2 on node 1
        row.core = row.system_cpu;
        row.state = c == 0 ? "running" : "free";
        snap.cpus.push_back(row);
    }
    snap.segment.cpu_count = 4;
    snap.segment.numa_count = 2;
    const std::vector<std::string> lines = cli::cpu_table(snap);
    ASSERT_GE(lines.size(), 7u);
    EXPECT_EQ(lines[0], "node 0: 2 CPUs (system 11,13), 2 free");
    EXPECT_EQ(lines[1], "node 1: 2 CPUs (system 10,12), 1 running, 1 free");
    // The header, then CPUs 1, 3 (node 0) and 0, 2 (node 1).
    std::vector<int> order;
    for (size_t i = 3; i < lines.size(); ++i)
        order.push_back(std::stoi(lines[i]));
    EXPECT_EQ(order, (std::vector<int>{1, 3, 0, 2}));
    const auto info = cli::info_lines(snap, "all");
    EXPECT_NE(
        std::find(info.begin(), info.end(), "  node 1: 2 CPUs (system 10,12), 1 running, 1 free"),
        info.end());
    const auto nodes = cli::top_json(snap)["numa_nodes"];
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(nodes[1]["cpus"], nlohmann::json({0, 2}));
    EXPECT_EQ(nodes[1]["states"]["running"], 1);
    EXPECT_EQ(cli::info_json(snap, "all")["topology"]["nodes"].size(), 2u);
    // The node lines head the CPU tables only.
    EXPECT_EQ(cli::process_table(snap, nullptr, true).size(), 1u + snap.procs.size());
    EXPECT_EQ(cli::runtime_table(snap).size(), 1u + snap.procs.size());
    // One node: no node lines.
    for (auto& c : snap.cpus)
        c.numa = 0;
    EXPECT_EQ(cli::cpu_table(snap).size(), 1u + 4u);
}
