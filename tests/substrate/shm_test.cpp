// The shared segment: naming and permissions, identity checks, leftover
// segments reclaimed, two mappings, robust lock with a dead holder, process
// liveness.
#include "support.hpp"

#include "scheduler/invariants.hpp"
#include "scheduler/shared_scheduler.hpp"
#include "shm/liveness.hpp"
#include "shm/robust_mutex.hpp"

#include <coexec/ext.h>
#include <nosv.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <vector>

using namespace coexec;
using coexec::test::Shared;
using namespace coexec::shm;

namespace {

SegmentOptions named(const std::string& name, Isolation iso = Isolation::User) {
    SegmentOptions o;
    o.name = name;
    o.isolation = iso;
    return o;
}

std::string unique(const char* tag) {
    return std::string(tag) + std::to_string(::getpid());
}

struct Unlinker {
    SegmentOptions o;
    ~Unlinker() {
        std::string m;
        SegmentMapping::unlink(o, m);
    }
};

// Writes a segment file by hand, as another program or version would.
void write_file(const SegmentOptions& o, const void* data, size_t size) {
    int fd = ::shm_open(segment_shm_name(o).c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, data, size), ssize_t(size));
    ::close(fd);
}

off_t file_size(const SegmentOptions& o) {
    struct stat st {};
    if (::stat(("/dev/shm" + segment_shm_name(o)).c_str(), &st) != 0) return -1;
    return st.st_size;
}

// A freshly formatted segment of this version.
void expect_fresh(const SegmentMapping& m, const SegmentOptions& o) {
    ASSERT_TRUE(m);
    EXPECT_EQ(m->header.magic.load(), kMagic);
    EXPECT_EQ(m->header.abi_version, kAbiVersion);
    EXPECT_EQ(m->header.max_cpus, cpu_slots_for(o));
    EXPECT_EQ(m->header.total_size, segment_layout(cpu_slots_for(o)).total);
    EXPECT_EQ(m->header.alive_count, 0);
    EXPECT_EQ(file_size(o), off_t(m->header.total_size));
}

} // namespace

