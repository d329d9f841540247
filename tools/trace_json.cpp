#include "trace_json.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

namespace coexec::cli {
namespace {

using nlohmann::json;
using shm::TraceEvent;
using shm::TraceKind;

std::string printable(std::string_view text) {
    std::string out;
    for (char ch : text)
        if (ch >= 0x20 && ch < 0x7f) out += ch;
    return out;
}

// Who holds a CPU, as far as the trace has seen.
struct Holder {
    bool held = false;
    int32_t pid = 0;
    int32_t tid = 0;
    std::string label;
    std::string state; // running, idle, sleeping, lent
    uint64_t since = 0;
};

// Replays the events over a model of every CPU's holder, emitting a slice
// whenever a holding ends and a counter sample whenever a process's count
// of held CPUs changes.
class Builder {
  public:
    explicit Builder(const Recording& r) : r_(r) {}

    json build() {
        for (const TraceEvent& e : r_.events)
            apply(e);
        for (auto& [cpu, h] : cpus_)
            close(cpu, r_.end_ns);
        if (r_.lost() > 0)
            instant(r_.end_ns, fmt::format("{} events lost", r_.lost()), "g", kCpuTrackPid,
                    kCpuTrackTid,
                    {{"lost_events", r_.lost()},
                     {"overwritten_events", r_.overwritten},
                     {"unfinished_events", r_.unfinished}});
        add_metadata();
        json doc;
        doc["traceEvents"] = std::move(events_);
        doc["displayTimeUnit"] = "ms";
        doc["otherData"] = {
            {"producer", r_.producer},
            {"segment", printable(r_.shm_name)},
            {"start_monotonic_ns", r_.start_ns},
            {"end_monotonic_ns", r_.end_ns},
            {"events", r_.events.size()},
            {"lost_events", r_.lost()},
            {"overwritten_events", r_.overwritten},
            {"unfinished_events", r_.unfinished},
            {"cpu_track_pid", kCpuTrackPid},
        };
        if (r_.sample_period_ns) doc["otherData"]["sample_period_ns"] = r_.sample_period_ns;
        return doc;
    }

  private:
    uint64_t clamp(uint64_t t) const { return std::min(std::max(t, r_.start_ns), r_.end_ns); }
    double ts(uint64_t t) const { return double(clamp(t) - r_.start_ns) / 1000.0; }

    std::string process_name(int32_t pid) const {
        auto it = r_.process_names.find(pid);
        std::string name = it != r_.process_names.end() ? printable(it->second) : "";
        return name.empty() ? fmt::format("pid {}", pid) : name;
    }

    void apply(const TraceEvent& e) {
        const uint64_t t = clamp(e.time_ns);
        if (e.pid > 0) pids_.insert(e.pid);
        if (e.tid > 0 && e.pid > 0) thread_pid_.try_emplace(e.tid, e.pid);
        if (e.cpu == shm::kNone) return process_event(e, t);
        if (e.cpu < 0 || e.cpu >= shm::kMaxCpus) return;
        switch (e.kind) {
        case TraceKind::Grant:
        case TraceKind::Handoff:
        case TraceKind::Wake:
        case TraceKind::Reclaim:
        case TraceKind::Label:
            return hold(e, "running", t);
        case TraceKind::Idle:
            return hold(e, "idle", t);
        case TraceKind::Sleep:
            return hold(e, "sleeping", t);
        case TraceKind::Lend:
            return hold(e, "lent", t);
        case TraceKind::Release:
        case TraceKind::Evict:
            return close(e.cpu, t);
        case TraceKind::Preempt:
            return instant(t, "preempt", "t", kCpuTrackPid, kCpuTrackTid + e.cpu,
                           {{"pid", e.pid},
                            {"tid", e.tid},
                            {"process", process_name(e.pid)},
                            {"label", printable(e.label_text())}});
        default:
            return;
        }
    }

    void process_event(const TraceEvent& e, uint64_t t) {
        json args = {{"pid", e.pid}, {"process", process_name(e.pid)}};
        switch (e.kind) {
        case TraceKind::Join:
            instant(t, e.detail == 1 ? "member at start" : "join", "p", e.pid, e.pid, args);
            return;
        case TraceKind::Leave:
            drop_process(e.pid, t);
            instant(t, "leave", "p", e.pid, e.pid, args);
            return;
        case TraceKind::Reap:
            drop_process(e.pid, t);
            // The kernel does not say when it died: its last sign of life
            // is the best bound the segment has.
            args["last_seen_alive_us"] = e.detail ? ts(e.detail) : ts(t);
            instant(e.detail ? std::min(clamp(e.detail), t) : t, "died", "p", e.pid, e.pid, args);
            instant(t, "reaped", "p", e.pid, e.pid, args);
            instant(t, "reaped " + process_name(e.pid), "g", kCpuTrackPid, kCpuTrackTid, args);
            return;
        default:
            return;
        }
    }

