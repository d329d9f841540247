// Running measurements in forked children: each benchmark gets fresh
// processes (so nosv_init runs after fork, as the substrate requires), a hang
// is killed after a timeout, and results come back through shared memory.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <new>
#include <string>
#include <vector>

namespace coexec::bench {

// An anonymous MAP_SHARED mapping holding one T: a child's writes are visible
// to the parent once the child has been reaped (waitpid orders them).
void* map_shared_anonymous(size_t bytes); // throws std::system_error on failure
void unmap_shared(void* p, size_t bytes);

template <class T>
class SharedObject {
  public:
    SharedObject() : obj_(new (map_shared_anonymous(sizeof(T))) T{}) {}
    ~SharedObject() {
        obj_->~T();
        unmap_shared(obj_, sizeof(T));
    }
    SharedObject(const SharedObject&) = delete;
    SharedObject& operator=(const SharedObject&) = delete;
    T& operator*() const { return *obj_; }
    T* operator->() const { return obj_; }

  private:
    T* obj_;
};

// Per-repeat samples written by exactly one child process at a time.
struct SampleBuffer {
    static constexpr int kCapacity = 1024;
    int count = 0;
    double values[kCapacity] = {};
    // Segment lock acquisitions per operation in the same repeat, by every
    // member (LockCounter); pushed with each sample, or never.
    int lock_count = 0;
    double locks[kCapacity] = {};

    // Appends a sample; extra samples beyond the capacity are dropped.
    void push(double v) {
        if (count < kCapacity) values[count++] = v;
    }
    void push(double v, double locks_per_op) {
        if (lock_count < kCapacity && lock_count == count) locks[lock_count++] = locks_per_op;
        push(v);
    }
    std::vector<double> samples() const { return {values, values + count}; }
    std::vector<double> lock_samples() const { return {locks, locks + lock_count}; }
};

// A set of forked children that are waited for together. Destruction kills
// and reaps children still running, so no process outlives the benchmark.
class ChildGroup {
  public:
    ChildGroup() = default;
    ~ChildGroup();
    ChildGroup(const ChildGroup&) = delete;
    ChildGroup& operator=(const ChildGroup&) = delete;

    // Forks a child that runs `body` and exits with its return value.
    void spawn(const std::function<int()>& body);

    // Waits for every child. Returns "" when all exited with status 0,
    // otherwise why not. The first failure, or the timeout, kills the rest.
    std::string wait_all(std::chrono::seconds timeout);

  private:
    void kill_all();
    std::vector<pid_t> pids_;
};

} // namespace coexec::bench
