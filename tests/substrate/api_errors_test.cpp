// Every C API call with bad arguments or in a wrong state returns its
// documented error code (include/nosv.h, include/nosv/*.h,
// include/coexec/ext.h, and nOS-V's docs/user/api.md and errors.md), and
// getters give their neutral value. One table row per (call, bad input or
// state, expected result); each row runs as its own test, in the state its
// `where` names, against a real instance.
#include "support.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace coexec;

namespace {

// The state a row's call is made in.
enum class Where {
    BeforeInit,    // nosv_init() not called yet
    AfterShutdown, // nosv_init() then nosv_shutdown()
    OutsideTask,   // initialized; the calling thread is no coexec thread
    InTask,        // the calling thread is attached and holds a CPU
    InWorkerTask,  // inside the run callback of a task a worker runs
    // Attached, between coexec_block_enter() and _exit(): the thread is
    // outside coexec (ext.h), so calls that need a task see none.
    InBlockedTask,
};

const char* where_name(Where w) {
    switch (w) {
    case Where::BeforeInit:
        return "BeforeInit";
    case Where::AfterShutdown:
        return "AfterShutdown";
    case Where::OutsideTask:
        return "OutsideTask";
    case Where::InTask:
        return "InTask";
    case Where::InWorkerTask:
        return "InWorkerTask";
    case Where::InBlockedTask:
        return "InBlockedTask";
    }
    return "?";
}

void run_nothing(nosv_task_t) {}

// What a row's call may use. Handles that are not valid in the row's state
// (a task after shutdown) are never dereferenced by a correct call.
struct Handles {
    nosv_task_type_t type = nullptr;     // run callback only
    nosv_task_type_t external = nullptr; // NOSV_TYPE_INIT_EXTERNAL
    nosv_task_t task = nullptr;          // created, never submitted
    // Zeroed memory that was never a type or a task ("bad handles").
    nosv_task_type_t fake_type = nullptr;
    nosv_task_t fake_task = nullptr;
    const std::vector<char>* fake_bytes = nullptr; // where both point
    // Bytes of the fake handles that a call wrote to (must stay 0).
    int fake_bytes_written() const {
        return int(std::count_if(fake_bytes->begin(), fake_bytes->end(), [](char c) { return c; }));
    }
};

// Getters return values, not codes: pointers compare as 0 (NULL) or 1.
int is_set(const void* p) {
    return p != nullptr;
}
constexpr int kNull = 0;

// nosv_create() that frees what it created when it unexpectedly succeeds.
int create_rc(nosv_task_t* out, nosv_task_type_t type, size_t metadata, nosv_flags_t flags) {
    int rc = nosv_create(out, type, metadata, flags);
    if (rc == NOSV_SUCCESS && out) nosv_destroy(*out, NOSV_DESTROY_NONE);
    return rc;
}

// nosv_attach() from the calling thread, detached again if it succeeds.
int attach_rc(nosv_task_t* out, nosv_affinity_t* affinity, nosv_flags_t flags) {
    int rc = nosv_attach(out, affinity, "row", flags);
    if (rc == NOSV_SUCCESS) nosv_detach(NOSV_DETACH_NONE);
    return rc;
}

// nosv_init() with `override` appended to the test's own segment override,
// or with NOSV_CONFIG set to `file`; shut down again if it succeeds.
int init_with(const std::string& override, const char* file = nullptr, bool quiet = false) {
    std::string ov = std::getenv("NOSV_CONFIG_OVERRIDE");
    if (!override.empty()) ::setenv("NOSV_CONFIG_OVERRIDE", (ov + "," + override).c_str(), 1);
    if (file) ::setenv("NOSV_CONFIG", file, 1);
    int rc = quiet ? coexec_init_quiet() : nosv_init();
    ::setenv("NOSV_CONFIG_OVERRIDE", ov.c_str(), 1);
    ::unsetenv("NOSV_CONFIG");
    if (rc == NOSV_SUCCESS) nosv_shutdown();
    return rc;
}

// The running row's own segment.
const test::ScopedSegment* g_segment = nullptr;

// Creates the row's segment in /dev/shm holding `bytes`.
// Writes `bytes` as the segment, and keeps it in use as a member's mapping
// would (a shared lock on its byte 1) until the next plant: an unused
// segment that is not this coexec's is formatted afresh at init, one in use
// is refused.
void plant_segment(const std::string& bytes) {
    static int in_use = -1;
    if (in_use >= 0) ::close(in_use);
    std::string name = shm::segment_shm_name(g_segment->options());
    int fd = ::shm_open(name.c_str(), O_CREAT | O_TRUNC | O_RDWR, 0600);
    in_use = fd;
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
    struct flock fl {};
    fl.l_type = F_RDLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = 1;
    fl.l_len = 1;
    ASSERT_EQ(::fcntl(fd, F_OFD_SETLK, &fl), 0);
}

// Runs `run` as the body of a new task, inline on the calling (attached)
// thread; returns what the body stored in g_body_rc.
std::atomic<int> g_body_rc{INT_MIN};
int run_inline(void (*run)(nosv_task_t)) {
    nosv_task_type_t type;
    nosv_task_t t;
    if (nosv_type_init(&type, run, nullptr, nullptr, "inline", nullptr, nullptr, 0) != 0 ||
        nosv_create(&t, type, 0, 0) != 0)
        return INT_MIN;
    g_body_rc = INT_MIN;
    int rc = nosv_submit(t, NOSV_SUBMIT_INLINE);
    EXPECT_EQ(rc, NOSV_SUCCESS);
    EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
    return g_body_rc;
}

// nosv_destroy() of a task that is ready: an IMMEDIATE successor of the
// calling task waits for its CPU, so it stays ready until we pause.
std::atomic<bool> g_done{false};
nosv_task_t g_waiter = nullptr;
int destroy_ready_task() {
    nosv_task_type_t type;
    nosv_task_t t;
    EXPECT_EQ(nosv_type_init(
                  &type, run_nothing, nullptr,
                  [](nosv_task_t) {
                      g_done = true;
                      nosv_submit(g_waiter, NOSV_SUBMIT_NONE);
                  },
                  "ready", nullptr, nullptr, 0),
              0);
    EXPECT_EQ(nosv_create(&t, type, 0, 0), 0);
    g_done = false;
    g_waiter = nosv_self();
    EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_IMMEDIATE), NOSV_SUCCESS);
    int rc = nosv_destroy(t, NOSV_DESTROY_NONE);
    while (!g_done)
        EXPECT_EQ(nosv_pause(NOSV_PAUSE_NONE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
    return rc;
}

// Runs `op` on a task whose body has ended with an event pending (not
// complete), then completes and destroys it; returns what `op` returned.
template <class Op>
int with_pending_event_task(Op op) {
    nosv_task_type_t type;
    nosv_task_t t;
    EXPECT_EQ(nosv_type_init(
                  &type, [](nosv_task_t) { EXPECT_EQ(nosv_increase_event_counter(1), 0); }, nullptr,
                  nullptr, "events", nullptr, nullptr, 0),
              0);
    EXPECT_EQ(nosv_create(&t, type, 0, 0), 0);
    EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_INLINE), NOSV_SUCCESS);
    int rc = op(t);
    EXPECT_EQ(nosv_decrease_event_counter(t, 1), NOSV_SUCCESS); // completes it
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
    return rc;
}

