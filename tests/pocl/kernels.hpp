// OpenCL C kernels of several shapes, with host references, for the PoCL tests.
#pragma once

namespace coexec::pocl_testing {

// All kernels use integers so that results compare exactly across runs.
inline constexpr const char* kKernels = R"CLC(
__kernel void add_scalar(__global int* data, int value) {
    size_t i = get_global_id(0);
    data[i] = data[i] + value;
}

__kernel void matmul(__global const int* a, __global const int* b, __global int* c, int n) {
    int row = get_global_id(1);
    int col = get_global_id(0);
    int sum = 0;
    for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + col];
    c[row * n + col] = sum;
}

__kernel void coords3d(__global int* out) {
    size_t x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    size_t w = get_global_size(0), h = get_global_size(1);
    out[(z * h + y) * w + x] = (int)(x * 10000 + y * 100 + z);
}

__kernel void group_sum(__global const int* in, __global int* out, __local int* scratch) {
    size_t lid = get_local_id(0);
    size_t lsize = get_local_size(0);
    scratch[lid] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t stride = lsize / 2; stride > 0; stride /= 2) {
        if (lid < stride) scratch[lid] += scratch[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[get_group_id(0)] = scratch[0];
}

__kernel void spin(__global int* data, int rounds) {
    size_t i = get_global_id(0);
    int v = data[i];
    for (int r = 0; r < rounds; ++r) v = v * 1103515245 + 12345;
    data[i] = v;
}
)CLC";

} // namespace coexec::pocl_testing
