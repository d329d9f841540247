// The shared segment: naming and permissions, identity checks, two
// mappings, robust lock with a dead holder, process liveness.
#include "support.hpp"

#include "shm/liveness.hpp"
#include "shm/robust_mutex.hpp"

#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>

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
    EXPECT_EQ(m->header.max_cpus, kMaxCpus);
    EXPECT_GE(kMaxCpus, 256);
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

TEST(Segment, ForeignSegmentIsRejectedWithClearError) {
    auto o = named(unique("foreign"));
    Unlinker u{o};
    int fd = ::shm_open(segment_shm_name(o).c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    std::string junk(8192, 'x');
    ASSERT_EQ(::write(fd, junk.data(), junk.size()), ssize_t(junk.size()));
    ::close(fd);
    SegmentError e;
    auto m = SegmentMapping::open(o, e);
    EXPECT_FALSE(m);
    EXPECT_EQ(e.kind, SegmentError::Kind::Foreign);
    EXPECT_NE(e.message.find("not a coexec segment"), std::string::npos);
}

TEST(Segment, OtherAbiVersionIsRejectedWithClearError) {
    auto o = named(unique("abi"));
    Unlinker u{o};
    SegmentError e;
    {
        auto m = SegmentMapping::open(o, e);
        ASSERT_TRUE(m);
        m->header.abi_version = kAbiVersion + 7;
    }
    auto m = SegmentMapping::open(o, e);
    EXPECT_FALSE(m);
    EXPECT_EQ(e.kind, SegmentError::Kind::VersionMismatch);
    EXPECT_NE(e.message.find("ABI version"), std::string::npos);
}

TEST(Segment, TruncatedSegmentIsRejected) {
    auto o = named(unique("trunc"));
    Unlinker u{o};
    int fd = ::shm_open(segment_shm_name(o).c_str(), O_CREAT | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, 16), 0);
    ::close(fd);
    SegmentError e;
    EXPECT_FALSE(SegmentMapping::open(o, e));
    EXPECT_EQ(e.kind, SegmentError::Kind::Foreign);
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
    for (int i = 0; i < 200 && process_alive(child, child_start); ++i)
        ::usleep(5000);
    EXPECT_FALSE(process_alive(child, child_start));
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