// nosv_destroy() of a task whose body has ended with an event pending.
int destroy_task_with_pending_events() {
    return with_pending_event_task(
        [](nosv_task_t t) { return nosv_destroy(t, NOSV_DESTROY_NONE); });
}

// A task whose body ended with an event pending: not complete, so a submit
// is refused (it would run the task again before its completion).
int submit_task_with_pending_events() {
    return with_pending_event_task([](nosv_task_t t) { return nosv_submit(t, NOSV_SUBMIT_NONE); });
}

// nosv_shutdown() from a thread that never called nosv_init().
int shutdown_from_another_thread() {
    int rc = INT_MIN;
    std::thread([&rc] { rc = nosv_shutdown(); }).join();
    return rc;
}

// ---- joinable tasks ----------------------------------------------------

// Runs `run` as the body of a joinable task, inline on the calling
// (attached) thread, then joins it; returns what the body stored in
// g_body_rc.
int joinable_inline(void (*run)(nosv_task_t)) {
    nosv_task_type_t type;
    nosv_task_t t;
    if (nosv_type_init(&type, run, nullptr, nullptr, "joinable", nullptr, nullptr, 0) != 0 ||
        nosv_create(&t, type, 0, NOSV_CREATE_JOINABLE) != 0)
        return INT_MIN;
    g_body_rc = INT_MIN;
    EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_INLINE), NOSV_SUCCESS);
    EXPECT_EQ(nosv_join(t, nullptr, 0), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
    return g_body_rc;
}

// `op` on a joinable task that was created and never submitted.
template <class Op>
int with_unsubmitted_joinable(Handles& h, Op op) {
    nosv_task_t t;
    EXPECT_EQ(nosv_create(&t, h.type, 0, NOSV_CREATE_JOINABLE), NOSV_SUCCESS);
    int rc = op(t);
    EXPECT_EQ(nosv_destroy(t, NOSV_DESTROY_NONE), NOSV_SUCCESS);
    return rc;
}

// `op` on a joinable task that runs until it is let go; joined after.
std::atomic<bool> g_let_go{false};
template <class Op>
int with_running_joinable(Op op) {
    nosv_task_type_t type;
    nosv_task_t t;
    EXPECT_EQ(nosv_type_init(
                  &type,
                  [](nosv_task_t) {
                      while (!g_let_go)
                          nosv_waitfor(100'000, nullptr);
                  },
                  nullptr, nullptr, "held", nullptr, nullptr, 0),
              0);
    EXPECT_EQ(nosv_create(&t, type, 0, NOSV_CREATE_JOINABLE), 0);
    g_let_go = false;
    EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_NONE), NOSV_SUCCESS);
    int rc = op(t);
    g_let_go = true;
    EXPECT_EQ(nosv_join(t, nullptr, UINT64_MAX), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
    return rc;
}

// nosv_join with a timeout from a completed callback on a worker (no task
// bound, a CPU held): refused.
nosv_task_t g_join_target = nullptr;
int join_from_a_completed_callback(Handles& h) {
    nosv_task_type_t type;
    nosv_task_t t;
    EXPECT_EQ(nosv_type_init(
                  &type, run_nothing, nullptr,
                  [](nosv_task_t) { g_body_rc = nosv_join(g_join_target, nullptr, 1000); },
                  "callback", nullptr, nullptr, 0),
              0);
    EXPECT_EQ(nosv_create(&t, type, 0, 0), 0);
    int rc = with_unsubmitted_joinable(h, [&](nosv_task_t target) {
        g_join_target = target;
        g_body_rc = INT_MIN;
        EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
        return int(g_body_rc);
    });
    EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
    return rc;
}

nosv_affinity_t g_affinity;
nosv_affinity_t* cpu_affinity(uint32_t system_cpu) {
    g_affinity = nosv_affinity_get(system_cpu, NOSV_AFFINITY_LEVEL_CPU, NOSV_AFFINITY_TYPE_STRICT);
    return &g_affinity;
}
nosv_affinity_t* numa_affinity(uint32_t system_numa) {
    g_affinity =
        nosv_affinity_get(system_numa, NOSV_AFFINITY_LEVEL_NUMA, NOSV_AFFINITY_TYPE_PREFERRED);
    return &g_affinity;
}
// No machine this runs on has these.
constexpr uint32_t kNoSuchCpu = 100000, kNoSuchNuma = 100000;

int affinity_level(nosv_affinity_t a) {
    return int(a.level);
}

constexpr nosv_flags_t kBit63 = nosv_flags_t(1) << 63;
const auto kBadLevel = NOSV_TOPO_LEVEL_COUNT;

struct Row {
    const char* name; // <function without nosv_/coexec_>_<case>
    Where where;
    int expected; // a NOSV_ERR_* code, or the value a getter must return
    int (*call)(Handles&);
};

