// The OpenCL C++ bindings as the PoCL tests and benchmarks use them.
#pragma once

#define CL_HPP_ENABLE_EXCEPTIONS
#define CL_HPP_TARGET_OPENCL_VERSION 300
#define CL_HPP_MINIMUM_OPENCL_VERSION 200
#include <CL/opencl.hpp>

#include <stdexcept>
#include <string>

namespace coexec::pocl_testing {

// The first CPU device of the first platform whose name contains "Portable
// Computing Language" (PoCL), with a context on it.
struct PoclDevice {
    cl::Platform platform;
    cl::Device device;
    cl::Context context;

    // Throws std::runtime_error when PoCL is not installed.
    PoclDevice() {
        std::vector<cl::Platform> platforms;
        cl::Platform::get(&platforms);
        for (auto& p : platforms) {
            if (p.getInfo<CL_PLATFORM_NAME>().find("Portable Computing Language") ==
                std::string::npos)
                continue;
            std::vector<cl::Device> devices;
            p.getDevices(CL_DEVICE_TYPE_CPU, &devices);
            if (devices.empty()) continue;
            platform = p;
            device = devices.front();
            context = cl::Context(device);
            return;
        }
        throw std::runtime_error("no PoCL CPU device (is pocl-opencl-icd installed?)");
    }

    // Builds `source` for this device; a build error carries the build log.
    cl::Program build(const std::string& source) const {
        cl::Program program(context, source);
        try {
            program.build({device});
        } catch (const cl::Error&) {
            throw std::runtime_error("kernel build failed:\n" +
                                     program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(device));
        }
        return program;
    }
};

} // namespace coexec::pocl_testing
