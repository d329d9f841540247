// pocl_workload: OpenCL programs run on PoCL, one scenario per invocation, for
// the adapter tests. Prints deterministic result lines on stdout (compared
// between stock PoCL and PoCL under coexec) and exits non-zero on any wrong
// result or error.
#include "kernels.hpp"
#include "ocl.hpp"

#include <dlfcn.h>
#include <omp.h>
#include <tbb/parallel_for.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace {

using coexec::pocl_testing::kKernels;
using coexec::pocl_testing::PoclDevice;

void check(bool ok, const std::string& what) {
    if (!ok) throw std::runtime_error("wrong result: " + what);
}

long parse_count(const char* text, const char* what, long max) {
    char* end = nullptr;
    long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < 1 || v > max)
        throw std::invalid_argument(std::string(what) + " must be an integer in 1.." +
                                    std::to_string(max));
    return v;
}

unsigned long checksum(const std::vector<int>& v) {
    unsigned long s = 0; // unsigned: wrap-around is defined
    for (size_t i = 0; i < v.size(); ++i)
        s = s * 31 + static_cast<unsigned>(v[i]) + i;
    return s;
}

template <typename T>
cl::Buffer buffer_from(const PoclDevice& d, std::vector<T>& host) {
    return cl::Buffer(d.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, host.size() * sizeof(T),
                      host.data());
}

std::vector<int> read_back(cl::CommandQueue& q, const cl::Buffer& b, size_t n) {
    std::vector<int> out(n);
    q.enqueueReadBuffer(b, CL_TRUE, 0, n * sizeof(int), out.data());
    return out;
}

// Adds `value` to every element of a fresh buffer holding `base`, on its own
// queue, waits with clFinish and checks the result. Used by the task scenarios.
void add_on_own_queue(const PoclDevice& d, const cl::Program& p, int base, int value) {
    cl::CommandQueue q(d.context, d.device);
    std::vector<int> host(1024, base);
    cl::Buffer b = buffer_from(d, host);
    cl::Kernel k(p, "add_scalar");
    k.setArg(0, b);
    k.setArg(1, value);
    q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(host.size()));
    q.finish();
    for (int x : read_back(q, b, host.size()))
        check(x == base + value, "task add");
}

unsigned long shape_1d_odd(const PoclDevice& d, const cl::Program& p, cl::CommandQueue& q) {
    std::vector<int> v(1000);
    std::iota(v.begin(), v.end(), 0);
    cl::Buffer b = buffer_from(d, v);
    cl::Kernel k(p, "add_scalar");
    k.setArg(0, b);
    k.setArg(1, 7);
    q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(v.size()));
    auto out = read_back(q, b, v.size());
    for (size_t i = 0; i < v.size(); ++i)
        check(out[i] == static_cast<int>(i) + 7, "1d add");
    return checksum(out);
}

unsigned long shape_2d_matmul(const PoclDevice& d, const cl::Program& p, cl::CommandQueue& q) {
    const int n = 48;
    std::vector<int> a(n * n), b(n * n), c(n * n);
    for (int i = 0; i < n * n; ++i)
        a[i] = i % 7 - 3, b[i] = i % 5 - 2;
    cl::Buffer ba = buffer_from(d, a), bb = buffer_from(d, b), bc = buffer_from(d, c);
    cl::Kernel k(p, "matmul");
    k.setArg(0, ba), k.setArg(1, bb), k.setArg(2, bc), k.setArg(3, n);
    q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(n, n), cl::NDRange(8, 8));
    auto out = read_back(q, bc, c.size());
    for (int r = 0; r < n; ++r)
        for (int col = 0; col < n; ++col) {
            int want = 0;
            for (int i = 0; i < n; ++i)
                want += a[r * n + i] * b[i * n + col];
            check(out[r * n + col] == want, "2d matmul");
        }
    return checksum(out);
}

unsigned long shape_3d(const PoclDevice& d, const cl::Program& p, cl::CommandQueue& q) {
    const size_t w = 8, h = 6, depth = 4;
    std::vector<int> v(w * h * depth, -1);
    cl::Buffer b = buffer_from(d, v);
    cl::Kernel k(p, "coords3d");
    k.setArg(0, b);
    q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(w, h, depth), cl::NDRange(2, 3, 2));
    auto out = read_back(q, b, v.size());
    for (size_t z = 0; z < depth; ++z)
        for (size_t y = 0; y < h; ++y)
            for (size_t x = 0; x < w; ++x)
                check(out[(z * h + y) * w + x] == static_cast<int>(x * 10000 + y * 100 + z), "3d");
    return checksum(out);
}