    // A process is gone: whatever CPU the trace still shows it holding (its
    // release was lost) is released now.
    void drop_process(int32_t pid, uint64_t t) {
        for (auto& [cpu, h] : cpus_)
            if (h.held && h.pid == pid) close(cpu, t);
    }

    void hold(const TraceEvent& e, const char* state, uint64_t t) {
        Holder& h = cpus_[e.cpu];
        std::string label = printable(e.label_text());
        if (h.held && h.pid == e.pid && h.tid == e.tid && h.label == label && h.state == state)
            return;
        close(e.cpu, t);
        h = Holder{true, e.pid, e.tid, std::move(label), state, t};
        count(e.pid, +1, t);
    }

    void close(int32_t cpu, uint64_t t) {
        Holder& h = cpus_[cpu];
        if (!h.held) return;
        h.held = false;
        if (t > h.since) {
            std::string name = fmt::format("{} · {} · {}", process_name(h.pid),
                                           h.label.empty() ? "?" : h.label, h.tid);
            if (h.state != "running") name += " (" + h.state + ")";
            events_.push_back({{"ph", "X"},
                               {"name", std::move(name)},
                               {"cat", "cpu"},
                               {"pid", kCpuTrackPid},
                               {"tid", kCpuTrackTid + cpu},
                               {"ts", ts(h.since)},
                               {"dur", double(t - h.since) / 1000.0},
                               {"args",
                                {{"pid", h.pid},
                                 {"tid", h.tid},
                                 {"process", process_name(h.pid)},
                                 {"label", h.label},
                                 {"state", h.state}}}});
        }
        count(h.pid, -1, t);
    }

    // One sample per process and timestamp: the last change at a moment wins.
    void count(int32_t pid, int delta, uint64_t t) {
        const int n = held_[pid] += delta;
        auto last = last_counter_.find(pid);
        if (last != last_counter_.end() && events_[last->second]["ts"] == ts(t)) {
            events_[last->second]["args"]["cpus"] = n;
            return;
        }
        last_counter_[pid] = events_.size();
        events_.push_back({{"ph", "C"},
                           {"name", "CPUs held"},
                           {"pid", pid},
                           {"ts", ts(t)},
                           {"args", {{"cpus", n}}}});
    }

    void instant(uint64_t t, const std::string& name, const char* scope, int64_t pid, int64_t tid,
                 json args) {
        events_.push_back({{"ph", "i"},
                           {"name", name},
                           {"s", scope},
                           {"pid", pid},
                           {"tid", tid},
                           {"ts", ts(t)},
                           {"args", std::move(args)}});
    }

    void add_metadata() {
        auto meta = [&](const char* what, int64_t pid, int64_t tid, json args) {
            events_.push_back({{"ph", "M"},
                               {"name", what},
                               {"pid", pid},
                               {"tid", tid},
                               {"args", std::move(args)}});
        };
        meta("process_name", kCpuTrackPid, 0, {{"name", r_.cpu_tracks_name}});
        meta("process_sort_index", kCpuTrackPid, 0, {{"sort_index", -1}});
        std::set<int32_t> cpus;
        for (size_t c = 0; c < r_.cpu_system_ids.size(); ++c)
            cpus.insert(int32_t(c));
        for (const auto& [cpu, h] : cpus_)
            cpus.insert(cpu);
        for (int32_t c : cpus) {
            std::string name = fmt::format("CPU {}", c);
            if (size_t(c) < r_.cpu_system_ids.size())
                name += fmt::format(" (kernel CPU {})", r_.cpu_system_ids[size_t(c)]);
            meta("thread_name", kCpuTrackPid, kCpuTrackTid + c, {{"name", name}});
            meta("thread_sort_index", kCpuTrackPid, kCpuTrackTid + c, {{"sort_index", c}});
        }
        for (int32_t pid : pids_)
            meta("process_name", pid, 0, {{"name", process_name(pid)}});
        for (const auto& [tid, pid] : thread_pid_) {
            auto it = r_.thread_names.find(tid);
            std::string name = it != r_.thread_names.end() ? printable(it->second) : "";
            if (name.empty()) name = fmt::format("tid {}", tid);
            meta("thread_name", pid, tid, {{"name", name}});
        }
    }

    const Recording& r_;
    json events_ = json::array();
    std::map<int32_t, Holder> cpus_;
    std::map<int32_t, int> held_;            // CPUs each pid holds
    std::map<int32_t, size_t> last_counter_; // pid -> its last counter sample in events_
    std::set<int32_t> pids_;
    std::map<int32_t, int32_t> thread_pid_; // tid -> pid
};

} // namespace

json trace_to_json(const Recording& recording) {
    return Builder(recording).build();
}

} // namespace coexec::cli
