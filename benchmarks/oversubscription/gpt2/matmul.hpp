// The three matmul kernels behind an interface, so they run as plain C++ or as OpenCL
// kernels on PoCL. They are GPT-2's hot spot; the other kernels always run as C++.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace gpt2 {

// Same contracts as layers::matmul_* (see layers.hpp). Pieces may call concurrently on
// disjoint outputs.
class Matmul {
  public:
    virtual ~Matmul() = default;
    virtual void forward(float* out, const float* inp, const float* w, const float* bias, int C,
                         int OC, int lo, int hi, int olo, int ohi) = 0;
    virtual void backward_input(float* dinp, const float* dout, const float* w, int C, int OC,
                                int lo, int hi) = 0;
    virtual void backward_weight(float* dw, float* dbias, const float* dout, const float* inp,
                                 int BT, int C, int OC, int olo, int ohi) = 0;
};

// A memory region an OpenCL matmul may be handed pointers into.
struct Region {
    float* base;
    std::size_t floats;
};

// "cpp" or "ocl". The OpenCL one accepts only pointers inside `regions` (wrapped once).
std::unique_ptr<Matmul> make_matmul(const std::string& name, const Region* regions, int count);

} // namespace gpt2