unsigned long shape_local_reduction(const PoclDevice& d, const cl::Program& p,
                                    cl::CommandQueue& q) {
    const size_t n = 4096, group = 64;
    std::vector<int> in(n), sums(n / group);
    for (size_t i = 0; i < n; ++i)
        in[i] = static_cast<int>(i % 13);
    cl::Buffer bin = buffer_from(d, in), bout = buffer_from(d, sums);
    cl::Kernel k(p, "group_sum");
    k.setArg(0, bin), k.setArg(1, bout), k.setArg(2, cl::Local(group * sizeof(int)));
    q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(n), cl::NDRange(group));
    auto out = read_back(q, bout, sums.size());
    for (size_t g = 0; g < out.size(); ++g)
        check(out[g] == std::accumulate(in.begin() + g * group, in.begin() + (g + 1) * group, 0),
              "local reduction");
    return checksum(out);
}

void scenario_shapes(const PoclDevice& d, const cl::Program& p) {
    cl::CommandQueue q(d.context, d.device);
    std::printf("1d_odd %lu\n", shape_1d_odd(d, p, q));
    std::printf("2d_matmul %lu\n", shape_2d_matmul(d, p, q));
    std::printf("3d %lu\n", shape_3d(d, p, q));
    std::printf("local_reduction %lu\n", shape_local_reduction(d, p, q));
}

// Each host thread owns a queue and a buffer and runs a stream of kernels,
// all at once, on one shared context.
void queue_worker(const PoclDevice& d, const cl::Program& p, int id, int iters) {
    cl::CommandQueue q(d.context, d.device);
    std::vector<int> host(256, id * 1000);
    cl::Buffer b = buffer_from(d, host);
    cl::Kernel k(p, "add_scalar");
    k.setArg(0, b);
    int want = id * 1000;
    for (int it = 1; it <= iters; ++it) {
        k.setArg(1, it);
        q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(host.size()));
        want += it;
        if (it % 4 == 0)
            for (int x : read_back(q, b, host.size()))
                check(x == want, "queue stream");
    }
    q.finish();
    for (int x : read_back(q, b, host.size()))
        check(x == want, "queue final");
}

void scenario_queues(const PoclDevice& d, const cl::Program& p, int threads, int iters) {
    std::vector<std::thread> pool;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            try {
                queue_worker(d, p, t, iters);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "queue thread %d: %s\n", t, e.what());
                failures.fetch_add(1, std::memory_order_relaxed);
            }
        });
    for (auto& t : pool)
        t.join();
    check(failures.load() == 0, "queue threads");
    std::printf("queues threads=%d iters=%d ok\n", threads, iters);
}

// Attaches the calling thread to coexec for its lifetime when coexec is in the
// process (through the adapter), as the OpenMP and TBB adapters do with their
// workers; otherwise does nothing. Looked up at run time, like above.
class HostAttachment {
  public:
    HostAttachment() {
        using AttachFn = int (*)(void**, void*, const char*, unsigned long);
        auto attach = reinterpret_cast<AttachFn>(dlsym(RTLD_DEFAULT, "nosv_attach"));
        void* task = nullptr;
        attached_ = attach != nullptr && attach(&task, nullptr, "pocl-test-host", 0) == 0;
    }
    ~HostAttachment() {
        using DetachFn = int (*)(unsigned long);
        if (attached_) reinterpret_cast<DetachFn>(dlsym(RTLD_DEFAULT, "nosv_detach"))(0);
    }
    HostAttachment(const HostAttachment&) = delete;
    HostAttachment& operator=(const HostAttachment&) = delete;

  private:
    bool attached_ = false;
};

// Joins coexec (when present) for the scenario's duration.
class CoexecMembership {
  public:
    CoexecMembership() {
        auto init = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "nosv_init"));
        joined_ = init != nullptr && init() == 0;
    }
    ~CoexecMembership() {
        if (joined_) reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "nosv_shutdown"))();
    }
    CoexecMembership(const CoexecMembership&) = delete;
    CoexecMembership& operator=(const CoexecMembership&) = delete;

  private:
    bool joined_ = false;
};

