#!/usr/bin/env bash
# Installs coexec into a scratch prefix, then builds three consumers against
# it: plain `cc -lnosv`, pkg-config nos-v / coexec, and find_package(coexec).
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(ls -d "$prefix"/lib*/ | head -1)
test -e "$libdir/libnosv.so" || { echo "libnosv.so link missing"; exit 1; }
export NOSV_CONFIG_OVERRIDE=shared_memory.name=install$$

# 1. A nOS-V program, unchanged, with -lnosv.
# shellcheck disable=SC2086 # WARNING_FLAGS is a list of flags.
${CC:-cc} -std=c11 ${WARNING_FLAGS:--Wall -Wextra -Werror} "$src/examples/c/tasks.c" -I"$prefix/include" -L"$libdir" -lnosv \
  -Wl,-rpath,"$libdir" -o "$work/tasks"
"$work/tasks" 1000
# shellcheck disable=SC2086
${CC:-cc} -std=c11 ${WARNING_FLAGS:--Wall -Wextra -Werror} "$src/examples/c/compat.c" -I"$prefix/include" -L"$libdir" -lnosv \
  -Wl,-rpath,"$libdir" -o "$work/compat"
"$work/compat" >/dev/null

# 2. pkg-config, under both names.
export PKG_CONFIG_PATH=$libdir/pkgconfig
for pc in nos-v coexec; do
  ${CC:-cc} -std=c11 "$src/examples/c/tasks.c" $(pkg-config --cflags --libs $pc) -Wl,-rpath,"$libdir" -o "$work/tasks-$pc"
  "$work/tasks-$pc" 100
done

# 3. A CMake project using find_package(coexec) and the C++ API.
mkdir -p "$work/consumer"
cat >"$work/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(consumer CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(coexec REQUIRED)
add_executable(sum main.cpp)
target_link_libraries(sum PRIVATE coexec::coexec)
CM
cp "$src/examples/cpp/parallel_sum.cpp" "$work/consumer/main.cpp"
cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
cmake --build "$work/consumer/build" >/dev/null
"$work/consumer/build/sum"
rm -f /dev/shm/coexec.install$$.u*
echo "install consumers: OK"
