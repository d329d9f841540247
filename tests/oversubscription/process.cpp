#include "process.hpp"

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <stdexcept>

namespace ovs {

Output run(const std::string& command) {
    Output out;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    if (!pipe) throw std::runtime_error("popen failed for " + command);
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0)
        out.text.append(buf, n);
    const int status = pclose(pipe);
    if (status != -1 && WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
    return out;
}

std::string program(const std::string& name) {
    return std::string(BENCH_BIN_DIR) + "/" + name;
}

std::vector<double> residuals(const std::string& text) {
    static const std::regex line(R"(Iteration = (\d+)\s+Residual = (\S+))");
    std::vector<double> out;
    for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it)
        out.push_back(std::stod((*it)[2]));
    return out;
}

double number_after(const std::string& text, const std::string& key) {
    const auto pos = text.find(key);
    if (pos == std::string::npos) return std::nan("");
    return std::strtod(text.c_str() + pos + key.size(), nullptr);
}

std::vector<double> losses(const std::string& text) {
    static const std::regex line(R"(train loss (\S+))");
    std::vector<double> out;
    for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it)
        out.push_back(std::stod((*it)[1]));
    return out;
}

TempDir::TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "coexec-ovs-XXXXXX").string();
    if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
    dir_ = templ;
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

} // namespace ovs
