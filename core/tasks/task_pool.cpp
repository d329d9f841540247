#include "core/tasks/task_pool.hpp"

#include <new>

namespace coexec::core {
namespace {

constexpr std::align_val_t kAlign{64};

// Per-thread caches of plain heap blocks. A block belongs to no pool in
// particular, so a cache may outlive a runtime and serve the next one; it
// frees what it still holds when its thread exits.
struct Cache {
    std::array<std::vector<void*>, TaskPool::kClassSizes.size()> blocks;
    ~Cache();
};
thread_local Cache t_cache;

// A thread's thread_local objects are destroyed before its last calls:
// exit() destroys the main thread's before it runs the exit handlers and
// static destructors, where an adapter's or a hosted main thread's
// nosv_shutdown still frees tasks. From then on the thread has no cache and
// uses the shared pool. Trivially destructible, so it outlives t_cache.
thread_local bool t_cache_gone = false;

Cache::~Cache() {
    for (auto& v : blocks)
        for (void* b : v)
            ::operator delete(b, kAlign);
    t_cache_gone = true;
}

// This thread's cache of class `k`, or null once it is gone. The first call
// constructs t_cache (and registers its destructor).
std::vector<void*>* thread_cache(int k) {
    return t_cache_gone ? nullptr : &t_cache.blocks[size_t(k)];
}

} // namespace

int TaskPool::class_of(size_t bytes) {
    for (size_t i = 0; i < kClassSizes.size(); ++i)
        if (bytes <= kClassSizes[i]) return int(i);
    return -1;
}

void* TaskPool::allocate(size_t bytes) {
    int k = class_of(bytes);
    if (k < 0) return ::operator new(bytes, kAlign, std::nothrow);
    Shared& shared = shared_[size_t(k)];
    std::vector<void*>* mine = thread_cache(k);
    if (!mine) {
        std::lock_guard lock(shared.mutex);
        if (!shared.blocks.empty()) {
            void* b = shared.blocks.back();
            shared.blocks.pop_back();
            return b;
        }
    } else {
        if (mine->empty()) {
            std::lock_guard lock(shared.mutex);
            size_t n = std::min(kBatch, shared.blocks.size());
            mine->assign(shared.blocks.end() - long(n), shared.blocks.end());
            shared.blocks.resize(shared.blocks.size() - n);
        }
        if (!mine->empty()) {
            void* b = mine->back();
            mine->pop_back();
            return b;
        }
    }
    return ::operator new(kClassSizes[size_t(k)], kAlign, std::nothrow);
}

void TaskPool::release(void* block, size_t bytes) {
    int k = class_of(bytes);
    if (k < 0) {
        ::operator delete(block, kAlign);
        return;
    }
    Shared& shared = shared_[size_t(k)];
    std::vector<void*>* mine = thread_cache(k);
    if (!mine) {
        std::lock_guard lock(shared.mutex);
        shared.blocks.push_back(block);
        return;
    }
    mine->push_back(block);
    if (mine->size() >= 2 * kBatch) {
        std::lock_guard lock(shared.mutex);
        shared.blocks.insert(shared.blocks.end(), mine->end() - long(kBatch), mine->end());
        mine->resize(mine->size() - kBatch);
    }
}

TaskPool::~TaskPool() {
    for (auto& s : shared_)
        for (void* b : s.blocks)
            ::operator delete(b, kAlign);
}

} // namespace coexec::core
