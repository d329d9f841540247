// OpenCL C kernels for the PoCL benchmarks.
#pragma once

namespace coexec::pocl_bench {

inline constexpr const char* kBenchKernels = R"CLC(
__kernel void tiny(__global int* data) { data[get_global_id(0)] += 1; }

// Bandwidth-bound: 2 loads and 1 store per element.
__kernel void triad(__global const float* a, __global const float* b, __global float* c,
                    float s) {
    size_t i = get_global_id(0);
    c[i] = a[i] + s * b[i];
}

// Compute-bound: `rounds` dependent integer operations per element.
__kernel void spin(__global int* data, int rounds) {
    size_t i = get_global_id(0);
    int v = data[i];
    for (int r = 0; r < rounds; ++r) v = v * 1103515245 + 12345;
    data[i] = v;
}
)CLC";

} // namespace coexec::pocl_bench
