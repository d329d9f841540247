#include "segment.hpp"

#include "clock.hpp"
#include "robust_mutex.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/mman.h>
#include <sys/stat.h>
#include <type_traits>
#include <unistd.h>
#include <utility>

namespace coexec::shm {
namespace {

mode_t mode_for(Isolation isolation) {
    switch (isolation) {
    case Isolation::Group:
        return 0660;
    case Isolation::Public:
        return 0666;
    default:
        return 0600;
    }
}

SegmentError fail(SegmentError::Kind kind, std::string message) {
    return SegmentError{kind, std::move(message)};
}

std::string errno_text(const char* what, const std::string& name) {
    return std::string(what) + " " + name + ": " + std::strerror(errno);
}

// Every slot's and ring's starting state is all zero bytes: C++20 atomics
// value-initialise to 0, the enums' Unused, Free and None are 0, and nothing
// has a default member initializer. Constructing a Segment would write 6.5 MiB
// of zeros over a mapping that is already zero (a fresh file, or an anonymous
// map) and fault in every page of it, several milliseconds at each start of an
// instance. The creator uses the zeros as they are, as every entering member uses the
// segment it maps; pages are then allocated as the slots and the trace rings
// are first used. The asserts below and Segment.EverySlotStartsAsZeroBytes
// keep the types such that this holds.
static_assert(std::is_trivially_destructible_v<Segment>);
static_assert(ThreadState::Unused == ThreadState{0} && ProcState::Unused == ProcState{0} &&
              CpuState::Free == CpuState{0} && TraceKind::None == TraceKind{0});
Segment* zeroed_segment(void* zero_filled) {
    return std::launder(static_cast<Segment*>(zero_filled));
}

const char* bytes_of(const Segment& s) {
    return reinterpret_cast<const char*>(&s);
}

// Where a segment's per-CPU arrays are, by its layout.
template <class T>
const T* at(const Segment& s, size_t offset) {
    return reinterpret_cast<const T*>(bytes_of(s) + offset);
}
// Sets up a zeroed segment of `l.total` bytes sized for `cpus` CPU slots:
// identity, sizes, the per-CPU arrays' places and the lock; then the
// initializer.
void format(Segment& s, const SegmentOptions& options, int32_t cpus) {
    lay_out(s, cpus);
    Header& h = s.header;
    h.abi_version = kAbiVersion;
    h.header_size = sizeof(Header);
    h.max_procs = kMaxProcs;
    h.max_threads = kMaxThreads;
    h.max_numa = kMaxNuma;
    h.created_ns = now_ns();
    h.config.isolation = options.isolation;
    robust_mutex_init(h.lock);
    // The tables are the initializer's: the scheduler lays them out
    // (SharedScheduler::format), here as at a reclaim.
    if (options.initialize) options.initialize(s);
    // Publish last: a reader that sees the magic sees a formatted segment.
    h.magic.store(kMagic, std::memory_order_release);
}

} // namespace

void lay_out(Segment& s, int32_t cpus) {
    const SegmentLayout l = segment_layout(cpus);
    s.header.total_size = l.total;
    s.header.max_cpus = cpus;
    s.cpus.place(at<CpuSlot>(s, l.cpus));
    s.traces.place(at<TraceRing>(s, l.traces));
    s.ready_cpu.place(at<std::atomic<int64_t>>(s, l.ready_cpu));
    s.proc_cpus.place(at<uint64_t>(s, l.proc_cpus));
}

bool placed_by_layout(const Segment& s) {
    if (s.header.max_cpus < 1 || s.header.max_cpus > kMaxCpus) return false;
    const SegmentLayout l = segment_layout(s.header.max_cpus);
    return s.cpus.placed_at(at<CpuSlot>(s, l.cpus)) &&
           s.traces.placed_at(at<TraceRing>(s, l.traces)) &&
           s.ready_cpu.placed_at(at<std::atomic<int64_t>>(s, l.ready_cpu)) &&
           s.proc_cpus.placed_at(at<uint64_t>(s, l.proc_cpus));
}

namespace {

// Checks a mapped segment's identity and shape, without touching anything
// else in it.
SegmentError validate(const Segment& s, size_t size, const std::string& name) {
    if (size < sizeof(Header) || s.header.magic.load(std::memory_order_acquire) != kMagic)
        return fail(
            SegmentError::Kind::Foreign,
            "shared segment " + name +
                " is not a coexec segment (bad magic); remove it with `coexec reset --force`");
    const Header& h = s.header;
    if (h.abi_version != kAbiVersion)
        return fail(SegmentError::Kind::VersionMismatch,
                    "shared segment " + name + " has ABI version " + std::to_string(h.abi_version) +
                        ", this coexec uses " + std::to_string(kAbiVersion) +
                        "; stop the processes using it, or remove it with `coexec "
                        "reset --force`");
    if (size < sizeof(Segment) || h.max_cpus < 1 || h.max_cpus > kMaxCpus ||
        h.total_size != segment_layout(h.max_cpus).total || size != h.total_size ||
        !placed_by_layout(s))
        return fail(SegmentError::Kind::Foreign,
                    "shared segment " + name + " is malformed (" + std::to_string(size) +
                        " bytes for " + std::to_string(h.max_cpus) +
                        " CPU slots); remove it with `coexec reset --force`");
    return {};
}

// Two one-byte open-file-description locks on the segment's file, released by
// the kernel when the holder dies: byte 0 serialises creation, formatting and
// removal; byte 1 is held shared by every open mapping, so an exclusive
// attempt on it tells whether anyone else still uses the segment.
constexpr off_t kCreationByte = 0;
constexpr off_t kInUseByte = 1;

bool ofd_lock(int fd, short type, off_t byte, bool wait) {
    struct flock fl {};
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = byte;
    fl.l_len = 1;
    for (;;) {
        if (::fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl) == 0) return true;
        if (errno != EINTR) return false;
    }
}

Segment* map_fd(int fd, size_t size) {
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? nullptr : static_cast<Segment*>(p);
}

// Whether no registered process stays: none is registered, or each one is
// departing (ProcSlot::departing: it exits, and dropped its share of the
// in-use lock first). A member that died without departing (killed) keeps
// the name, for the next member to reap. Call holding the in-use lock
// exclusively: nobody can register meanwhile, and a departing process's
// flag, stored before its unlock, is seen.
bool no_member_stays(const Segment& s) {
    const Header& h = s.header;
    const int n = std::clamp(h.alive_count, 0, kMaxProcs);
    for (int i = 0; i < n; ++i) {
        const int32_t p = h.alive[i];
        if (p < 0 || p >= kMaxProcs || s.procs[p].departing.load(std::memory_order_acquire) == 0)
            return false;
    }
    return true;
}

// Sizes the file to a zeroed segment of this version and formats it; `size`
// gets its size. The caller holds the creation lock, and nobody else has
// the segment mapped.
Segment* create_fresh(int fd, const SegmentOptions& options, const std::string& name, size_t& size,
                      SegmentError& error) {
    const int32_t cpus = cpu_slots_for(options);
    size = segment_layout(cpus).total;
    Segment* s = nullptr;
    // Truncating to 0 first zeroes whatever an older segment left.
    if (::ftruncate(fd, 0) != 0 || ::ftruncate(fd, off_t(size)) != 0 || !(s = map_fd(fd, size))) {
        error = fail(SegmentError::Kind::System, errno_text("cannot size shared segment", name));
        return nullptr;
    }
    format(*zeroed_segment(s), options, cpus);
    return s;
}

// Refuses a segment that another user could have planted or can tamper with.
SegmentError check_owner(int fd, const SegmentOptions& options, const std::string& name) {
    struct stat st {};
    if (::fstat(fd, &st) != 0)
        return fail(SegmentError::Kind::System, errno_text("cannot stat", name));
    if (options.isolation == Isolation::User &&
        (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0))
        return fail(SegmentError::Kind::Permission, "shared segment " + name +
                                                        " is not private to this user (owner uid " +
                                                        std::to_string(st.st_uid) + ", mode " +
                                                        std::to_string(st.st_mode & 0777) + ")");
    return {};
}

} // namespace

