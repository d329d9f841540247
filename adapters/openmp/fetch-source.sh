#!/usr/bin/env bash
# Prints the path of an unpacked LLVM OpenMP source tree (the `openmp/` and
# `cmake/` directories of Debian's llvm-toolchain-N orig tarball), fetching it
# with `apt-get source` on first use. The tree is cached outside the build
# directory, keyed by the Debian version, so later builds work offline.
#
# Usage: fetch-source.sh [LLVM_MAJOR]    (default 14)
# Env:   COEXEC_CACHE_DIR  cache root (default /var/cache/coexec, or
#                          ~/.cache/coexec when that is not writable)
set -euo pipefail

major=${1:-14}
srcpkg=llvm-toolchain-${major}

die() {
  echo "fetch-source: $*" >&2
  exit 1
}
log() { echo "fetch-source: $*" >&2; }

cache_root() {
  if [[ -n "${COEXEC_CACHE_DIR:-}" ]]; then
    echo "$COEXEC_CACHE_DIR"
  elif mkdir -p /var/cache/coexec 2>/dev/null && [[ -w /var/cache/coexec ]]; then
    echo /var/cache/coexec
  else
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/coexec"
  fi
}

# The version of the source package the installed clang was built from, so the
# runtime matches the compiler; falls back to the candidate apt knows about.
source_version() {
  local v
  v=$(dpkg-query -W -f='${source:Version}' "clang-${major}" 2>/dev/null || true)
  [[ -n "$v" ]] || v=$(apt-cache showsrc "$srcpkg" 2>/dev/null | awk '/^Version:/ {print $2; exit}')
  [[ -n "$v" ]] || die "cannot tell which version of $srcpkg to fetch (is clang-${major} installed?)"
  echo "$v"
}

# Adds a deb-src entry of our own, mirroring the binary sources, when apt has
# none; never edits the system's existing source files.
ensure_deb_src() {
  if apt-cache showsrc "$srcpkg" 2>/dev/null | grep -q '^Package:'; then
    return
  fi
  [[ $(id -u) -eq 0 ]] || die "no deb-src entry for $srcpkg; run once as root or pass -DCOEXEC_OPENMP_SOURCE_DIR="
  "$(dirname "$0")/../../scripts/enable-deb-src.sh" || die "cannot enable deb-src"
}

main() {
  local version upstream root dest
  version=$(source_version)
  upstream=${version#*:}
  upstream=${upstream%-*}
  root=$(cache_root)
  dest="$root/${srcpkg}_${version//:/_}"
  if [[ -f "$dest/.complete" ]]; then
    echo "$dest"
    return
  fi
  mkdir -p "$root" || die "cannot create cache directory $root"
  # One fetch at a time per cache: parallel configures share the result.
  exec 9>"$root/.lock"
  flock 9
  if [[ -f "$dest/.complete" ]]; then
    echo "$dest"
    return
  fi
  ensure_deb_src
  fetch_dir=$(mktemp -d "$root/.fetch.XXXXXX")
  trap 'rm -rf "$fetch_dir"' EXIT
  local work=$fetch_dir
  log "downloading $srcpkg=$version (once; cached in $root)"
  (cd "$work" && apt-get source --download-only -qq "$srcpkg=$version" >&2) ||
    die "apt-get source $srcpkg=$version failed"
  local orig
  orig=$(ls "$work"/"${srcpkg}_${upstream}".orig.tar.* 2>/dev/null | head -n1)
  [[ -n "$orig" ]] || die "no orig tarball for $srcpkg $upstream in the download"
  log "extracting openmp/ and cmake/ from $(basename "$orig")"
  mkdir -p "$work/tree"
  tar -xf "$orig" -C "$work/tree" --strip-components=1 --wildcards \
    '*/openmp/*' '*/cmake/*' --exclude='*/llvm/*' --exclude='*/clang/*' >&2 ||
    die "extracting $orig failed"
  [[ -f "$work/tree/openmp/runtime/src/kmp.h" ]] || die "$orig has no openmp/runtime"
  # Keep only what the standalone runtime build needs.
  find "$work/tree" -mindepth 1 -maxdepth 1 ! -name openmp ! -name cmake -exec rm -rf {} +
  rm -rf "$dest"
  mv "$work/tree" "$dest"
  echo "$version" >"$dest/.complete"
  echo "$dest"
}

main "$@"
