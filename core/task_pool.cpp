#include "core/task_pool.hpp"

#include <new>

namespace coexec::core {
namespace {

constexpr std::align_val_t kAlign{64};

// Per-thread caches of plain heap blocks. A block belongs to no pool in
// particular, so a cache may outlive a runtime and serve the next one; it
// frees what it still holds when its thread exits.
struct Cache {
    std::array<std::vector<void*>, TaskPool::kClassSizes.size()> blocks;
    ~Cache() {
        for (auto& v : blocks)
            for (void* b : v)
                ::operator delete(b, kAlign);
    }
};
thread_local Cache t_cache;

} // namespace

int TaskPool::class_of(size_t bytes) {
    for (size_t i = 0; i < kClassSizes.size(); ++i)
        if (bytes <= kClassSizes[i]) return int(i);
    return -1;
}

void* TaskPool::allocate(size_t bytes) {
    int k = class_of(bytes);
    if (k < 0) return ::operator new(bytes, kAlign, std::nothrow);
    auto& mine = t_cache.blocks[size_t(k)];
    if (mine.empty()) {
        std::lock_guard lock(shared_[size_t(k)].mutex);
        auto& pool = shared_[size_t(k)].blocks;
        size_t n = std::min(kBatch, pool.size());
        mine.assign(pool.end() - long(n), pool.end());
        pool.resize(pool.size() - n);
    }
    if (mine.empty()) return ::operator new(kClassSizes[size_t(k)], kAlign, std::nothrow);
    void* b = mine.back();
    mine.pop_back();
    return b;
}

void TaskPool::release(void* block, size_t bytes) {
    int k = class_of(bytes);
    if (k < 0) {
        ::operator delete(block, kAlign);
        return;
    }
    auto& mine = t_cache.blocks[size_t(k)];
    mine.push_back(block);
    if (mine.size() >= 2 * kBatch) {
        std::lock_guard lock(shared_[size_t(k)].mutex);
        auto& pool = shared_[size_t(k)].blocks;
        pool.insert(pool.end(), mine.end() - long(kBatch), mine.end());
        mine.resize(mine.size() - kBatch);
    }
}

TaskPool::~TaskPool() {
    for (auto& s : shared_)
        for (void* b : s.blocks)
            ::operator delete(b, kAlign);
}

} // namespace coexec::core
