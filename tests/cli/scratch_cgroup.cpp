#include "scratch_cgroup.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sched.h>
#include <sstream>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace coexec::clitest {
namespace {

namespace fs = std::filesystem;

std::string error_text(int err) {
    return std::strerror(err);
}

// Whether `list`, split at `separator` (and at spaces), holds `word`.
bool has_word(std::string list, char separator, const std::string& word) {
    for (char& c : list)
        if (c == separator) c = ' ';
    std::istringstream words(list);
    for (std::string w; words >> w;)
        if (w == word) return true;
    return false;
}

std::string first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

std::string write_file(const std::string& path, const std::string& value) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        return "cannot open " + path + ": " + error_text(err);
    }
    const ssize_t n = ::write(fd, value.data(), value.size());
    const int err = errno;
    ::close(fd);
    if (n == ssize_t(value.size())) return "";
    return "cannot write \"" + value + "\" to " + path + ": " +
           (n < 0 ? error_text(err) : std::string("short write"));
}

// One cgroup file system mount.
struct CgroupMount {
    std::string root;  // the cgroup mounted there, as our cgroup namespace names it
    std::string point; // e.g. /sys/fs/cgroup/cpuset
};

// The first mount of `controller`'s v1 hierarchy, or of the v2 hierarchy
// when `controller` is empty: the one coexec reads. mountinfo's lines read
// "id parent dev root mountpoint options [optional...] - fstype source super".
std::optional<CgroupMount> cgroup_mount(const std::string& controller) {
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
        std::istringstream fields(line);
        std::string id, parent, dev, root, point, word, fstype, source, super;
        fields >> id >> parent >> dev >> root >> point;
        while (fields >> word && word != "-") {
        }
        fields >> fstype >> source >> super;
        if (controller.empty() ? fstype == "cgroup2"
                               : fstype == "cgroup" && has_word(super, ',', controller))
            return CgroupMount{root, point};
    }
    return std::nullopt;
}

} // namespace

// ---- PrivateCgroup2Mount -------------------------------------------------------