void PrintTo(const Row& row, std::ostream* os) {
    *os << row.name;
}

// clang-format off
const std::vector<Row> kRows = {
    // ---- nosv_init / nosv_shutdown / coexec_init_quiet ---------------------
    {"init_BadConfigValue", Where::BeforeInit, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return init_with("scheduler.quantum_ns=1"); }},
    {"init_BindingNamesOfflineCpu", Where::BeforeInit, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return init_with("topology.binding=4000"); }},
    {"init_ConfigFileMissing", Where::BeforeInit, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return init_with("", "/nonexistent/coexec.toml"); }},
    {"init_ConfigFileIsADirectory", Where::BeforeInit, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return init_with("", "/tmp"); }},
    {"init_SegmentIsNotCoexec", Where::BeforeInit, NOSV_ERR_UNKNOWN,
     [](Handles&) {
         plant_segment(std::string(sizeof(shm::Segment), '\x5a'));
         return init_with("");
     }},
    {"init_SegmentIsTruncated", Where::BeforeInit, NOSV_ERR_UNKNOWN,
     [](Handles&) {
         plant_segment("coexec?");
         return init_with("");
     }},
    {"init_SegmentOfOtherAbiVersion", Where::BeforeInit, NOSV_ERR_UNKNOWN,
     [](Handles&) {
         std::string bytes(sizeof(shm::Segment), '\0');
         auto* header = reinterpret_cast<shm::Header*>(bytes.data());
         header->magic.store(shm::kMagic);
         header->abi_version = shm::kAbiVersion + 1;
         header->total_size = sizeof(shm::Segment);
         plant_segment(bytes);
         return init_with("");
     }},
    {"init_quiet_BadConfigValueKeepsTheReason", Where::BeforeInit, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) {
         int rc = init_with("governor.policy=fast", nullptr, true);
         return std::strstr(coexec_last_error(), "governor.policy") ? rc : INT_MIN;
     }},
    {"shutdown_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_shutdown(); }},
    {"shutdown_AfterShutdown", Where::AfterShutdown, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_shutdown(); }},
    {"shutdown_FromAThreadThatDidNotInit", Where::OutsideTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return shutdown_from_another_thread(); }},
    {"is_active_BeforeInit", Where::BeforeInit, 0, [](Handles&) { return coexec_is_active(); }},
    {"is_active_AfterShutdown", Where::AfterShutdown, 0,
     [](Handles&) { return coexec_is_active(); }},
    {"self_BeforeInit", Where::BeforeInit, kNull, [](Handles&) { return is_set(nosv_self()); }},
    {"self_OutsideTask", Where::OutsideTask, kNull, [](Handles&) { return is_set(nosv_self()); }},

    // ---- task types ----------------------------------------------------------
    {"type_init_NullOut", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_type_init(nullptr, run_nothing, nullptr, nullptr, "x", nullptr, nullptr, 0); }},
    {"type_init_UnknownFlag", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) {
         nosv_task_type_t t;
         return nosv_type_init(&t, run_nothing, nullptr, nullptr, "x", nullptr, nullptr, 1u << 1);
     }},
    {"type_init_HighFlag", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) {
         nosv_task_type_t t;
         return nosv_type_init(&t, run_nothing, nullptr, nullptr, "x", nullptr, nullptr, kBit63);
     }},
    {"type_init_NoRunCallback", Where::OutsideTask, NOSV_ERR_INVALID_CALLBACK,
     [](Handles&) {
         nosv_task_type_t t;
         return nosv_type_init(&t, nullptr, run_nothing, run_nothing, "x", nullptr, nullptr, 0);
     }},
    {"type_init_ExternalWithRun", Where::OutsideTask, NOSV_ERR_INVALID_CALLBACK,
     [](Handles&) {
         nosv_task_type_t t;
         return nosv_type_init(&t, run_nothing, nullptr, nullptr, "x", nullptr, nullptr, NOSV_TYPE_INIT_EXTERNAL);
     }},
    {"type_init_ExternalWithEnd", Where::OutsideTask, NOSV_ERR_INVALID_CALLBACK,
     [](Handles&) {
         nosv_task_type_t t;
         return nosv_type_init(&t, nullptr, run_nothing, nullptr, "x", nullptr, nullptr, NOSV_TYPE_INIT_EXTERNAL);
     }},
    {"type_init_ExternalWithCompleted", Where::OutsideTask, NOSV_ERR_INVALID_CALLBACK,
     [](Handles&) {
         nosv_task_type_t t;
         return nosv_type_init(&t, nullptr, nullptr, run_nothing, "x", nullptr, nullptr, NOSV_TYPE_INIT_EXTERNAL);
     }},
    {"type_destroy_Null", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_type_destroy(nullptr, NOSV_TYPE_DESTROY_NONE); }},
    {"type_destroy_NotAType", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_type_destroy(h.fake_type, NOSV_TYPE_DESTROY_NONE); }},
    {"type_destroy_UnknownFlag", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_type_destroy(h.type, 1); }},

    // ---- nosv_create ------------------------------------------------------------
    {"create_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { nosv_task_t t; return create_rc(&t, h.type, 0, 0); }},
    {"create_AfterShutdown", Where::AfterShutdown, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { nosv_task_t t; return create_rc(&t, h.type, 0, 0); }},
    {"create_NullOut", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return create_rc(nullptr, h.type, 0, 0); }},
    {"create_NullType", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { nosv_task_t t; return create_rc(&t, nullptr, 0, 0); }},
    {"create_NotAType", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { nosv_task_t t; return create_rc(&t, h.fake_type, 0, 0); }},
    {"create_UnknownFlag", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { nosv_task_t t; return create_rc(&t, h.type, 0, 1u << 5); }},
    {"create_HighFlag", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { nosv_task_t t; return create_rc(&t, h.type, 0, kBit63); }},
    {"create_MetadataOneTooBig", Where::OutsideTask, NOSV_ERR_INVALID_METADATA_SIZE,
     [](Handles& h) { nosv_task_t t; return create_rc(&t, h.type, NOSV_MAX_METADATA_SIZE + 1, 0); }},
    {"create_MetadataHuge", Where::OutsideTask, NOSV_ERR_INVALID_METADATA_SIZE,
     [](Handles& h) { nosv_task_t t; return create_rc(&t, h.type, SIZE_MAX, 0); }},
    {"create_ExternalType", Where::OutsideTask, NOSV_ERR_INVALID_CALLBACK,
     [](Handles& h) { nosv_task_t t; return create_rc(&t, h.external, 0, 0); }},

    // ---- nosv_destroy -------------------------------------------------------------
    {"destroy_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { return nosv_destroy(h.fake_task, 0); }},
    {"destroy_AfterShutdown", Where::AfterShutdown, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { return nosv_destroy(h.task, 0); }},
    {"destroy_Null", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_destroy(nullptr, 0); }},
    {"destroy_NotATask", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_destroy(h.fake_task, 0); }},
    {"destroy_UnknownFlag", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_destroy(h.task, 1); }},
    {"destroy_TaskStillRunning", Where::InTask, NOSV_ERR_BUSY,
     [](Handles&) {
         return run_inline([](nosv_task_t self) { g_body_rc = nosv_destroy(self, 0); });
     }},
    {"destroy_TaskStillReady", Where::InTask, NOSV_ERR_BUSY,
     [](Handles&) { return destroy_ready_task(); }},
    {"destroy_TaskWithPendingEvents", Where::InTask, NOSV_ERR_BUSY,
     [](Handles&) { return destroy_task_with_pending_events(); }},
    {"destroy_AttachedThreadsTask", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return nosv_destroy(nosv_self(), 0); }},

    // ---- nosv_submit ----------------------------------------------------------------
    {"submit_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { return nosv_submit(h.fake_task, 0); }},
    {"submit_AfterShutdown", Where::AfterShutdown, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { return nosv_submit(h.task, 0); }},
    {"submit_Null", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_submit(nullptr, 0); }},
    {"submit_NotATask", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_submit(h.fake_task, 0); }},
    {"submit_UnknownFlag", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_submit(h.task, 1u << 5); }},
    {"submit_HighFlag", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_submit(h.task, kBit63); }},
    {"submit_InlineAndImmediate", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_submit(h.task, NOSV_SUBMIT_INLINE | NOSV_SUBMIT_IMMEDIATE); }},
    {"submit_InlineAndDeadlineWake", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_submit(h.task, NOSV_SUBMIT_INLINE | NOSV_SUBMIT_DEADLINE_WAKE); }},
    {"submit_BlockingOutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles& h) { return nosv_submit(h.task, NOSV_SUBMIT_BLOCKING); }},
    {"submit_InlineOutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles& h) { return nosv_submit(h.task, NOSV_SUBMIT_INLINE); }},
    {"submit_TaskWithPendingEvents", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return submit_task_with_pending_events(); }},
    {"submit_BlockingOnItself", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return nosv_submit(nosv_self(), NOSV_SUBMIT_BLOCKING); }},
    {"submit_InlineOfItself", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return nosv_submit(nosv_self(), NOSV_SUBMIT_INLINE); }},
    {"submit_BlockingWhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles& h) { return nosv_submit(h.task, NOSV_SUBMIT_BLOCKING); }},
    {"submit_InlineWhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles& h) { return nosv_submit(h.task, NOSV_SUBMIT_INLINE); }},

    // ---- scheduling points ------------------------------------------------------------
    {"pause_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_pause(0); }},
    {"pause_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_pause(0); }},
    {"pause_UnknownFlag", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_pause(1); }},
    {"pause_WhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_pause(0); }},
    {"yield_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_yield(0); }},
    {"yield_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_yield(0); }},
    {"yield_UnknownFlag", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_yield(1u << 1); }},
    {"yield_WhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_yield(0); }},
    {"schedpoint_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_schedpoint(0); }},
    {"schedpoint_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_schedpoint(0); }},
    {"schedpoint_UnknownFlag", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_schedpoint(1); }},
    {"schedpoint_WhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_schedpoint(0); }},
    {"waitfor_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_waitfor(1000, nullptr); }},
    {"waitfor_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { uint64_t ns; return nosv_waitfor(1000, &ns); }},
    {"waitfor_WhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_waitfor(1000, nullptr); }},

    // ---- events ---------------------------------------------------------------------
    {"increase_event_counter_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_increase_event_counter(1); }},
    {"increase_event_counter_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_increase_event_counter(1); }},
    {"increase_event_counter_Zero", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_increase_event_counter(0); }},
    {"decrease_event_counter_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { return nosv_decrease_event_counter(h.fake_task, 1); }},
    {"decrease_event_counter_Null", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_decrease_event_counter(nullptr, 1); }},
    {"decrease_event_counter_NotATask", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_decrease_event_counter(h.fake_task, 1); }},
    {"decrease_event_counter_Zero", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_decrease_event_counter(h.task, 0); }},
    {"decrease_event_counter_MoreThanPending", Where::OutsideTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles& h) { return nosv_decrease_event_counter(h.task, 1); }},
    {"has_events_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_has_events(); }},
    {"has_events_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_has_events(); }},
    {"task_had_events_Null", Where::OutsideTask, 0,
     [](Handles&) { return nosv_task_had_events(nullptr); }},
    {"task_had_events_NotATask", Where::OutsideTask, 0,
     [](Handles& h) { return nosv_task_had_events(h.fake_task); }},

    // ---- attach / detach --------------------------------------------------------------
    {"attach_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { nosv_task_t t; return attach_rc(&t, nullptr, 0); }},
    {"attach_AfterShutdown", Where::AfterShutdown, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { nosv_task_t t; return attach_rc(&t, nullptr, 0); }},
    {"attach_NullOut", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return attach_rc(nullptr, nullptr, 0); }},
    {"attach_UnknownFlag", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { nosv_task_t t; return attach_rc(&t, nullptr, 1u << 5); }},
    {"attach_AffinityToUnmanagedCpu", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { nosv_task_t t; return attach_rc(&t, cpu_affinity(kNoSuchCpu), 0); }},
    {"attach_AffinityToUnmanagedNuma", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { nosv_task_t t; return attach_rc(&t, numa_affinity(kNoSuchNuma), 0); }},
    {"attach_FromAWorker", Where::InWorkerTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { nosv_task_t t; return nosv_attach(&t, nullptr, "again", 0); }},
    {"detach_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_detach(0); }},
    {"detach_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_detach(0); }},
    {"detach_UnknownFlag", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_detach(1u << 5); }},
    {"detach_FromAWorker", Where::InWorkerTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return nosv_detach(0); }},

    // ---- getters and setters: neutral values, no crash -----------------------------------
    {"get_task_metadata_Null", Where::OutsideTask, kNull,
     [](Handles&) { return is_set(nosv_get_task_metadata(nullptr)); }},
    {"get_task_metadata_NotATask", Where::OutsideTask, kNull,
     [](Handles& h) { return is_set(nosv_get_task_metadata(h.fake_task)); }},
    {"get_task_metadata_NoneRequested", Where::OutsideTask, kNull,
     [](Handles& h) { return is_set(nosv_get_task_metadata(h.task)); }},
    {"get_task_type_Null", Where::OutsideTask, kNull,
     [](Handles&) { return is_set(nosv_get_task_type(nullptr)); }},
    {"get_task_type_NotATask", Where::OutsideTask, kNull,
     [](Handles& h) { return is_set(nosv_get_task_type(h.fake_task)); }},
    {"get_task_priority_Null", Where::OutsideTask, 0,
     [](Handles&) { return nosv_get_task_priority(nullptr); }},
    {"set_task_priority_NotATaskIsIgnored", Where::OutsideTask, 0,
     [](Handles& h) {
         nosv_set_task_priority(nullptr, 5);
         nosv_set_task_priority(h.fake_task, 5);
         return nosv_get_task_priority(h.fake_task) + h.fake_bytes_written();
     }},
    {"get_task_type_run_callback_NotAType", Where::OutsideTask, kNull,
     [](Handles& h) { return is_set(reinterpret_cast<void*>(nosv_get_task_type_run_callback(h.fake_type))); }},
    {"get_task_type_end_callback_Null", Where::OutsideTask, kNull,
     [](Handles&) { return is_set(reinterpret_cast<void*>(nosv_get_task_type_end_callback(nullptr))); }},
    {"get_task_type_completed_callback_NotAType", Where::OutsideTask, kNull,
     [](Handles& h) { return is_set(reinterpret_cast<void*>(nosv_get_task_type_completed_callback(h.fake_type))); }},
    {"get_task_type_label_Null", Where::OutsideTask, kNull,
     [](Handles&) { return is_set(nosv_get_task_type_label(nullptr)); }},
    {"get_task_type_label_NotAType", Where::OutsideTask, kNull,
     [](Handles& h) { return is_set(nosv_get_task_type_label(h.fake_type)); }},
    {"get_task_type_metadata_NotAType", Where::OutsideTask, kNull,
     [](Handles& h) { return is_set(nosv_get_task_type_metadata(h.fake_type)); }},
    {"get_task_affinity_NotATask", Where::OutsideTask, NOSV_AFFINITY_LEVEL_NONE,
     [](Handles& h) { return affinity_level(nosv_get_task_affinity(h.fake_task)); }},
    {"set_task_affinity_NullAffinityIsIgnored", Where::OutsideTask, NOSV_AFFINITY_LEVEL_NONE,
     [](Handles& h) {
         nosv_set_task_affinity(h.task, nullptr);
         return affinity_level(nosv_get_task_affinity(h.task));
     }},
    {"set_task_affinity_UnmanagedCpuIsIgnored", Where::OutsideTask, NOSV_AFFINITY_LEVEL_NONE,
     [](Handles& h) {
         nosv_set_task_affinity(h.task, cpu_affinity(kNoSuchCpu));
         return affinity_level(nosv_get_task_affinity(h.task));
     }},
    {"set_task_affinity_UnmanagedNumaIsIgnored", Where::OutsideTask, NOSV_AFFINITY_LEVEL_NONE,
     [](Handles& h) {
         nosv_set_task_affinity(h.task, numa_affinity(kNoSuchNuma));
         return affinity_level(nosv_get_task_affinity(h.task));
     }},
    {"set_task_affinity_NotATaskIsIgnored", Where::OutsideTask, NOSV_AFFINITY_LEVEL_NONE,
     [](Handles& h) {
         nosv_set_task_affinity(nullptr, cpu_affinity(0));
         nosv_set_task_affinity(h.fake_task, cpu_affinity(0));
         return affinity_level(nosv_get_task_affinity(h.fake_task)) + h.fake_bytes_written();
     }},
    {"get_default_affinity_BeforeInit", Where::BeforeInit, NOSV_AFFINITY_LEVEL_NONE,
     [](Handles&) { return affinity_level(nosv_get_default_affinity()); }},
    {"get_error_string_Unknown", Where::BeforeInit, 0,
     [](Handles&) {
         int unknown = 0;
         for (int code : {1, int(NOSV_ERR_MAX), -1000, INT_MIN, INT_MAX})
             unknown += std::strcmp(nosv_get_error_string(code), "Error code not recognized") != 0;
         return unknown;
     }},

    // ---- nosv/hwinfo.h ---------------------------------------------------------------------
    {"get_num_cpus_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_num_cpus(); }},
    {"get_available_cpus_BeforeInit", Where::BeforeInit, kNull,
     [](Handles&) { return is_set(nosv_get_available_cpus()); }},
    {"get_current_logical_cpu_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_current_logical_cpu(); }},
    {"get_current_system_cpu_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_current_system_cpu(); }},
    {"get_num_numa_nodes_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_num_numa_nodes(); }},
    {"get_available_numa_nodes_BeforeInit", Where::BeforeInit, kNull,
     [](Handles&) { return is_set(nosv_get_available_numa_nodes()); }},
    {"get_current_logical_numa_node_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_current_logical_numa_node(); }},
    {"get_current_system_numa_node_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_current_system_numa_node(); }},
    {"get_system_numa_id_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_system_numa_id(0); }},
    {"get_logical_numa_id_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_logical_numa_id(0); }},
    {"get_num_cpus_in_numa_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_num_cpus_in_numa(0); }},
    {"get_num_domains_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_num_domains(NOSV_TOPO_LEVEL_CPU); }},
    {"get_available_domains_BeforeInit", Where::BeforeInit, kNull,
     [](Handles&) { return is_set(nosv_get_available_domains(NOSV_TOPO_LEVEL_CPU)); }},
    {"get_current_logical_domain_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_current_logical_domain(NOSV_TOPO_LEVEL_CPU); }},
    {"get_current_system_domain_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_current_system_domain(NOSV_TOPO_LEVEL_CPU); }},
    {"get_num_cpus_in_domain_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_num_cpus_in_domain(NOSV_TOPO_LEVEL_NODE, 0); }},
    {"get_num_cpus_AfterShutdown", Where::AfterShutdown, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_get_num_cpus(); }},
    {"get_available_cpus_AfterShutdown", Where::AfterShutdown, kNull,
     [](Handles&) { return is_set(nosv_get_available_cpus()); }},
    {"get_current_logical_cpu_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_get_current_logical_cpu(); }},
    {"get_current_system_cpu_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_get_current_system_cpu(); }},
    {"get_current_logical_numa_node_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_get_current_logical_numa_node(); }},
    {"get_current_system_numa_node_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_get_current_system_numa_node(); }},
    {"get_current_logical_domain_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_get_current_logical_domain(NOSV_TOPO_LEVEL_CPU); }},
    {"get_current_system_domain_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_get_current_system_domain(NOSV_TOPO_LEVEL_CPU); }},
    {"get_system_numa_id_Negative", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_get_system_numa_id(-1); }},
    {"get_system_numa_id_PastTheLast", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_get_system_numa_id(nosv_get_num_numa_nodes()); }},
    {"get_logical_numa_id_Negative", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_get_logical_numa_id(-1); }},
    {"get_logical_numa_id_Unmanaged", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_get_logical_numa_id(int(kNoSuchNuma)); }},
    {"get_num_cpus_in_numa_Unmanaged", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_get_num_cpus_in_numa(-1); }},
    {"get_num_domains_BadLevel", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_get_num_domains(kBadLevel); }},
    {"get_available_domains_BadLevel", Where::OutsideTask, kNull,
     [](Handles&) { return is_set(nosv_get_available_domains(kBadLevel)); }},
    {"get_current_logical_domain_BadLevel", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_get_current_logical_domain(kBadLevel); }},
    {"get_current_system_domain_BadLevel", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_get_current_system_domain(kBadLevel); }},
    {"get_num_cpus_in_domain_BadLevel", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_get_num_cpus_in_domain(kBadLevel, 0); }},
    {"get_num_cpus_in_domain_UnmanagedCpu", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_get_num_cpus_in_domain(NOSV_TOPO_LEVEL_CPU, -1); }},
    {"get_num_cpus_in_domain_SecondNode", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_get_num_cpus_in_domain(NOSV_TOPO_LEVEL_NODE, 1); }},

    // ---- joinable tasks ------------------------------------------------------------------------
    {"create_Joinable", Where::OutsideTask, NOSV_SUCCESS,
     [](Handles& h) { nosv_task_t t; return create_rc(&t, h.type, 0, NOSV_CREATE_JOINABLE); }},
    {"join_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { return nosv_join(h.fake_task, nullptr, 0); }},
    {"join_AfterShutdown", Where::AfterShutdown, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { return nosv_join(h.task, nullptr, 0); }},
    {"join_Null", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_join(nullptr, nullptr, UINT64_MAX); }},
    {"join_NotATask", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_join(h.fake_task, nullptr, UINT64_MAX); }},
    {"join_NotJoinable", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_join(h.task, nullptr, UINT64_MAX); }},
    {"join_NeverSubmitted", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles& h) {
         return with_unsubmitted_joinable(h, [](nosv_task_t t) { return nosv_join(t, nullptr, UINT64_MAX); });
     }},
    {"join_Itself", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) {
         return joinable_inline([](nosv_task_t self) { g_body_rc = nosv_join(self, nullptr, UINT64_MAX); });
     }},
    {"join_TimeoutZeroWhileRunning", Where::InTask, NOSV_ERR_TIMEOUT,
     [](Handles&) { return with_running_joinable([](nosv_task_t t) { return nosv_join(t, nullptr, 0); }); }},
    {"join_ShortTimeoutWhileRunning", Where::OutsideTask, NOSV_ERR_TIMEOUT,
     [](Handles&) { return with_running_joinable([](nosv_task_t t) { return nosv_join(t, nullptr, 1000); }); }},
    {"join_WithTimeoutInACompletedCallback", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles& h) { return join_from_a_completed_callback(h); }},
    {"join_all_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { return nosv_join_all(&h.fake_task, nullptr, 1, 0); }},
    {"join_all_NullList", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_join_all(nullptr, nullptr, 1, UINT64_MAX); }},
    {"join_all_EmptyList", Where::OutsideTask, NOSV_SUCCESS,
     [](Handles&) { return nosv_join_all(nullptr, nullptr, 0, UINT64_MAX); }},
    {"join_all_NotJoinable", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_join_all(&h.task, nullptr, 1, UINT64_MAX); }},
    {"join_all_SameTaskTwice", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) {
         return with_running_joinable([](nosv_task_t t) {
             nosv_task_t twice[] = {t, t};
             return nosv_join_all(twice, nullptr, 2, UINT64_MAX);
         });
     }},
    {"wait_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { return nosv_wait(h.fake_task, 0); }},
    {"wait_NotATask", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_wait(h.fake_task, UINT64_MAX); }},
    {"wait_NotJoinable", Where::InTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_wait(h.task, UINT64_MAX); }},
    {"wait_NeverSubmitted", Where::OutsideTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles& h) {
         return with_unsubmitted_joinable(h, [](nosv_task_t t) { return nosv_wait(t, 0); });
     }},
    {"wait_ShortTimeoutWhileBlocked", Where::InBlockedTask, NOSV_ERR_TIMEOUT,
     [](Handles&) { return with_running_joinable([](nosv_task_t t) { return nosv_wait(t, 1000); }); }},
    {"wait_all_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles& h) { return nosv_wait_all(&h.fake_task, 1, 0); }},
    {"wait_all_NullList", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return nosv_wait_all(nullptr, 3, 0); }},
    {"wait_all_NotATask", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles& h) { return nosv_wait_all(&h.fake_task, 1, 0); }},
    {"set_result_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return nosv_set_result(nullptr); }},
    {"set_result_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return nosv_set_result(nullptr); }},
    {"set_result_NotJoinable", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return nosv_set_result(nullptr); }},
    {"set_result_InAJoinableTask", Where::InTask, NOSV_SUCCESS,
     [](Handles&) {
         return joinable_inline([](nosv_task_t) { g_body_rc = nosv_set_result(&g_body_rc); });
     }},
    {"get_error_string_Timeout", Where::BeforeInit, 0,
     [](Handles&) { return int(std::strcmp(nosv_get_error_string(NOSV_ERR_TIMEOUT), "Error code not recognized") == 0); }},

    // ---- coexec/ext.h ------------------------------------------------------------------------
    {"block_enter_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return coexec_block_enter(); }},
    {"block_enter_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return coexec_block_enter(); }},
    {"block_enter_WhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return coexec_block_enter(); }},
    {"lend_cpu_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return coexec_lend_cpu(); }},
    {"lend_cpu_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return coexec_lend_cpu(); }},
    {"lend_cpu_WhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return coexec_lend_cpu(); }},
    {"keep_cpu_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return coexec_keep_cpu(); }},
    {"keep_cpu_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return coexec_keep_cpu(); }},
    {"keep_cpu_WhileBlocked", Where::InBlockedTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return coexec_keep_cpu(); }},
    {"lend_kept_cpu_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return coexec_lend_kept_cpu(); }},
    {"lend_kept_cpu_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return coexec_lend_kept_cpu(); }},
    {"lend_kept_cpu_HoldingACpu", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return coexec_lend_kept_cpu(); }},
    {"lend_kept_cpu_WhileBlocked", Where::InBlockedTask, NOSV_SUCCESS,
     [](Handles&) { return coexec_lend_kept_cpu(); }},
    {"block_exit_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { return coexec_block_exit(); }},
    {"block_exit_OutsideTask", Where::OutsideTask, NOSV_ERR_OUTSIDE_TASK,
     [](Handles&) { return coexec_block_exit(); }},
    {"block_exit_WithoutEnter", Where::InTask, NOSV_ERR_INVALID_OPERATION,
     [](Handles&) { return coexec_block_exit(); }},
    {"cpu_wanted_BeforeInit", Where::BeforeInit, 0, [](Handles&) { return coexec_cpu_wanted(); }},
    {"cpu_wanted_OutsideTask", Where::OutsideTask, 0, [](Handles&) { return coexec_cpu_wanted(); }},
    {"spare_cpus_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { int n; return coexec_spare_cpus(&n); }},
    {"spare_cpus_Null", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return coexec_spare_cpus(nullptr); }},
    {"quantum_BeforeInit", Where::BeforeInit, NOSV_ERR_NOT_INITIALIZED,
     [](Handles&) { uint64_t ns; return coexec_quantum(&ns); }},
    {"quantum_Null", Where::OutsideTask, NOSV_ERR_INVALID_PARAMETER,
     [](Handles&) { return coexec_quantum(nullptr); }},
};
// clang-format on

// Runs a row inside a task body on a worker (Where::InWorkerTask).
struct WorkerCall {
    const Row* row;
    Handles* handles;
    int result;
};

class ApiErrors : public testing::TestWithParam<Row> {
  protected:
    void SetUp() override {
        const Row& row = GetParam();
        g_segment = &segment_;
        fake_memory_.assign(8192, 0);
        h_.fake_bytes = &fake_memory_;
        h_.fake_type = reinterpret_cast<nosv_task_type_t>(fake_memory_.data());
        h_.fake_task = reinterpret_cast<nosv_task_t>(fake_memory_.data() + 4096);
        // Types live in the process, not the instance: usable in every state.
        ASSERT_EQ(nosv_type_init(&h_.type, run_nothing, nullptr, nullptr, "row", nullptr, nullptr,
                                 NOSV_TYPE_INIT_NONE),
                  NOSV_SUCCESS);
        ASSERT_EQ(nosv_type_init(&h_.external, nullptr, nullptr, nullptr, "ext", nullptr, nullptr,
                                 NOSV_TYPE_INIT_EXTERNAL),
                  NOSV_SUCCESS);
        if (row.where == Where::BeforeInit) {
            h_.task = h_.fake_task;
            return;
        }
        ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
        initialized_ = true;
        ASSERT_EQ(nosv_create(&h_.task, h_.type, 0, NOSV_CREATE_NONE), NOSV_SUCCESS);
        if (row.where == Where::AfterShutdown) {
            // The handle stays as a program would keep it: dangling.
            ASSERT_EQ(nosv_destroy(h_.task, NOSV_DESTROY_NONE), NOSV_SUCCESS);
            ASSERT_EQ(nosv_shutdown(), NOSV_SUCCESS);
            initialized_ = false;
            return;
        }
        if (row.where != Where::OutsideTask) {
            ASSERT_EQ(nosv_attach(&main_, nullptr, "main", NOSV_ATTACH_NONE), NOSV_SUCCESS);
        }
        if (row.where == Where::InBlockedTask) {
            ASSERT_EQ(coexec_block_enter(), NOSV_SUCCESS);
            blocked_ = true;
        }
    }

    void TearDown() override {
        if (blocked_) {
            EXPECT_EQ(coexec_block_exit(), NOSV_SUCCESS);
        }
        if (main_) {
            EXPECT_EQ(nosv_detach(NOSV_DETACH_NONE), NOSV_SUCCESS);
        }
        if (initialized_) {
            EXPECT_EQ(nosv_destroy(h_.task, NOSV_DESTROY_NONE), NOSV_SUCCESS);
            EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
        }
        EXPECT_EQ(coexec_is_active(), 0) << "the row left the instance joined";
        if (h_.type) {
            EXPECT_EQ(nosv_type_destroy(h_.type, NOSV_TYPE_DESTROY_NONE), NOSV_SUCCESS);
        }
        if (h_.external) nosv_type_destroy(h_.external, NOSV_TYPE_DESTROY_NONE);
    }

    int call() {
        const Row& row = GetParam();
        if (row.where != Where::InWorkerTask) return row.call(h_);
        nosv_task_type_t type;
        nosv_task_t t;
        EXPECT_EQ(nosv_type_init(
                      &type,
                      [](nosv_task_t self) {
                          auto* c = static_cast<WorkerCall*>(nosv_get_task_metadata(self));
                          c->result = c->row->call(*c->handles);
                      },
                      nullptr, nullptr, "worker", nullptr, nullptr, 0),
                  0);
        EXPECT_EQ(nosv_create(&t, type, sizeof(WorkerCall), 0), 0);
        auto* c = static_cast<WorkerCall*>(nosv_get_task_metadata(t));
        *c = {&row, &h_, INT_MIN};
        // Blocking: this thread waits, without a CPU, until the task completes.
        EXPECT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
        int result = c->result;
        EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
        nosv_type_destroy(type, 0);
        return result;
    }

    test::ScopedSegment segment_;
    std::vector<char> fake_memory_;
    Handles h_;
    nosv_task_t main_ = nullptr;
    bool initialized_ = false;
    bool blocked_ = false;
};

TEST_P(ApiErrors, ReturnsTheDocumentedResult) {
    const Row& row = GetParam();
    EXPECT_EQ(call(), row.expected) << row.name << " in state " << where_name(row.where);
}

INSTANTIATE_TEST_SUITE_P(Table, ApiErrors, testing::ValuesIn(kRows),
                         [](const testing::TestParamInfo<Row>& info) {
                             return std::string(info.param.name);
                         });

// Every row names a distinct case, and every exported function of the
// headers appears in at least one row (by its name's prefix).
TEST(ApiErrorsTable, CoversEveryFunction) {
    std::vector<std::string> names;
    for (const auto& r : kRows)
        names.push_back(r.name);
    for (size_t i = 0; i < names.size(); ++i)
        for (size_t j = i + 1; j < names.size(); ++j)
            EXPECT_NE(names[i], names[j]);
    const char* functions[] = {"init",
                               "shutdown",
                               "self",
                               "type_init",
                               "type_destroy",
                               "create",
                               "destroy",
                               "submit",
                               "pause",
                               "yield",
                               "schedpoint",
                               "waitfor",
                               "increase_event_counter",
                               "decrease_event_counter",
                               "has_events",
                               "task_had_events",
                               "attach",
                               "detach",
                               "get_task_metadata",
                               "get_task_type",
                               "get_task_priority",
                               "set_task_priority",
                               "get_task_type_run_callback",
                               "get_task_type_end_callback",
                               "get_task_type_completed_callback",
                               "get_task_type_label",
                               "get_task_type_metadata",
                               "get_task_affinity",
                               "set_task_affinity",
                               "get_default_affinity",
                               "get_error_string",
                               "get_num_cpus",
                               "get_available_cpus",
                               "get_current_logical_cpu",
                               "get_current_system_cpu",
                               "get_num_numa_nodes",
                               "get_available_numa_nodes",
                               "get_current_logical_numa_node",
                               "get_current_system_numa_node",
                               "get_system_numa_id",
                               "get_logical_numa_id",
                               "get_num_cpus_in_numa",
                               "get_num_domains",
                               "get_available_domains",
                               "get_current_logical_domain",
                               "get_current_system_domain",
                               "get_num_cpus_in_domain",
                               "join",
                               "join_all",
                               "wait",
                               "wait_all",
                               "set_result",
                               "block_enter",
                               "lend_cpu",
                               "keep_cpu",
                               "block_exit",
                               "cpu_wanted",
                               "spare_cpus",
                               "quantum",
                               "is_active",
                               "init_quiet"};
    for (std::string f : functions) {
        bool found = false;
        for (const auto& n : names)
            found = found || n.rfind(f + "_", 0) == 0;
        EXPECT_TRUE(found) << "no row for " << f;
    }
}

// The last nosv_shutdown() joins every worker, so from a task body on a
// worker it is refused, the nesting count unchanged (it used to join the
// worker itself: std::terminate). A nested one only counts down.
TEST(ApiErrors, LastShutdownFromAWorkerIsAnInvalidOperation) {
    test::ScopedSegment segment;
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    nosv_task_t main_task;
    ASSERT_EQ(nosv_attach(&main_task, nullptr, "main", 0), NOSV_SUCCESS);
    static std::atomic<int> rc{INT_MIN};
    nosv_task_type_t type;
    ASSERT_EQ(nosv_type_init(
                  &type, [](nosv_task_t) { rc = nosv_shutdown(); }, nullptr, nullptr, "worker",
                  nullptr, nullptr, 0),
              0);
    nosv_task_t t;
    ASSERT_EQ(nosv_create(&t, type, 0, 0), 0);
    ASSERT_EQ(nosv_submit(t, NOSV_SUBMIT_BLOCKING), NOSV_SUCCESS);
    EXPECT_EQ(rc.load(), NOSV_ERR_INVALID_OPERATION);
    EXPECT_EQ(nosv_destroy(t, 0), NOSV_SUCCESS);
    nosv_type_destroy(type, 0);
    EXPECT_EQ(nosv_detach(0), NOSV_SUCCESS);
    EXPECT_EQ(nosv_shutdown(), NOSV_SUCCESS);
}

} // namespace
