#include "ocl.hpp"

#include <vector>

namespace bench {

void cl_check(cl_int err, const char* what) {
    if (err != CL_SUCCESS)
        throw std::runtime_error(std::string("OpenCL: ") + what + " failed (" +
                                 std::to_string(err) + ")");
}

Kernel::~Kernel() {
    if (k_) clReleaseKernel(k_);
}

Buffer::Buffer(cl_context ctx, void* host, std::size_t bytes) {
    cl_int err = CL_SUCCESS;
    m_ = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, host, &err);
    cl_check(err, "clCreateBuffer");
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
    if (this != &o) {
        if (m_) clReleaseMemObject(m_);
        m_ = o.m_;
        o.m_ = nullptr;
    }
    return *this;
}

Buffer::~Buffer() {
    if (m_) clReleaseMemObject(m_);
}

namespace {

cl_device_id first_cpu_device() {
    cl_uint nplat = 0;
    cl_check(clGetPlatformIDs(0, nullptr, &nplat), "clGetPlatformIDs");
    if (nplat == 0) throw std::runtime_error("OpenCL: no platform (is pocl-opencl-icd installed?)");
    std::vector<cl_platform_id> plats(nplat);
    cl_check(clGetPlatformIDs(nplat, plats.data(), nullptr), "clGetPlatformIDs");
    for (cl_platform_id p : plats) {
        cl_device_id d = nullptr;
        if (clGetDeviceIDs(p, CL_DEVICE_TYPE_CPU, 1, &d, nullptr) == CL_SUCCESS) return d;
    }
    throw std::runtime_error("OpenCL: no CPU device found");
}

std::string build_log(cl_program prog, cl_device_id dev) {
    std::size_t len = 0;
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &len);
    std::string log(len, '\0');
    clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, len, log.data(), nullptr);
    return log;
}

} // namespace

OclContext::OclContext(const std::string& source) : dev_(first_cpu_device()) {
    cl_int err = CL_SUCCESS;
    ctx_ = clCreateContext(nullptr, 1, &dev_, nullptr, nullptr, &err);
    cl_check(err, "clCreateContext");
    cl_command_queue_properties supported = 0;
    clGetDeviceInfo(dev_, CL_DEVICE_QUEUE_PROPERTIES, sizeof supported, &supported, nullptr);
    // Out-of-order lets kernels enqueued by different OpenMP tasks overlap.
    cl_command_queue_properties props = supported & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE;
    queue_ = clCreateCommandQueue(ctx_, dev_, props, &err);
    cl_check(err, "clCreateCommandQueue");
    const char* src = source.c_str();
    prog_ = clCreateProgramWithSource(ctx_, 1, &src, nullptr, &err);
    cl_check(err, "clCreateProgramWithSource");
    if (clBuildProgram(prog_, 1, &dev_, "", nullptr, nullptr) != CL_SUCCESS)
        throw std::runtime_error("OpenCL: program build failed:\n" + build_log(prog_, dev_));
}

OclContext::~OclContext() {
    if (prog_) clReleaseProgram(prog_);
    if (queue_) clReleaseCommandQueue(queue_);
    if (ctx_) clReleaseContext(ctx_);
}

Kernel OclContext::kernel(const char* name) const {
    cl_int err = CL_SUCCESS;
    cl_kernel k = clCreateKernel(prog_, name, &err);
    cl_check(err, name);
    return Kernel(k);
}

cl_event OclContext::enqueue(const Kernel& k, std::size_t offset, std::size_t global) const {
    if (global == 0) return nullptr;
    cl_event done = nullptr;
    cl_check(
        clEnqueueNDRangeKernel(queue_, k.get(), 1, &offset, &global, nullptr, 0, nullptr, &done),
        "clEnqueueNDRangeKernel");
    clFlush(queue_);
    return done;
}

cl_event OclContext::enqueue2d(const Kernel& k, const std::size_t global[2],
                               const std::size_t local[2]) const {
    if (global[0] == 0 || global[1] == 0) return nullptr;
    cl_event done = nullptr;
    cl_check(clEnqueueNDRangeKernel(queue_, k.get(), 2, nullptr, global, local, 0, nullptr, &done),
             "clEnqueueNDRangeKernel");
    clFlush(queue_);
    return done;
}

void OclContext::wait(cl_event done) {
    if (!done) return;
    cl_int err = clWaitForEvents(1, &done);
    clReleaseEvent(done);
    cl_check(err, "clWaitForEvents");
}

std::string OclContext::device_name() const {
    char name[256] = {};
    clGetDeviceInfo(dev_, CL_DEVICE_NAME, sizeof name - 1, name, nullptr);
    return name;
}

} // namespace bench
