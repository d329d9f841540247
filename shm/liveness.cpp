#include "liveness.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace coexec::shm {
namespace {

struct StatFields {
    char state = '?';
    uint64_t start_time = 0;
};

// Reads state (field 3) and starttime (field 22) of a /proc stat file.
bool read_stat(const char* path, StatFields& out) {
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char buf[1024];
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return false;
    buf[n] = '\0';
    // The command name may hold spaces and ')': fields resume after the last ')'.
    const char* p = std::strrchr(buf, ')');
    if (!p || p[1] != ' ') return false;
    out.state = p[2];
    int field = 3;
    for (p += 2; *p && field < 22; ++p)
        if (*p == ' ') ++field;
    if (field != 22) return false;
    out.start_time = std::strtoull(p, nullptr, 10);
    return true;
}

bool read_stat(pid_t pid, StatFields& out) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
    return read_stat(path, out);
}

} // namespace

uint64_t process_start_time(pid_t pid) {
    StatFields f;
    return read_stat(pid, f) ? f.start_time : 0;
}

bool process_alive(pid_t pid, uint64_t start_time) {
    StatFields f;
    if (pid <= 0 || !read_stat(pid, f)) return false;
    // A zombie keeps its /proc entry but never runs again.
    if (f.state == 'Z' || f.state == 'X') return false;
    return f.start_time == start_time;
}

bool thread_alive(pid_t pid, pid_t tid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/stat", int(pid), int(tid));
    StatFields f;
    return pid > 0 && tid > 0 && read_stat(path, f) && f.state != 'Z' && f.state != 'X';
}

bool thread_on_cpu(pid_t pid, pid_t tid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/stat", int(pid), int(tid));
    StatFields f;
    return read_stat(path, f) && f.state == 'R';
}

int64_t thread_run_ns(pid_t pid, pid_t tid) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", int(pid), int(tid));
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[128];
    ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    return int64_t(std::strtoull(buf, nullptr, 10));
}

} // namespace coexec::shm
