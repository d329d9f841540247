// Where a piece of work may run.
#pragma once

#include "shm/layout.hpp"

#include <cstdint>

namespace coexec::scheduler {

// Any CPU, one CPU, or one NUMA node (logical indices); `strict` forbids the
// others, otherwise the place is only preferred.
struct Placement {
    enum class Kind : uint8_t { Any, Cpu, Numa } kind = Kind::Any;
    int32_t index = -1;
    bool strict = false;

    // Whether work so placed may run on `cpu`, the slot of logical CPU
    // `cpu_index`.
    bool allows(const shm::CpuSlot& cpu, int32_t cpu_index) const {
        if (!strict) return true;
        switch (kind) {
        case Kind::Any:
            return true;
        case Kind::Cpu:
            return cpu_index == index;
        case Kind::Numa:
            return cpu.numa == index;
        }
        return true;
    }
    // Whether `cpu_index` is the preferred (not strict) CPU of this work.
    // The CPU that work so placed runs best on without needing it, or -1.
    int32_t preferred() const { return !strict && kind == Kind::Cpu ? index : -1; }
    bool prefers(int32_t cpu_index) const {
        return !strict && kind == Kind::Cpu && index == cpu_index;
    }
};

} // namespace coexec::scheduler
