// `coexec run`: execs a program with the adapters on the loader path.
#include "commands.hpp"
#include "launch_env.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace coexec::cli {
namespace {

namespace fs = std::filesystem;

// The directory holding libcoexec.so and coexec/<adapter>/: <exe_dir>/../lib
// in the build tree (and most install trees), else the install libdir.
fs::path library_dir() {
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    fs::path build_tree = (exe.parent_path() / ".." / "lib").lexically_normal();
    fs::path installed = (exe.parent_path() / COEXEC_LIBDIR_FROM_BINDIR).lexically_normal();
    if (!fs::exists(build_tree / "libcoexec.so", ec) && fs::exists(installed / "libcoexec.so", ec))
        return installed;
    return build_tree;
}

// Sets the variables of launch::run_environment in our own environment.
// Returns false (after printing why) when an adapter asked for is not built.
bool set_run_environment(const RunOptions& o, const fs::path& lib) {
    launch::Adapters adapters{o.openmp, o.tbb, o.pocl};
    std::vector<launch::EnvVar> vars;
    std::string error;
    if (!launch::run_environment(adapters, lib, launch::own_environment(), vars, error)) {
        print_error("run: " + error);
        return false;
    }
    for (const auto& v : vars)
        setenv(v.name.c_str(), v.value.c_str(), v.overwrite ? 1 : 0);
    return true;
}

} // namespace

int run_command(const RunOptions& options) {
    if (options.command.empty()) {
        print_error(
            "run: no command given (usage: coexec run [--openmp] [--tbb] [--pocl] -- CMD ARGS...)");
        return 2;
    }
    fs::path lib = library_dir();
    if (lib.empty()) {
        print_error("run: cannot find the coexec installation (/proc/self/exe unreadable)");
        return 2;
    }
    // The adapters on the loader path, and the program's threads hosted.
    if (!set_run_environment(options, lib)) return 2;
    std::vector<char*> argv;
    for (const auto& arg : options.command)
        argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    int err = errno;
    print_error("run: cannot run '" + options.command[0] + "': " + std::strerror(err));
    return err == ENOENT ? 127 : 126;
}

} // namespace coexec::cli
