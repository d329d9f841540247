// Runs the benchmark programs as real child processes for the tests.
#pragma once

#include <string>
#include <vector>

namespace ovs {

// What a finished child printed (stdout and stderr together) and how it ended.
struct Output {
    int exit_code = -1; // -1 when it did not exit normally (signal)
    std::string text;
};

// Runs `command` through /bin/sh and waits for it.
Output run(const std::string& command);

// Path of a benchmark binary in the build tree, e.g. program("hpccg-gcc").
std::string program(const std::string& name);

// Every "Iteration = k   Residual = r" value in order (k = 1, 2, ...).
std::vector<double> residuals(const std::string& text);

// The number after the first occurrence of `key` in `text`, NaN if absent.
double number_after(const std::string& text, const std::string& key);

// All "train loss X" values in order.
std::vector<double> losses(const std::string& text);

// A fresh empty directory for one test's files, removed by the destructor.
class TempDir {
  public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    std::string path(const std::string& file) const { return dir_ + "/" + file; }

  private:
    std::string dir_;
};

} // namespace ovs