int32_t cpu_slots_for(const SegmentOptions& options) {
    if (options.cpu_slots > 0) return std::min(options.cpu_slots, kMaxCpus);
    return int32_t(std::clamp(::sysconf(_SC_NPROCESSORS_CONF), 1L, long(kMaxCpus)));
}

std::string segment_shm_name(const SegmentOptions& o) {
    switch (o.isolation) {
    case Isolation::Process:
        return {};
    case Isolation::User:
        return "/coexec." + o.name + ".u" + std::to_string(::geteuid());
    case Isolation::Group:
        return "/coexec." + o.name + ".g" + std::to_string(::getegid());
    case Isolation::Public:
        return "/coexec." + o.name + ".public";
    }
    return {};
}

bool parse_isolation(const std::string& text, Isolation& out) {
    static constexpr std::pair<const char*, Isolation> names[] = {{"process", Isolation::Process},
                                                                  {"user", Isolation::User},
                                                                  {"group", Isolation::Group},
                                                                  {"public", Isolation::Public}};
    for (auto& [n, v] : names)
        if (text == n) {
            out = v;
            return true;
        }
    return false;
}

const char* isolation_name(Isolation isolation) {
    switch (isolation) {
    case Isolation::Process:
        return "process";
    case Isolation::User:
        return "user";
    case Isolation::Group:
        return "group";
    case Isolation::Public:
        return "public";
    }
    return "?";
}