// Like `queues`, but every host thread (and the main thread while PoCL starts)
// holds a coexec CPU: their clFinish and PoCL's start-up barrier must give it
// to PoCL's workers, or the run deadlocks.
void scenario_attached_queues(int threads, int iters) {
    CoexecMembership membership;
    std::unique_ptr<PoclDevice> d;
    std::unique_ptr<cl::Program> p;
    {
        HostAttachment main_attached;
        d = std::make_unique<PoclDevice>();
        p = std::make_unique<cl::Program>(d->build(kKernels));
    }
    std::vector<std::thread> pool;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            HostAttachment attached;
            try {
                queue_worker(*d, *p, t, iters);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "attached queue thread %d: %s\n", t, e.what());
                failures.fetch_add(1, std::memory_order_relaxed);
            }
        });
    for (auto& t : pool)
        t.join();
    check(failures.load() == 0, "attached queue threads");
    std::printf("attached-queues threads=%d iters=%d ok\n", threads, iters);
}

// Waits (bounded) until `count` reaches `want`: callbacks may run after the
// wait on their event returns.
bool wait_for_count(const std::atomic<int>& count, int want) {
    for (int i = 0; i < 30000 && count.load(std::memory_order_acquire) < want; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return count.load(std::memory_order_acquire) == want;
}

void CL_CALLBACK count_callback(cl_event, cl_int status, void* user) {
    if (status == CL_COMPLETE)
        static_cast<std::atomic<int>*>(user)->fetch_add(1, std::memory_order_acq_rel);
}

void events_chain(const PoclDevice& d, const cl::Program& p) {
    cl::CommandQueue q(d.context, d.device);
    std::vector<int> host(512, 1), out(512);
    cl::Buffer b(d.context, CL_MEM_READ_WRITE, host.size() * sizeof(int));
    cl::Kernel k1(p, "add_scalar"), k2(p, "add_scalar");
    k1.setArg(0, b), k1.setArg(1, 1), k2.setArg(0, b), k2.setArg(1, 2);
    std::vector<cl::Event> e(4);
    q.enqueueWriteBuffer(b, CL_FALSE, 0, host.size() * sizeof(int), host.data(), nullptr, &e[0]);
    std::vector<cl::Event> w0{e[0]};
    q.enqueueNDRangeKernel(k1, cl::NullRange, cl::NDRange(host.size()), cl::NullRange, &w0, &e[1]);
    std::vector<cl::Event> w1{e[1]};
    q.enqueueNDRangeKernel(k2, cl::NullRange, cl::NDRange(host.size()), cl::NullRange, &w1, &e[2]);
    std::vector<cl::Event> w2{e[2]};
    q.enqueueReadBuffer(b, CL_FALSE, 0, out.size() * sizeof(int), out.data(), &w2, &e[3]);
    std::atomic<int> callbacks{0};
    for (int i = 1; i < 4; ++i)
        e[i].setCallback(CL_COMPLETE, count_callback, &callbacks);
    cl::Event::waitForEvents({e[3]});
    for (int x : out)
        check(x == 4, "event chain");
    check(wait_for_count(callbacks, 3), "three completion callbacks");
    std::printf("events chain callbacks=%d\n", callbacks.load());
}

void events_user_gate(const PoclDevice& d, const cl::Program& p) {
    cl::CommandQueue q(d.context, d.device);
    std::vector<int> host(256, 10);
    cl::Buffer b = buffer_from(d, host);
    cl::Kernel k(p, "add_scalar");
    k.setArg(0, b), k.setArg(1, 5);
    cl::UserEvent gate(d.context);
    std::vector<cl::Event> wait{gate};
    cl::Event done;
    q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(host.size()), cl::NullRange, &wait, &done);
    q.flush();
    // A command flushed after it, on another queue, runs to the end first:
    // the device has had its turn at the gated kernel, which must wait.
    cl::CommandQueue other(d.context, d.device);
    std::vector<int> other_host(256, 0);
    cl::Buffer other_b = buffer_from(d, other_host);
    cl::Kernel other_k(p, "add_scalar");
    other_k.setArg(0, other_b), other_k.setArg(1, 1);
    other.enqueueNDRangeKernel(other_k, cl::NullRange, cl::NDRange(other_host.size()));
    other.finish();
    check(done.getInfo<CL_EVENT_COMMAND_EXECUTION_STATUS>() != CL_COMPLETE,
          "kernel ran before its user event");
    gate.setStatus(CL_COMPLETE);
    done.wait();
    for (int x : read_back(q, b, host.size()))
        check(x == 15, "user event gate");
    std::printf("events user_gate ok\n");
}

