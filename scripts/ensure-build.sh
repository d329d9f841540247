# Sourced by the benchmark scripts: ensure_build ROOT BUILD JOBS FILE... builds
# ROOT into BUILD (configuring it first if needed) when any FILE, a path
# inside BUILD, is missing.
ensure_build() {
  local root=$1 build=$2 jobs=$3
  shift 3
  local f
  for f in "$@"; do
    if [[ ! -e $build/$f ]]; then
      echo "$(basename "$0"): $build/$f missing: building"
      [[ -f $build/CMakeCache.txt ]] ||
        cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
      cmake --build "$build" -j"$jobs"
      return
    fi
  done
}