PrivateCgroup2Mount::PrivateCgroup2Mount() {
    std::string dir = (fs::temp_directory_path() / "coexec-cgroup2-XXXXXX").string();
    if (!mkdtemp(dir.data())) {
        const int err = errno;
        why_ = "cannot create a directory to mount cgroup2 on: " + error_text(err);
        return;
    }
    dir_ = dir;
    int status[2], hold[2];
    if (pipe2(status, O_CLOEXEC) != 0) {
        const int err = errno;
        why_ = "pipe: " + error_text(err);
        return;
    }
    if (pipe2(hold, O_CLOEXEC) != 0) {
        const int err = errno;
        why_ = "pipe: " + error_text(err);
        ::close(status[0]);
        ::close(status[1]);
        return;
    }
    const char* point = dir_.c_str();
    pid_ = fork();
    const int fork_error = errno;
    if (pid_ == 0) {
        // Only async-signal-safe calls from here: the parent may have threads.
        ::close(status[0]);
        ::close(hold[1]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int result[2] = {0, 0}; // the step that failed (0: none), errno
        if (unshare(CLONE_NEWNS) != 0)
            result[0] = 1;
        else if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
            result[0] = 2; // else the mount would propagate to our namespace
        else if (mount("cgroup2", point, "cgroup2", 0, nullptr) != 0)
            result[0] = 3;
        result[1] = errno;
        if (::write(status[1], result, sizeof result) != ssize_t(sizeof result)) _exit(1);
        ::close(status[1]);
        char byte; // nothing is written: wait for the parent to close its end
        while (::read(hold[0], &byte, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    ::close(status[1]);
    ::close(hold[0]);
    hold_ = hold[1];
    if (pid_ < 0) {
        why_ = "fork: " + error_text(fork_error);
        ::close(status[0]);
        return;
    }
    int result[2] = {-1, 0};
    ssize_t n;
    while ((n = ::read(status[0], result, sizeof result)) < 0 && errno == EINTR) {
    }
    ::close(status[0]);
    if (n != ssize_t(sizeof result))
        why_ = "the process that mounts cgroup2 in a mount namespace of its own died";
    else if (result[0] == 1)
        why_ = "no mount namespace of our own: unshare(CLONE_NEWNS): " + error_text(result[1]);
    else if (result[0] == 2)
        why_ = "cannot make / private in a mount namespace of our own: " + error_text(result[1]);
    else if (result[0] == 3)
        why_ = "cannot mount cgroup2 on " + dir_ +
               " in a mount namespace of our own: " + error_text(result[1]);
}

PrivateCgroup2Mount::~PrivateCgroup2Mount() {
    if (hold_ >= 0) ::close(hold_);
    if (pid_ > 0) {
        int wstatus;
        while (waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
        }
    }
    // Mounted only in the child's namespace, which went with it.
    if (!dir_.empty()) rmdir(dir_.c_str());
}

std::string PrivateCgroup2Mount::top() const {
    return "/proc/" + std::to_string(pid_) + "/root" + dir_;
}

// ---- ScratchCgroup ---------------------------------------------------------------

ScratchCgroup::ScratchCgroup(CgroupVersion version, const std::string& controller,
                             const std::string& name) {
    if (version == CgroupVersion::v1)
        make_v1(controller, name);
    else
        make_v2(controller, name);
}

void ScratchCgroup::make_v1(const std::string& controller, const std::string& name) {
    const std::optional<CgroupMount> m = cgroup_mount(controller);
    if (!m) {
        why_ = "no cgroup v1 " + controller +
               " hierarchy is mounted (/proc/self/mountinfo has no cgroup file system with " +
               controller + ")";
        return;
    }
    dir_ = path_ = m->point + "/" + name;
    if (mkdir(path_.c_str(), 0755) != 0) {
        const int err = errno;
        why_ = "cannot create " + path_ + ": " + error_text(err);
        return;
    }
    made_ = true;
}

void ScratchCgroup::make_v2(const std::string& controller, const std::string& name) {
    const std::optional<CgroupMount> m = cgroup_mount("");
    if (!m) {
        why_ = "no cgroup v2 hierarchy is mounted (/proc/self/mountinfo has no cgroup2 file "
               "system)";
        return;
    }
    // A controller is in one hierarchy at a time: one that a v1 hierarchy
    // holds is missing here.
    const std::string offered = first_line(m->point + "/cgroup.controllers");
    if (!has_word(offered, ' ', controller)) {
        why_ = "the cgroup v2 hierarchy at " + m->point + " offers no " + controller +
               " controller (its cgroup.controllers: \"" + offered + "\")";
        if (const std::optional<CgroupMount> v1 = cgroup_mount(controller))
            why_ += "; cgroup v1 holds it, mounted at " + v1->point;
        return;
    }
    // The no-internal-processes rule: a child of a cgroup with processes of
    // its own (the root cgroup aside) takes processes only as a threaded
    // cgroup, and enabling cpu or cpuset there would make that cgroup a
    // thread root. Only the root cgroup has no cgroup.type.
    if (fs::exists(m->point + "/cgroup.type") && !first_line(m->point + "/cgroup.procs").empty()) {
        why_ = "the cgroup at " + m->point +
               " has processes of its own and is not the root cgroup: by cgroup v2's "
               "no-internal-processes rule a child of it could hold processes only as a "
               "threaded cgroup";
        return;
    }
    std::string parent = m->point; // where this process reaches the new cgroup's parent
    std::string through;           // how, when not through m->point
    const std::string control = m->point + "/cgroup.subtree_control";
    if (access(control.c_str(), W_OK) != 0 || access(m->point.c_str(), W_OK) != 0) {
        const int err = errno;
        const std::string read_only = m->point + " is not writable (" + error_text(err) + ")";
        private_ = std::make_unique<PrivateCgroup2Mount>();
        if (!private_->failure().empty()) {
            why_ = read_only + " and " + private_->failure();
            return;
        }
        parent = private_->top() + (m->root == "/" ? "" : m->root);
        through = " (" + read_only + "; through a cgroup2 mount of our own)";
    }
    if (!has_word(first_line(parent + "/cgroup.subtree_control"), ' ', controller)) {
        const std::string enable = "+" + controller;
        if (std::string e = write_file(parent + "/cgroup.subtree_control", enable); !e.empty()) {
            why_ = "cannot give the " + controller +
                   " controller to the children of the cgroup at " + m->point + through + ": " + e;
            if (controller == "cpu" && e.find(error_text(EINVAL)) != std::string::npos)
                why_ += " (with CONFIG_RT_GROUP_SCHED the kernel refuses while real-time "
                        "processes are outside the root cgroup)";
            return;
        }
    }
    path_ = parent + "/" + name;
    dir_ = m->point + "/" + name;
    if (mkdir(path_.c_str(), 0755) != 0) {
        const int err = errno;
        why_ = "cannot create " + path_ + through + ": " + error_text(err);
        return;
    }
    made_ = true;
}

ScratchCgroup::~ScratchCgroup() {
    if (!made_) return;
    // Its processes were killed and reaped; one that is still exiting may
    // keep it busy a moment longer.
    for (int tries = 0; rmdir(path_.c_str()) != 0; ++tries) {
        if (errno != EBUSY || tries == 500) {
            std::fprintf(stderr, "cannot remove cgroup %s: %s\n", path_.c_str(),
                         std::strerror(errno));
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

std::string ScratchCgroup::set(const std::string& file, const std::string& value) const {
    return write_file(path_ + "/" + file, value);
}

std::vector<std::string> ScratchCgroup::join_then(const std::vector<std::string>& argv) const {
    std::vector<std::string> sh{"/bin/sh", "-c", "echo $$ > \"$0\" && exec \"$@\"",
                                path_ + "/cgroup.procs"};
    sh.insert(sh.end(), argv.begin(), argv.end());
    return sh;
}

} // namespace coexec::clitest
