// Sums a range with coexec tasks from the C++ API: a runtime guard, an
// attached main thread, a task group, and a task pinned to one CPU.
#include <coexec/coexec.hpp>

#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

int main() try {
    coexec::runtime rt;
    coexec::attach_guard main_thread("main");
    coexec::task_type type("sum");

    std::vector<long> partial(64, 0);
    {
        coexec::task_group group(type);
        for (size_t i = 0; i < partial.size(); ++i)
            group.run([&partial, i] {
                for (long v = long(i) * 1000; v < long(i + 1) * 1000; ++v)
                    partial[i] += v;
            });
        group.wait(); // pauses the main task: its CPU runs the group meanwhile
    }
    long total = std::accumulate(partial.begin(), partial.end(), 0L);

    // One more task, strictly on the first managed CPU.
    int* cpus = nosv_get_available_cpus(); // ours to free
    int cpu = cpus[0];
    std::free(cpus);
    int ran_on = -1;
    coexec::task pinned(type, [&] { ran_on = nosv_get_current_system_cpu(); });
    pinned.set_affinity(coexec::affinity::cpu(uint32_t(cpu)));
    pinned.submit();
    pinned.wait();

    const long expected = 64000L * 63999L / 2;
    std::printf("sum %ld (expected %ld), pinned task ran on CPU %d (wanted %d)\n", total, expected,
                ran_on, cpu);
    return total == expected && ran_on == cpu ? 0 : 1;
} catch (const coexec::error& e) {
    std::fprintf(stderr, "coexec error: %s\n", e.what());
    return 1;
}