SegmentMapping SegmentMapping::open(const SegmentOptions& options, SegmentError& error) {
    error = {};
    if (options.name.empty() || options.name.find('/') != std::string::npos) {
        error =
            fail(SegmentError::Kind::System, "invalid shared_memory.name '" + options.name + "'");
        return {};
    }
    if (options.isolation == Isolation::Process) {
        const int32_t cpus = cpu_slots_for(options);
        const size_t size = segment_layout(cpus).total;
        void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            error = fail(SegmentError::Kind::System, errno_text("cannot map", "private segment"));
            return {};
        }
        Segment* s = zeroed_segment(p);
        format(*s, options, cpus);
        return SegmentMapping(s, size, -1, {});
    }

    const std::string name = segment_shm_name(options);
    const mode_t mode = mode_for(options.isolation);
    int flags = O_RDWR | O_CLOEXEC | (options.create ? O_CREAT : 0);
    int fd = -1;
    bool locked = false;
    // The last process out may remove the name between our open and our
    // creation lock: then open again (a fresh segment).
    for (int attempt = 0; attempt < 100 && !locked; ++attempt) {
        fd = ::shm_open(name.c_str(), flags, mode);
        if (fd < 0) break;
        struct stat st {};
        if (!ofd_lock(fd, F_WRLCK, kCreationByte, true) || ::fstat(fd, &st) != 0) {
            error =
                fail(SegmentError::Kind::System, errno_text("cannot lock shared segment", name));
            ::close(fd);
            return {};
        }
        locked = st.st_nlink > 0;
        if (!locked) {
            ::close(fd);
            fd = -1;
            errno = ENOENT;
        }
    }
    if (fd < 0) {
        auto kind = errno == ENOENT   ? SegmentError::Kind::NotFound
                    : errno == EACCES ? SegmentError::Kind::Permission
                                      : SegmentError::Kind::System;
        error = fail(kind, kind == SegmentError::Kind::NotFound
                               ? "no coexec segment " + name + " (no process has started coexec)"
                               : errno_text("cannot open shared segment", name));
        return {};
    }
    if (auto e = check_owner(fd, options, name)) {
        ::close(fd);
        error = e;
        return {};
    }
    // We hold the creation lock (dropped by the kernel if we die here).
    struct stat st {};
    ::fstat(fd, &st);
    size_t size = size_t(st.st_size);
    Segment* s = nullptr;
    if (size == 0 && options.create) {
        // Our umask must not narrow a group or public segment.
        ::fchmod(fd, mode);
        s = create_fresh(fd, options, name, size, error);
    } else if (size < sizeof(Header)) {
        error =
            fail(SegmentError::Kind::Foreign,
                 "shared segment " + name + " is truncated; remove it with `coexec reset --force`");
    } else if (!(s = map_fd(fd, size))) {
        error = fail(SegmentError::Kind::System, errno_text("cannot map shared segment", name));
    } else {
        error = validate(*s, size, name);
    }
    if (error && s) {
        ::munmap(s, size);
        s = nullptr;
    }
    // A segment this coexec cannot use (another ABI version, truncated, or
    // never published because its creator died) that no process has open is
    // a leftover: start it afresh. One that is in use stays, and the error
    // says why. Holding the creation lock, no opener can slip in between.
    if (error && error.kind != SegmentError::Kind::System && options.create &&
        ofd_lock(fd, F_WRLCK, kInUseByte, false)) {
        error = {};
        s = create_fresh(fd, options, name, size, error);
    }
    if (s && !ofd_lock(fd, F_RDLCK, kInUseByte, true)) {
        error = fail(SegmentError::Kind::System, errno_text("cannot lock shared segment", name));
        ::munmap(s, size);
        s = nullptr;
    }
    ofd_lock(fd, F_UNLCK, kCreationByte, false);
    if (!s) {
        ::close(fd);
        return {};
    }
    return SegmentMapping(s, size, fd, name);
}

