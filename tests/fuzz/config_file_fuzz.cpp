// libFuzzer target: a NOSV_CONFIG file's contents, parsed and applied.
#include "fuzz_support.hpp"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace coexec;
    config::Config config;
    std::string_view text(reinterpret_cast<const char*>(data), size);
    config::ConfigResult r = config::apply_config_text(config, text, "fuzz.toml");
    fuzz::check_config(r, config);
    return 0;
}