// A diamond of dependencies on an out-of-order queue, when PoCL offers one.
void events_out_of_order(const PoclDevice& d, const cl::Program& p) {
    auto props = d.device.getInfo<CL_DEVICE_QUEUE_ON_HOST_PROPERTIES>();
    if ((props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) == 0) {
        std::printf("events out_of_order unsupported\n");
        return;
    }
    cl::CommandQueue q(d.context, d.device, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    std::vector<int> hx(300, 0), hy(300, 100);
    cl::Buffer x = buffer_from(d, hx), y = buffer_from(d, hy);
    auto add = [&](cl::Buffer& buf, int v, const std::vector<cl::Event>& deps) {
        cl::Kernel k(p, "add_scalar");
        k.setArg(0, buf), k.setArg(1, v);
        cl::Event ev;
        q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(300), cl::NullRange,
                               deps.empty() ? nullptr : &deps, &ev);
        return ev;
    };
    cl::Event a = add(x, 1, {});
    cl::Event b = add(x, 2, {a});
    cl::Event c = add(y, 3, {a});
    cl::Event last = add(y, 4, {b, c});
    last.wait();
    q.finish();
    for (int v : read_back(q, x, 300))
        check(v == 3, "out-of-order x");
    for (int v : read_back(q, y, 300))
        check(v == 107, "out-of-order y");
    std::printf("events out_of_order ok\n");
}

void scenario_events(const PoclDevice& d, const cl::Program& p) {
    events_chain(d, p);
    events_user_gate(d, p);
    events_out_of_order(d, p);
}

// OpenMP tasks that each run a kernel and wait for it with clFinish.
void scenario_openmp(const PoclDevice& d, const cl::Program& p, int tasks) {
    std::atomic<int> failures{0};
#pragma omp parallel
#pragma omp single
    for (int t = 0; t < tasks; ++t) {
#pragma omp task firstprivate(t)
        try {
            add_on_own_queue(d, p, t, t + 1);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "openmp task %d: %s\n", t, e.what());
            failures.fetch_add(1, std::memory_order_relaxed);
        }
    }
    check(failures.load() == 0, "openmp tasks");
    std::printf("openmp tasks=%d ok\n", tasks);
}

// The same with oneTBB tasks.
void scenario_tbb(const PoclDevice& d, const cl::Program& p, int tasks) {
    std::atomic<int> failures{0};
    tbb::parallel_for(0, tasks, [&](int t) {
        try {
            add_on_own_queue(d, p, t, t + 1);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "tbb task %d: %s\n", t, e.what());
            failures.fetch_add(1, std::memory_order_relaxed);
        }
    });
    check(failures.load() == 0, "tbb tasks");
    std::printf("tbb tasks=%d ok\n", tasks);
}

// "coexec" when the calling thread is a coexec thread, else "none". Looked up
// at run time so that the program runs unchanged with and without coexec.
// (`coexec top` shows the attach label; the tests check it there.)
std::string coexec_identity_of_this_thread() {
    using SelfFn = void* (*)();
    auto self = reinterpret_cast<SelfFn>(dlsym(RTLD_DEFAULT, "nosv_self"));
    return self != nullptr && self() != nullptr ? "coexec" : "none";
}

// The argument block of a native kernel: OpenCL copies it, so it carries a
// pointer to where the worker writes its answer.
struct NativeArgs {
    std::string* identity;
};

void CL_CALLBACK record_identity_native(void* p) {
    *static_cast<NativeArgs*>(p)->identity = coexec_identity_of_this_thread();
}

// Reports whether a PoCL worker (which runs native kernels), a plain thread of
// the program and the main thread are coexec threads.
void scenario_identity(const PoclDevice& d) {
    std::string worker = "unsupported";
    if (d.device.getInfo<CL_DEVICE_EXECUTION_CAPABILITIES>() & CL_EXEC_NATIVE_KERNEL) {
        cl::CommandQueue q(d.context, d.device);
        NativeArgs args{&worker};
        std::pair<void*, size_t> arg_block(&args, sizeof args);
        cl::Event ev;
        q.enqueueNativeKernel(record_identity_native, arg_block, nullptr, nullptr, nullptr, &ev);
        ev.wait();
    }
    std::string plain;
    std::thread([&] { plain = coexec_identity_of_this_thread(); }).join();
    std::printf("identity worker=%s plain_thread=%s main=%s\n", worker.c_str(), plain.c_str(),
                coexec_identity_of_this_thread().c_str());
}

