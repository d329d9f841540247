// Which loaded library a code address belongs to, as far as PoCL is concerned.
#pragma once

namespace coexec::pocl {

// The library that contains some code address.
enum class Module {
    Other,       // not PoCL (the program, glibc, libcoexec, LLVM, ...)
    PoclPthread, // PoCL's pthread CPU driver (libpocl-devices-pthread.so)
    PoclOther,   // the rest of PoCL (libpocl.so, its other device drivers)
};

// Classifies `address` by the file name of the loaded object that contains it
// (dladdr). Unknown addresses are Other.
Module module_of(const void* address);

// module_of() for return addresses of wrapped calls: remembers the last few
// answers per thread, since a PoCL thread waits from a handful of call sites
// and dladdr walks the loader's list under its lock. A library unloaded and
// another loaded at the same address could be misclassified; PoCL's drivers
// stay loaded for the life of the process.
Module caller_module(const void* return_address);

// True for both PoCL kinds.
inline bool is_pocl(Module m) {
    return m != Module::Other;
}

} // namespace coexec::pocl
