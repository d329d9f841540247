// The trace converter on arbitrary event streams (as a corrupt or lossy
// ring could produce): the JSON is always valid, CPU slices never overlap,
// and every "CPUs held" sample equals the slices open at that moment.
#include "tools/trace_json.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

namespace coexec::cli {
namespace {

using nlohmann::json;
using shm::TraceEvent;
using shm::TraceKind;

Recording random_recording(uint32_t seed, size_t count) {
    std::mt19937 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    Recording r;
    r.start_ns = 1'000'000;
    r.end_ns = r.start_ns + 10'000'000;
    r.shm_name = "/coexec.fuzz\xff.u0";
    r.process_names[7] = "p\x01seven\xc3";
    r.cpu_system_ids = {0, 1, 2, 3};
    r.overwritten = uint64_t(pick(0, 3));
    r.unfinished = uint64_t(pick(0, 1));
    for (size_t i = 0; i < count; ++i) {
        TraceEvent e;
        // Some before the start and after the end: clamped.
        e.time_ns = r.start_ns - 1000 + uint64_t(pick(0, 10'002'000));
        e.kind = TraceKind(pick(0, 20)); // out-of-range kinds too
        e.cpu = pick(0, 9) == 0 ? shm::kNone : pick(-3, 6);
        e.pid = pick(0, 3) == 0 ? pick(-5, 100000) : pick(5, 8);
        e.tid = pick(-1, 12);
        e.detail = pick(0, 1) ? 0 : uint64_t(pick(0, 20'000'000));
        for (auto& ch : e.label)
            ch = char(pick(0, 2) ? pick('a', 'z') : pick(-128, 127));
        r.events.push_back(e);
    }
    std::stable_sort(
        r.events.begin(), r.events.end(),
        [](const TraceEvent& a, const TraceEvent& b) { return a.time_ns < b.time_ns; });
    return r;
}

TEST(TraceJson, ArbitraryEventsGiveASoundTrace) {
    for (uint32_t seed = 1; seed <= 200; ++seed) {
        const json doc = trace_to_json(random_recording(seed, 300));
        ASSERT_NO_THROW((void)doc.dump()) << "seed " << seed; // valid UTF-8 throughout
        struct Slice {
            double start, end;
            int64_t pid;
        };
        std::map<int64_t, std::vector<Slice>> by_cpu;
        std::vector<Slice> all;
        for (const json& e : doc["traceEvents"]) {
            if (e["ph"] != "X") continue;
            ASSERT_EQ(e["pid"], kCpuTrackPid);
            ASSERT_GT(e["dur"].get<double>(), 0);
            Slice s{e["ts"], e["ts"].get<double>() + e["dur"].get<double>(), e["args"]["pid"]};
            ASSERT_GE(s.start, 0);
            ASSERT_LE(s.end, 10'000.0 + 1e-6);
            by_cpu[e["tid"].get<int64_t>()].push_back(s);
            all.push_back(s);
        }
        for (auto& [cpu, list] : by_cpu) {
            std::sort(list.begin(), list.end(),
                      [](const Slice& a, const Slice& b) { return a.start < b.start; });
            for (size_t i = 1; i < list.size(); ++i)
                ASSERT_GE(list[i].start, list[i - 1].end - 1e-6) << "seed " << seed;
        }
        for (const json& e : doc["traceEvents"]) {
            if (e["ph"] != "C") continue;
            const double ts = e["ts"];
            int open = 0;
            for (const Slice& s : all)
                open +=
                    s.pid == e["pid"].get<int64_t>() && s.start <= ts + 1e-6 && s.end > ts + 1e-6;
            ASSERT_EQ(open, e["args"]["cpus"].get<int>()) << "seed " << seed << " " << e.dump();
        }
    }
}

TEST(TraceJson, LostEventsAreCountedByCause) {
    Recording r;
    r.start_ns = 5;
    r.end_ns = 10'000;
    r.overwritten = 3;
    r.unfinished = 1;
    const json doc = trace_to_json(r);
    EXPECT_EQ(doc["otherData"]["lost_events"], 4);
    EXPECT_EQ(doc["otherData"]["overwritten_events"], 3);
    EXPECT_EQ(doc["otherData"]["unfinished_events"], 1);
    int notes = 0;
    for (const json& e : doc["traceEvents"])
        if (e["ph"] == "i" && e["name"] == "4 events lost") {
            ++notes;
            EXPECT_EQ(e["args"]["unfinished_events"], 1);
        }
    EXPECT_EQ(notes, 1);
}

TEST(TraceJson, EmptyRecording) {
    Recording r;
    r.start_ns = r.end_ns = 5;
    const json doc = trace_to_json(r);
    EXPECT_EQ(doc["otherData"]["lost_events"], 0);
    for (const json& e : doc["traceEvents"])
        EXPECT_EQ(e["ph"], "M");
}

} // namespace
} // namespace coexec::cli