// The argument block of the hold's native kernel (copied, like NativeArgs).
struct HoldArgs {
    const char* stop_file; // outlives the kernel: the scenario waits for it
    pid_t parent;
};

// Returns once `stop_file` exists, or once the program that started this
// one is gone (this one would then wait forever), looking every
// millisecond. The thread keeps its coexec CPU all the while: coexec does
// not see a sleep in the kernel.
void CL_CALLBACK hold_native(void* p) {
    const auto* args = static_cast<HoldArgs*>(p);
    while (access(args->stop_file, F_OK) != 0 && getppid() == args->parent)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Keeps a PoCL worker on its CPU, in a native kernel, until `stop_file`
// exists, so that a test can watch it in `coexec top`.
void scenario_hold(const PoclDevice& d, const char* stop_file) {
    check((d.device.getInfo<CL_DEVICE_EXECUTION_CAPABILITIES>() & CL_EXEC_NATIVE_KERNEL) != 0,
          "hold needs native kernels");
    cl::CommandQueue q(d.context, d.device);
    HoldArgs args{stop_file, getppid()};
    std::pair<void*, size_t> arg_block(&args, sizeof args);
    cl::Event ev;
    q.enqueueNativeKernel(hold_native, arg_block, nullptr, nullptr, nullptr, &ev);
    std::printf("hold running\n");
    std::fflush(stdout);
    ev.wait();
    std::printf("hold done\n");
}

// `rounds` of an OpenMP parallel region followed by a short kernel that the
// main thread waits for in clFinish. Under the OpenMP adapter the main thread
// is then a root that keeps its CPU between regions, and lends it for each
// wait (a test reads that from the trace).
void scenario_regions_and_kernels(const PoclDevice& d, const cl::Program& p, int rounds) {
    cl::CommandQueue q(d.context, d.device);
    std::vector<int> host(4096, 1);
    cl::Buffer b = buffer_from(d, host);
    cl::Kernel k(p, "spin");
    k.setArg(0, b), k.setArg(1, 2000);
    std::atomic<int> members{0};
    for (int r = 0; r < rounds; ++r) {
#pragma omp parallel
        members.fetch_add(1, std::memory_order_relaxed);
        q.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(host.size()));
        q.finish();
    }
    check(members.load() >= rounds, "every region ran");
    std::printf("regions-and-kernels rounds=%d ok\n", rounds);
}

int usage() {
    std::fprintf(stderr, "usage: pocl_workload shapes | queues THREADS ITERS | events |\n"
                         "       openmp TASKS | tbb TASKS | identity | hold STOP_FILE |\n"
                         "       regions-and-kernels ROUNDS |\n"
                         "       attached-queues THREADS ITERS\n");
    return 2;
}

int run(int argc, char** argv) {
    if (argc < 2) return usage();
    const std::string scenario = argv[1];
    const std::map<std::string, int> arity = {{"shapes", 0},
                                              {"queues", 2},
                                              {"events", 0},
                                              {"openmp", 1},
                                              {"tbb", 1},
                                              {"identity", 0},
                                              {"hold", 1},
                                              {"attached-queues", 2},
                                              {"regions-and-kernels", 1}};
    auto found = arity.find(scenario);
    if (found == arity.end() || argc != 2 + found->second) return usage();
    if (scenario == "attached-queues")
        return scenario_attached_queues(parse_count(argv[2], "THREADS", 256),
                                        parse_count(argv[3], "ITERS", 100000)),
               0;
    PoclDevice d;
    if (scenario == "identity") return scenario_identity(d), 0;
    if (scenario == "hold") return scenario_hold(d, argv[2]), 0;
    cl::Program p = d.build(kKernels);
    if (scenario == "shapes") scenario_shapes(d, p);
    if (scenario == "queues")
        scenario_queues(d, p, parse_count(argv[2], "THREADS", 256),
                        parse_count(argv[3], "ITERS", 100000));
    if (scenario == "events") scenario_events(d, p);
    if (scenario == "openmp") scenario_openmp(d, p, parse_count(argv[2], "TASKS", 100000));
    if (scenario == "tbb") scenario_tbb(d, p, parse_count(argv[2], "TASKS", 100000));
    if (scenario == "regions-and-kernels")
        scenario_regions_and_kernels(d, p, parse_count(argv[2], "ROUNDS", 100000));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const cl::Error& e) {
        std::fprintf(stderr, "pocl_workload: OpenCL error %d in %s\n", e.err(), e.what());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "pocl_workload: %s\n", e.what());
    }
    return 1;
}
