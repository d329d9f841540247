// Included first in every fuzz target (-include): toml++'s own assertions
// off, as in Debian's libtomlplusplus (built with NDEBUG). toml++ 3.3 asserts
// on malformed documents that it otherwise reports as parse errors; the
// fuzz targets look for what a user's build does with them. The rest of the
// fuzz build keeps its assertions.
#pragma once
#define TOML_ASSERT(expr) static_cast<void>(0)