TEST(Segment, PerUserNameAndMode0600) {
    auto o = named(unique("mode"));
    Unlinker u{o};
    SegmentError e;
    auto m = SegmentMapping::open(o, e);
    ASSERT_TRUE(m) << e.message;
    EXPECT_NE(m.shm_name().find(".u" + std::to_string(::geteuid())), std::string::npos);
    struct stat st {};
    ASSERT_EQ(::stat(("/dev/shm" + m.shm_name()).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(m->header.abi_version, kAbiVersion);
    EXPECT_EQ(m->header.max_cpus, ::sysconf(_SC_NPROCESSORS_CONF));
    EXPECT_GE(kMaxCpus, 4096);
    EXPECT_GE(kMaxProcs, 512);
}

TEST(Segment, IsolationLevelsHaveDistinctNamesAndModes) {
    auto g = named(unique("grp"), Isolation::Group);
    auto p = named(unique("pub"), Isolation::Public);
    Unlinker ug{g}, up{p};
    EXPECT_NE(segment_shm_name(g), segment_shm_name(p));
    SegmentError e;
    auto mg = SegmentMapping::open(g, e);
    ASSERT_TRUE(mg) << e.message;
    auto mp = SegmentMapping::open(p, e);
    ASSERT_TRUE(mp) << e.message;
    struct stat st {};
    ASSERT_EQ(::stat(("/dev/shm" + mg.shm_name()).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0660u);
    ASSERT_EQ(::stat(("/dev/shm" + mp.shm_name()).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0666u);
    // Process isolation has no name at all.
    auto local = named("x", Isolation::Process);
    EXPECT_TRUE(segment_shm_name(local).empty());
    auto ml = SegmentMapping::open(local, e);
    EXPECT_TRUE(ml) << e.message;
}

TEST(Segment, AttachWithoutCreateReportsMissingSegment) {
    auto o = named(unique("missing"));
    o.create = false;
    SegmentError e;
    auto m = SegmentMapping::open(o, e);
    EXPECT_FALSE(m);
    EXPECT_EQ(e.kind, SegmentError::Kind::NotFound);
    EXPECT_NE(e.message.find("no coexec segment"), std::string::npos);
}

TEST(Segment, ForeignSegmentIsRefusedOnAttachAndReplacedWhenUnused) {
    auto o = named(unique("foreign"));
    Unlinker u{o};
    std::string junk(8192, 'x');
    write_file(o, junk.data(), junk.size());
    SegmentError e;
    auto attach = o;
    attach.create = false;
    EXPECT_FALSE(SegmentMapping::open(attach, e));
    EXPECT_EQ(e.kind, SegmentError::Kind::Foreign);
    EXPECT_NE(e.message.find("not a coexec segment"), std::string::npos);
    // Nobody has it open: a creating open starts afresh.
    auto m = SegmentMapping::open(o, e);
    ASSERT_TRUE(m) << e.message;
    expect_fresh(m, o);
}

TEST(Segment, OldAbiSegmentWithoutUsersIsReplaced) {
    auto o = named(unique("oldabi"));
    Unlinker u{o};
    // What an older coexec left: its own header, a smaller segment, and
    // non-zero state beyond the header.
    std::vector<char> old(64 * 1024, '\x5a');
    Header h{};
    h.magic.store(kMagic);
    h.abi_version = kAbiVersion - 1;
    h.total_size = old.size();
    std::memcpy(static_cast<void*>(old.data()), &h, sizeof(h));
    write_file(o, old.data(), old.size());
    SegmentError e;
    auto m = SegmentMapping::open(o, e);
    ASSERT_TRUE(m) << e.message;
    expect_fresh(m, o);
    // Zeroed, not just re-headed: the old bytes are gone.
    const auto* bytes = reinterpret_cast<const unsigned char*>(m.get());
    EXPECT_EQ(bytes[old.size() - 1], 0);
    EXPECT_EQ(m->threads[0].proc, 0);
}

TEST(Segment, OtherAbiSegmentInUseIsRefusedWithClearError) {
    auto o = named(unique("abi"));
    Unlinker u{o};
    struct Flags {
        std::atomic<bool> mapped, release;
    };
    Shared<Flags> flags;
    // A live process of "another version": it maps the segment (holding it
    // in use, as every open mapping does) and its header says another ABI.
    pid_t user = test::fork_child([&] {
        SegmentError ce;
        auto m = SegmentMapping::open(o, ce);
        if (!m) return 11;
        m->header.abi_version = kAbiVersion + 7;
        flags->mapped = true;
        for (int i = 0; i < 6000 && !flags->release; ++i)
            ::usleep(5000);
        return 0;
    });
    for (int i = 0; i < 6000 && !flags->mapped; ++i)
        ::usleep(5000);
    ASSERT_TRUE(flags->mapped);
    SegmentError e;
    auto m = SegmentMapping::open(o, e);
    EXPECT_FALSE(m);
    EXPECT_EQ(e.kind, SegmentError::Kind::VersionMismatch);
    EXPECT_NE(e.message.find("ABI version " + std::to_string(kAbiVersion + 7)), std::string::npos)
        << e.message;
    flags->release = true;
    EXPECT_EQ(test::wait_child(user), 0);
    // Its last user is gone: now it is a leftover and is replaced.
    m = SegmentMapping::open(o, e);
    ASSERT_TRUE(m) << e.message;
    expect_fresh(m, o);
}

TEST(Segment, TruncatedSegmentIsRefusedOnAttachAndReplacedWhenUnused) {
    auto o = named(unique("trunc"));
    Unlinker u{o};
    char bytes[16] = {};
    write_file(o, bytes, sizeof(bytes));
    SegmentError e;
    auto attach = o;
    attach.create = false;
    EXPECT_FALSE(SegmentMapping::open(attach, e));
    EXPECT_EQ(e.kind, SegmentError::Kind::Foreign);
    EXPECT_NE(e.message.find("truncated"), std::string::npos);
    auto m = SegmentMapping::open(o, e);
    ASSERT_TRUE(m) << e.message;
    expect_fresh(m, o);
}

// A process killed while it holds a CPU leaves its segment behind; the next
// nosv_init reaps it and starts from a clean segment, and nothing is left
// in /dev/shm once that process shuts down.
TEST(Segment, SegmentOfKilledProcessIsReclaimedAtNextInit) {
    test::ScopedSegment seg;
    const std::string path = "/dev/shm" + segment_shm_name(seg.options());
    ASSERT_EQ(test::run_member_killed_while_attached(), 128 + SIGKILL);
    ASSERT_EQ(::access(path.c_str(), F_OK), 0) << "the killed process left its segment";
    {
        auto m = seg.map();
        ASSERT_TRUE(m);
        EXPECT_EQ(m->header.alive_count, 1); // nobody noticed yet
        int running = 0;
        for (int c = 0; c < m->header.cpu_count; ++c)
            running += m->cpus[c].state.load() == CpuState::Running;
        EXPECT_EQ(running, 1);
    }
    {
        auto m = seg.map(); // a reader (`coexec ps`) does not remove a segment with members
    }
    ASSERT_EQ(::access(path.c_str(), F_OK), 0) << "a reader removed the dead process's segment";
    struct Seen {
        std::atomic<int> alive_count{-1}, cpus{0}, free_cpus{0}, unowned_cpus{0};
        std::atomic<pid_t> alive_pid{0};
    };
    Shared<Seen> seen;
    pid_t next = test::fork_child([&] {
        if (nosv_init() != 0) return 11;
        {
            auto m = seg.map();
            if (!m) return 12;
            seen->alive_count = m->header.alive_count;
            if (m->header.alive_count > 0) seen->alive_pid = m->procs[m->header.alive[0]].pid;
            seen->cpus = m->header.cpu_count;
            for (int c = 0; c < m->header.cpu_count; ++c) {
                seen->free_cpus += m->cpus[c].state.load() == CpuState::Free;
                seen->unowned_cpus += m->cpus[c].owner_proc.load() == kNone;
            }
        }
        return nosv_shutdown() == 0 ? 0 : 13;
    });
    ASSERT_EQ(test::wait_child(next, std::chrono::seconds(20)), 0);
    EXPECT_EQ(seen->alive_count.load(), 1) << "the dead process is still registered";
    EXPECT_EQ(seen->alive_pid.load(), next);
    EXPECT_GT(seen->cpus.load(), 0);
    EXPECT_EQ(seen->free_cpus.load(), seen->cpus.load()) << "CPUs of the dead process not freed";
    EXPECT_EQ(seen->unowned_cpus.load(), seen->cpus.load());
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << "the last process out leaves nothing behind";
}

// A new segment is never constructed: its zero bytes are taken as every
// slot's starting state (shm/segment.cpp). A default member initializer
// with another value would break that: constructing each type over zero
// bytes shows it (default-initialization writes only what the type's own
// initializers and its atomics' constructors write, never the padding).
template <typename T>
bool starts_as_zero_bytes() {
    alignas(T) static unsigned char buffer[sizeof(T)];
    std::memset(buffer, 0, sizeof buffer);
    T* object = new (buffer) T;
    const bool zero =
        std::all_of(buffer, buffer + sizeof buffer, [](unsigned char b) { return b == 0; });
    object->~T();
    return zero;
}

TEST(Segment, EverySlotStartsAsZeroBytes) {
    EXPECT_TRUE(starts_as_zero_bytes<Header>());
    EXPECT_TRUE(starts_as_zero_bytes<CpuSlot>());
    EXPECT_TRUE(starts_as_zero_bytes<ThreadSlot>());
    EXPECT_TRUE(starts_as_zero_bytes<ProcSlot>());
    EXPECT_TRUE(starts_as_zero_bytes<TraceRing>());
}

// The segment is sized for 512 processes, 8192 threads, the node's CPUs and
// their trace rings, but starts as the zeros of a fresh file and is never
// written whole: a member allocates the pages it uses, not the whole
// segment (and never faults in the rest at every start of an instance).
TEST(Segment, AMemberAllocatesOnlyThePagesItUses) {
    test::ScopedSegment seg;
    const std::string path = "/dev/shm" + segment_shm_name(seg.options());
    Shared<std::atomic<long long>> allocated;
    *allocated = -1;
    pid_t child = test::fork_child([&] {
        if (nosv_init() != 0) return 11;
        nosv_task_t self = nullptr;
        if (nosv_attach(&self, nullptr, "pages", NOSV_ATTACH_NONE) != 0) return 12;
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0) return 13;
        *allocated = static_cast<long long>(st.st_blocks) * 512;
        if (nosv_detach(NOSV_DETACH_NONE) != 0) return 14;
        return nosv_shutdown() == 0 ? 0 : 15;
    });
    ASSERT_EQ(test::wait_child(child, std::chrono::seconds(20)), 0);
    EXPECT_GT(allocated->load(), 0);
    const auto size = static_cast<long long>(segment_layout(cpu_slots_for(seg.options())).total);
    EXPECT_LT(allocated->load(), size / 16) << "a member with one attached thread allocated "
                                            << allocated->load() << " of " << size << " bytes";
}

TEST(Segment, TwoMappingsAtDifferentAddressesSeeTheSameState) {
    auto o = named(unique("twice"));
    Unlinker u{o};
    SegmentError e;
    auto a = SegmentMapping::open(o, e);
    ASSERT_TRUE(a) << e.message;
    auto b = a.map_again(e);
    ASSERT_TRUE(b) << e.message;
    ASSERT_NE(static_cast<void*>(a.get()), static_cast<void*>(b.get()));
    // Index-based links written through one mapping are followed through
    // the other: walk the thread free list from both.
    a->threads[0].next = 5;
    a->threads[5].next = 9;
    a->header.thread_free_head = 0;
    int hops = 0;
    for (int32_t t = b->header.thread_free_head; t != 9 && hops < 3; t = b->threads[t].next)
        ++hops;
    EXPECT_EQ(hops, 2);
    // The lock taken through one mapping excludes the other.
    ASSERT_EQ(pthread_mutex_lock(&a->header.lock), 0);
    EXPECT_EQ(pthread_mutex_trylock(&b->header.lock), EBUSY);
    pthread_mutex_unlock(&a->header.lock);
    EXPECT_EQ(pthread_mutex_trylock(&b->header.lock), 0);
    pthread_mutex_unlock(&b->header.lock);
}

TEST(Segment, UserSegmentOwnedByAnotherModeIsRefused) {
    auto o = named(unique("perm"));
    Unlinker u{o};
    int fd = ::shm_open(segment_shm_name(o).c_str(), O_CREAT | O_RDWR, 0644);
    ASSERT_GE(fd, 0);
    ::fchmod(fd, 0644);
    ::close(fd);
    SegmentError e;
    EXPECT_FALSE(SegmentMapping::open(o, e));
    EXPECT_EQ(e.kind, SegmentError::Kind::Permission);
}

TEST(RobustLock, DeadHolderIsRepairedByTheNextLocker) {
    Shared<pthread_mutex_t> m;
    ASSERT_EQ(robust_mutex_init(*m), 0);
    pid_t child = test::fork_child([&] {
        pthread_mutex_lock(&*m);
        ::raise(SIGKILL); // dies holding the lock
        return 0;
    });
    EXPECT_EQ(test::wait_child(child), 128 + SIGKILL);
    int repairs = 0;
    {
        RobustLock lock(*m, [&] { ++repairs; });
    }
    EXPECT_EQ(repairs, 1);
    // Consistent again: the next locker sees a healthy lock.
    {
        RobustLock lock(*m, [&] { ++repairs; });
    }
    EXPECT_EQ(repairs, 1);
}

TEST(Liveness, PidAndStartTimeIdentifyAProcess) {
    uint64_t start = process_start_time(::getpid());
    EXPECT_GT(start, 0u);
    EXPECT_TRUE(process_alive(::getpid(), start));
    EXPECT_FALSE(process_alive(::getpid(), start + 1)); // a reused pid
    pid_t child = test::fork_child([] { return 0; });
    uint64_t child_start = process_start_time(child);
    // Exited but not reaped: a zombie counts as dead.
    EXPECT_TRUE(test::wait_until([&] { return !process_alive(child, child_start); }));
    test::wait_child(child);
    EXPECT_FALSE(process_alive(child, child_start));
    EXPECT_FALSE(process_alive(0, 0));
}

TEST(Segment, RemovedOnlyByTheLastOpenMapping) {
    auto o = named(unique("last"));
    Unlinker u{o};
    SegmentError e;
    auto a = SegmentMapping::open(o, e);
    ASSERT_TRUE(a) << e.message;
    const std::string path = "/dev/shm" + a.shm_name();
    {
        auto b = SegmentMapping::open(o, e); // another opener, as another process would be
        ASSERT_TRUE(b) << e.message;
        EXPECT_FALSE(a.remove_if_last());
        EXPECT_FALSE(b.remove_if_last());
        EXPECT_EQ(::access(path.c_str(), F_OK), 0);
    }
    EXPECT_TRUE(a.remove_if_last());
    EXPECT_NE(::access(path.c_str(), F_OK), 0);
    // The old mapping stays usable; a new opener gets a fresh segment.
    a->header.alive_count = 7;
    auto c = SegmentMapping::open(o, e);
    ASSERT_TRUE(c) << e.message;
    EXPECT_EQ(c->header.alive_count, 0);
}

// The last process out cannot remove the segment while a reader (`coexec
// top`) has it mapped; the reader, last out, removes it then.
TEST(Segment, LastReaderOutRemovesTheSegmentOfAFinishedRun) {
    test::ScopedSegment seg;
    const std::string path = "/dev/shm" + segment_shm_name(seg.options());
    struct Flags {
        std::atomic<bool> registered, release;
    };
    Shared<Flags> flags;
    pid_t member = test::fork_child([&] {
        if (nosv_init() != 0) return 11;
        flags->registered = true;
        for (int i = 0; i < 6000 && !flags->release; ++i)
            ::usleep(5000);
        return nosv_shutdown() == 0 ? 0 : 12;
    });
    for (int i = 0; i < 6000 && !flags->registered; ++i)
        ::usleep(5000);
    ASSERT_TRUE(flags->registered);
    {
        auto reader = seg.map();
        ASSERT_TRUE(reader);
        SegmentError e;
        auto again = reader.map_again(e);
        ASSERT_TRUE(again) << e.message;
        flags->release = true;
        ASSERT_EQ(test::wait_child(member), 0);
        EXPECT_EQ(reader->header.alive_count, 0);
        EXPECT_EQ(::access(path.c_str(), F_OK), 0) << "removed while still mapped";
        // Leaving while another view is still mapped removes nothing.
        again = SegmentMapping();
        EXPECT_EQ(::access(path.c_str(), F_OK), 0) << "removed while the reader still maps it";
    }
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << "the last reader out left the segment behind";
}

// Mappings that leave at the same moment: whichever is last sees it is last
// and removes the segment, in every round.
TEST(Segment, MappingsLeavingAtOnceLeaveNothingBehind) {
    constexpr int kRounds = 40;
    constexpr int kChildren = 3;
    struct Flags {
        std::atomic<int> ready, go;
    };
    Shared<Flags> flags;
    for (int round = 0; round < kRounds; ++round) {
        auto o = named(unique("leave") + "r" + std::to_string(round));
        Unlinker u{o};
        const std::string path = "/dev/shm" + segment_shm_name(o);
        SegmentError e;
        auto mine = std::make_unique<SegmentMapping>(SegmentMapping::open(o, e));
        ASSERT_TRUE(*mine) << e.message;
        flags->ready = 0;
        flags->go = 0;
        std::vector<pid_t> children;
        for (int c = 0; c < kChildren; ++c)
            children.push_back(test::fork_child([&] {
                auto attach = o;
                attach.create = false;
                SegmentError ce;
                auto m = SegmentMapping::open(attach, ce);
                if (!m) return 11;
                flags->ready++;
                // Spin, to leave together with the others (bounded, should
                // the parent be gone).
                const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                while (!flags->go.load() && std::chrono::steady_clock::now() < give_up) {
                }
                m = SegmentMapping();
                return 0;
            }));
        for (int i = 0; i < 6000 && flags->ready.load() < kChildren; ++i)
            ::usleep(1000);
        ASSERT_EQ(flags->ready.load(), kChildren);
        flags->go = 1;
        mine.reset();
        for (pid_t c : children)
            ASSERT_EQ(test::wait_child(c), 0);
        ASSERT_NE(::access(path.c_str(), F_OK), 0) << "left behind in round " << round;
    }
}

// A member that exits while its threads still use coexec (without
// nosv_shutdown(): a pool the program started, blocked for good) cannot
// leave, and others still have the segment open. The last of them to close,
// a member that shuts down or a reader, must still remove the name, even
// while the exiting process's open file description outlives its exit path
// (here a child it forked keeps it, as the exiting process itself does
// until the kernel ends its last thread).
class ExitingMember {
  public:
    ExitingMember() {
        member_ = test::fork_child([this] {
            if (nosv_init() != 0) return 11;
            flags_->holder = ::fork();
            if (flags_->holder == 0) {
                for (int i = 0; i < 12000 && !flags_->release; ++i)
                    ::usleep(5000);
                std::_Exit(0);
            }
            flags_->ready = true;
            for (int i = 0; i < 12000 && !flags_->exit; ++i)
                ::usleep(5000);
            std::exit(0); // the runtime's exit path: no nosv_shutdown()
        });
        EXPECT_TRUE(test::wait_until([this] { return flags_->ready.load(); }));
    }
    // Exits the member through its exit path; the child it forked keeps its
    // open file description.
    int exit() {
        flags_->exit = true;
        return test::wait_child(member_);
    }
    ~ExitingMember() { flags_->release = true; }

  private:
    struct Flags {
        std::atomic<bool> ready, exit, release;
        pid_t holder;
    };
    Shared<Flags> flags_;
    pid_t member_ = -1;
};

TEST(Segment, AMemberExitingWithoutShutdownLeavesTheNameToTheLastMemberOut) {
    test::ScopedSegment seg;
    const std::string path = "/dev/shm" + segment_shm_name(seg.options());
    ExitingMember exiting;
    ASSERT_EQ(nosv_init(), NOSV_SUCCESS);
    ASSERT_EQ(exiting.exit(), 0);
    EXPECT_EQ(::access(path.c_str(), F_OK), 0) << "removed while a member stays";
    ASSERT_EQ(nosv_shutdown(), NOSV_SUCCESS);
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << "the last member out left the segment behind";
}

TEST(Segment, AMemberExitingWithoutShutdownLeavesTheNameToTheLastReaderOut) {
    test::ScopedSegment seg;
    const std::string path = "/dev/shm" + segment_shm_name(seg.options());
    ExitingMember exiting;
    {
        auto reader = seg.map();
        ASSERT_TRUE(reader);
        ASSERT_EQ(exiting.exit(), 0);
        // Its slot stays until a member reaps it; the reader counts it gone.
        EXPECT_EQ(reader->header.alive_count, 1);
        EXPECT_EQ(::access(path.c_str(), F_OK), 0) << "removed while still mapped";
    }
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << "the last reader out left the segment behind";
}

// ---- sized at creation ------------------------------------------------------

// A segment is sized for the CPU slots its creator asks for, up to 4,096:
// every per-CPU array (the slots, each process's row of bound ready counters,
// the trace rings) lies inside the file, each slot at its own address, and
// a fresh segment still allocates only the pages it uses.
TEST(Segment, ASegmentSizedFor4096CpusHoldsThemAll) {
    auto o = named(unique("big"));
    Unlinker u{o};
    o.cpu_slots = kMaxCpus;
    o.initialize = [](Segment& s) {
        scheduler::Discovery found;
        for (int i = 0; i < kMaxCpus; ++i)
            found.cpus.push_back({i, i, i * 16 / kMaxCpus});
        scheduler::SharedScheduler(s).format_unpublished(found, SegmentConfig{});
    };
    SegmentError e;
    auto m = SegmentMapping::open(o, e);
    ASSERT_TRUE(m) << e.message;
    Segment& s = *m.get();
    const SegmentLayout l = segment_layout(kMaxCpus);
    EXPECT_EQ(s.header.max_cpus, kMaxCpus);
    EXPECT_EQ(s.header.cpu_count, kMaxCpus);
    EXPECT_EQ(s.header.numa_count, 16);
    EXPECT_EQ(file_size(o), off_t(l.total));
    EXPECT_EQ(m.size(), l.total);
    const auto* base = reinterpret_cast<const char*>(&s);
    auto offset = [&](const void* p) { return size_t(static_cast<const char*>(p) - base); };
    EXPECT_EQ(offset(&s.cpus[0]), l.cpus);
    EXPECT_EQ(offset(&s.cpus[kMaxCpus - 1]) + sizeof(CpuSlot), l.ready_cpu);
    EXPECT_EQ(s.cpus[kMaxCpus - 1].system_id, kMaxCpus - 1);
    EXPECT_EQ(s.cpus[kMaxCpus - 1].numa, 15);
    EXPECT_LE(offset(ready_cpu_row(s, kMaxProcs - 1) + kMaxCpus), l.traces);
    EXPECT_EQ(offset(&s.traces[process_trace_ring(s.header)]) + sizeof(TraceRing), l.total);
    EXPECT_TRUE(placed_by_layout(s));
    EXPECT_EQ(scheduler::check_invariants(s), std::vector<std::string>{});
    // Another mapping, at another address, checks and reads the same slots.
    auto again = SegmentMapping::open(o, e);
    ASSERT_TRUE(again) << e.message;
    EXPECT_EQ(again->cpus[kMaxCpus - 1].system_id, kMaxCpus - 1);
    struct stat st {};
    ASSERT_EQ(::stat(("/dev/shm" + segment_shm_name(o)).c_str(), &st), 0);
    EXPECT_LT(static_cast<long long>(st.st_blocks) * 512, static_cast<long long>(l.total / 16));
}

// A segment whose header claims other CPU slots than its file has room for
// is refused, and replaced when nobody has it open.
TEST(Segment, ASegmentWhoseSizeDisagreesWithItsCpuSlotsIsRefused) {
    auto o = named(unique("shape"));
    Unlinker u{o};
    o.cpu_slots = 2;
    SegmentError e;
    {
        auto m = SegmentMapping::open(o, e);
        ASSERT_TRUE(m) << e.message;
        m->header.max_cpus = 3; // the file has room for 2
        auto other = SegmentMapping::open(o, e);
        EXPECT_FALSE(other);
        EXPECT_EQ(e.kind, SegmentError::Kind::Foreign);
        EXPECT_NE(e.message.find("malformed"), std::string::npos) << e.message;
    }
    auto fresh = SegmentMapping::open(o, e);
    ASSERT_TRUE(fresh) << e.message;
    EXPECT_EQ(fresh->header.max_cpus, 2);
}

// A member that discovers more CPUs than an existing segment was created
// for is refused with an error that says so, never given a cut table.
TEST(Segment, MoreCpusThanTheSegmentWasCreatedForIsAnError) {
    if (::sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 online CPUs";
    test::ScopedSegment seg("topology.binding=all");
    SegmentOptions o = seg.options();
    o.create = true;
    o.cpu_slots = 1; // as a creator that saw one CPU would size it
    o.initialize = [](Segment& s) {
        scheduler::SharedScheduler(s).format_unpublished({}, SegmentConfig{});
    };
    SegmentError e;
    auto small = SegmentMapping::open(o, e);
    ASSERT_TRUE(small) << e.message;
    Shared<std::array<char, 512>> message;
    pid_t child = test::fork_child([&] {
        const int rc = nosv_init();
        std::snprintf(message->data(), message->size(), "%s", coexec_last_error());
        return rc == NOSV_ERR_INVALID_PARAMETER ? 0 : 1;
    });
    EXPECT_EQ(test::wait_child(child, std::chrono::seconds(20)), 0);
    const std::string said = message->data();
    EXPECT_NE(said.find("CPUs to manage"), std::string::npos) << said;
    EXPECT_NE(said.find("was created for 1"), std::string::npos) << said;
    EXPECT_EQ(small->header.cpu_count, 0);
}
