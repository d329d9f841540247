#include "spawn.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

extern char** environ;

namespace coexec::test_support {
namespace {

std::vector<std::string> merged_environment(const EnvChanges& changes) {
    std::map<std::string, std::string> vars;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string text(*entry);
        const auto eq = text.find('=');
        if (eq != std::string::npos) vars[text.substr(0, eq)] = text.substr(eq + 1);
    }
    for (const auto& [name, value] : changes) {
        if (value)
            vars[name] = *value;
        else
            vars.erase(name);
    }
    std::vector<std::string> result;
    for (const auto& [name, value] : vars)
        result.push_back(name + "=" + value);
    return result;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
    std::vector<char*> result;
    for (auto& s : strings)
        result.push_back(s.data());
    result.push_back(nullptr);
    return result;
}

} // namespace

pid_t spawn(const std::vector<std::string>& argv, const EnvChanges& env, int in_fd, int out_fd,
            int err_fd) {
    if (argv.empty()) throw std::runtime_error("spawn: empty argv");
    std::vector<std::string> args = argv, envs = merged_environment(env);
    std::vector<char*> arg_ptrs = c_strings(args), env_ptrs = c_strings(envs);
    const std::string exec_failed = "cannot exec " + argv[0] + "\n";
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        if (in_fd >= 0) ::dup2(in_fd, STDIN_FILENO);
        if (out_fd >= 0) ::dup2(out_fd, STDOUT_FILENO);
        if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
        ::execve(arg_ptrs[0], arg_ptrs.data(), env_ptrs.data());
        [[maybe_unused]] auto n = ::write(STDERR_FILENO, exec_failed.data(), exec_failed.size());
        ::_exit(127);
    }
    return pid;
}

} // namespace coexec::test_support
