#include "stats.hpp"

#include <algorithm>
#include <stdexcept>

namespace coexec::bench {

Summary summarize(std::vector<double> samples) {
    if (samples.empty()) throw std::invalid_argument("summarize: no samples");
    std::sort(samples.begin(), samples.end());
    const size_t n = samples.size();
    const double median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
    return {median, samples.front(), samples.back()};
}

} // namespace coexec::bench
