// Vectors aligned for OpenCL host-pointer buffers and SIMD loads.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace bench {

// Allocator handing out 128-byte aligned blocks, so that a CPU OpenCL device can use the
// memory in place (CL_MEM_USE_HOST_PTR) instead of copying it.
template <typename T>
struct AlignedAllocator {
    using value_type = T;
    static constexpr std::align_val_t kAlign{128};
    AlignedAllocator() = default;
    template <typename U>
    AlignedAllocator(const AlignedAllocator<U>&) {}
    T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
    void deallocate(T* p, std::size_t) { ::operator delete(p, kAlign); }
    template <typename U>
    bool operator==(const AlignedAllocator<U>&) const {
        return true;
    }
};

// A std::vector whose data() is 128-byte aligned.
template <typename T>
using AlignedVec = std::vector<T, AlignedAllocator<T>>;

} // namespace bench
