// Recycles task blocks. Tasks are usually created on one thread and freed on
// another (a completed callback on a worker), which makes malloc slow; blocks
// here move between threads in batches instead.
#pragma once

#include <array>
#include <cstddef>
#include <mutex>
#include <vector>

namespace coexec::core {

class TaskPool {
  public:
    // Size classes cover a task plus up to NOSV_MAX_METADATA_SIZE bytes.
    static constexpr std::array<size_t, 4> kClassSizes = {256, 1024, 2048, 8192};

    ~TaskPool();
    // A block of at least `bytes`, aligned to 64, or null when out of memory.
    void* allocate(size_t bytes);
    // Returns a block from allocate(bytes).
    void release(void* block, size_t bytes);

  private:
    static constexpr size_t kBatch = 32;
    static int class_of(size_t bytes);
    struct Shared {
        std::mutex mutex;
        std::vector<void*> blocks;
    };
    std::array<Shared, kClassSizes.size()> shared_;
};

} // namespace coexec::core
