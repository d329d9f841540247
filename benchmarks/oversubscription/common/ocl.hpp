// A small RAII wrapper around one OpenCL CPU device (PoCL in practice): context, queue,
// program and kernels. Used by the HPCCG and GPT-2 OpenCL kernels.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>

namespace bench {

// Throws std::runtime_error naming `what` when an OpenCL call failed.
void cl_check(cl_int err, const char* what);

// One OpenCL kernel object; setting arguments is not thread-safe, so each user that
// enqueues from several threads owns its own Kernel (see OclContext::kernel).
class Kernel {
  public:
    explicit Kernel(cl_kernel k) : k_(k) {}
    Kernel(Kernel&& o) noexcept : k_(o.k_) { o.k_ = nullptr; }
    Kernel(const Kernel&) = delete;
    Kernel& operator=(const Kernel&) = delete;
    Kernel& operator=(Kernel&&) = delete;
    ~Kernel();

    // Sets argument `i` to the plain value `v` (a cl_mem, an int, a double...).
    template <typename T>
    Kernel& arg(cl_uint i, const T& v) {
        cl_check(clSetKernelArg(k_, i, sizeof(T), &v), "clSetKernelArg");
        return *this;
    }
    cl_kernel get() const { return k_; }

  private:
    cl_kernel k_;
};

// A buffer that aliases host memory (CL_MEM_USE_HOST_PTR), so a CPU device reads and
// writes the program's own arrays without copies.
class Buffer {
  public:
    Buffer() = default;
    Buffer(cl_context ctx, void* host, std::size_t bytes);
    Buffer(Buffer&& o) noexcept : m_(o.m_) { o.m_ = nullptr; }
    Buffer& operator=(Buffer&& o) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer();
    cl_mem get() const { return m_; }

  private:
    cl_mem m_ = nullptr;
};

// The first OpenCL CPU device, one command queue (out-of-order when the device allows it)
// and one program built from `source`. Construction throws when no device is usable.
class OclContext {
  public:
    explicit OclContext(const std::string& source);
    OclContext(const OclContext&) = delete;
    OclContext& operator=(const OclContext&) = delete;
    ~OclContext();

    // A fresh kernel object for `name` from the program.
    Kernel kernel(const char* name) const;
    // Wraps host memory in a buffer of this context.
    Buffer wrap(void* host, std::size_t bytes) const { return Buffer(ctx_, host, bytes); }
    // Enqueues a 1-D range [offset, offset+global) and returns its completion event (null for
    // an empty range). The kernel's arguments are captured at this call, so a caller sharing
    // a Kernel between threads must hold a lock from setting the arguments to here.
    cl_event enqueue(const Kernel& k, std::size_t offset, std::size_t global) const;
    // Enqueues a 2-D range of global[0] x global[1] work-items in work-groups of local[0] x
    // local[1] (each global a multiple of its local), as enqueue() does.
    cl_event enqueue2d(const Kernel& k, const std::size_t global[2],
                       const std::size_t local[2]) const;
    // Waits for and releases an event from enqueue(); a null event is already complete.
    static void wait(cl_event done);
    // enqueue() followed by wait().
    void run(const Kernel& k, std::size_t offset, std::size_t global) const {
        wait(enqueue(k, offset, global));
    }
    // The device's name, for reports.
    std::string device_name() const;

  private:
    cl_device_id dev_ = nullptr;
    cl_context ctx_ = nullptr;
    cl_command_queue queue_ = nullptr;
    cl_program prog_ = nullptr;
};

} // namespace bench