SegmentMapping SegmentMapping::map_again(SegmentError& error) const {
    error = {};
    if (fd_ < 0) {
        error =
            fail(SegmentError::Kind::System, "a process-private segment cannot be mapped again");
        return {};
    }
    // Its own open file description (not a dup), so it holds its own share
    // of the in-use lock and leaves as any other mapping does.
    const std::string self = "/proc/self/fd/" + std::to_string(fd_);
    int fd = ::open(self.c_str(), O_RDWR | O_CLOEXEC);
    Segment* s = nullptr;
    if (fd < 0 || !ofd_lock(fd, F_RDLCK, kInUseByte, true) || !(s = map_fd(fd, size_))) {
        error =
            fail(SegmentError::Kind::System, errno_text("cannot map shared segment", shm_name_));
        if (fd >= 0) ::close(fd);
        return {};
    }
    return SegmentMapping(s, size_, fd, shm_name_);
}

bool SegmentMapping::unlink(const SegmentOptions& options, std::string& message) {
    std::string name = segment_shm_name(options);
    if (name.empty()) return true;
    if (::shm_unlink(name.c_str()) == 0) return true;
    message = errno_text("cannot remove shared segment", name);
    return false;
}

bool SegmentMapping::remove_if_last() const {
    return remove_name_if_alone(/*keep_share=*/true);
}

bool SegmentMapping::leave_at_exit() const {
    return remove_name_if_alone(/*keep_share=*/false);
}

bool SegmentMapping::remove_name_if_alone(bool keep_share) const {
    if (fd_ < 0 || shm_name_.empty()) return false;
    if (!ofd_lock(fd_, F_WRLCK, kCreationByte, true)) return false;
    bool removed = false;
    // Converting our shared in-use lock to exclusive succeeds only if no
    // other open file description holds it: nobody else has the segment.
    if (still_named() && ofd_lock(fd_, F_WRLCK, kInUseByte, false)) {
        removed = ::shm_unlink(shm_name_.c_str()) == 0;
        ofd_lock(fd_, F_RDLCK, kInUseByte, true);
    } else if (!keep_share) {
        // Others have it open (leave_at_exit()). Our threads keep the
        // mapping until the process ends, but our share goes now, under the
        // creation lock as in leave(): the last of them to close sees that
        // it is last.
        ofd_lock(fd_, F_UNLCK, kInUseByte, false);
    }
    ofd_lock(fd_, F_UNLCK, kCreationByte, false);
    return removed;
}

bool SegmentMapping::still_named() const {
    // Once our segment's name was removed, the name may be a newer
    // segment's. Removers hold the creation lock, so the answer holds until
    // the caller releases it.
    struct stat st {};
    return ::fstat(fd_, &st) == 0 && st.st_nlink > 0;
}

void SegmentMapping::leave() const {
    // Leavers take turns under the creation lock, and each drops its share
    // of the in-use lock before the next one looks: so the last one out
    // always sees that it is last, even when two leave at once (the last
    // process shutting down while `coexec top` reads the segment).
    if (!ofd_lock(fd_, F_WRLCK, kCreationByte, true)) return;
    // Exclusive: nobody else has the segment mapped, so nobody can register
    // in it while we read alive_count.
    if (still_named() && ofd_lock(fd_, F_WRLCK, kInUseByte, false) && no_member_stays(*segment_))
        ::shm_unlink(shm_name_.c_str());
    ofd_lock(fd_, F_UNLCK, kInUseByte, false);
    ofd_lock(fd_, F_UNLCK, kCreationByte, false);
}

void SegmentMapping::reset() {
    // A fork() child shares its parent's open file description (and locks):
    // only the process that opened the mapping leaves through it.
    if (segment_ && fd_ >= 0 && !shm_name_.empty() && owner_ == ::getpid()) leave();
    if (segment_) ::munmap(segment_, size_);
    if (fd_ >= 0) ::close(fd_);
    segment_ = nullptr;
    size_ = 0;
    fd_ = -1;
}

SegmentMapping::~SegmentMapping() {
    reset();
}

SegmentMapping::SegmentMapping(SegmentMapping&& o) noexcept
    : segment_(std::exchange(o.segment_, nullptr)), size_(std::exchange(o.size_, 0)),
      fd_(std::exchange(o.fd_, -1)), shm_name_(std::move(o.shm_name_)), owner_(o.owner_) {}

SegmentMapping& SegmentMapping::operator=(SegmentMapping&& o) noexcept {
    if (this != &o) {
        reset();
        segment_ = std::exchange(o.segment_, nullptr);
        size_ = std::exchange(o.size_, 0);
        fd_ = std::exchange(o.fd_, -1);
        shm_name_ = std::move(o.shm_name_);
        owner_ = o.owner_;
    }
    return *this;
}

} // namespace coexec::shm
