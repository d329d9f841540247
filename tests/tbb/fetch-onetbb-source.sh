#!/usr/bin/env bash
# Prints the directory of Debian's onetbb source tree (the version of the
# installed libtbb-dev), fetching and unpacking it once into a cache outside
# the build tree. When apt has no deb-src entry, one is added in a sources
# file of our own (never editing the system's files). Exits non-zero with one
# clear line on stderr when the source cannot be had.
# Env: COEXEC_CACHE_DIR  cache root (default /var/cache/coexec, or
#                        ~/.cache/coexec when that is not writable)
set -euo pipefail

die() {
  echo "fetch-onetbb-source: $*" >&2
  exit 1
}

cache_root() {
  if [[ -n "${COEXEC_CACHE_DIR:-}" ]]; then
    echo "$COEXEC_CACHE_DIR"
  elif mkdir -p /var/cache/coexec 2>/dev/null && [[ -w /var/cache/coexec ]]; then
    echo /var/cache/coexec
  else
    echo "${XDG_CACHE_HOME:-$HOME/.cache}/coexec"
  fi
}

has_source() { apt-cache showsrc onetbb 2>/dev/null | grep -qx "Version: $1"; }

ensure_deb_src() {
  has_source "$1" && return
  [[ $(id -u) -eq 0 ]] || die "no deb-src entry for onetbb $1 and not root"
  "$(dirname "$0")/../../scripts/enable-deb-src.sh" || die "cannot enable deb-src"
  has_source "$1" || die "apt offers no source for onetbb $1"
}

main() {
  command -v dpkg-source >/dev/null || die "dpkg-source is missing (package dpkg-dev)"
  local version root target
  version=$(dpkg-query -W -f='${Version}' libtbb-dev 2>/dev/null) || true
  [[ -n "$version" ]] || die "libtbb-dev is not installed"
  root=$(cache_root)
  target="$root/onetbb-$version"
  mkdir -p "$root" || die "cannot create cache directory $root"
  # One fetch at a time per cache: parallel configures share the result.
  exec 9>"$root/.onetbb.lock"
  flock 9
  if [[ ! -f "$target/.complete" ]]; then
    ensure_deb_src "$version"
    work=$(mktemp -d "$root/.onetbb.XXXXXX")
    trap 'rm -rf "${work:-}"' EXIT
    (cd "$work" && apt-get source -qq --download-only "onetbb=$version" >/dev/null 2>&1) ||
      die "apt-get source onetbb=$version failed"
    dpkg-source --no-check -x "$work"/onetbb_*.dsc "$work/tree" >/dev/null 2>&1 ||
      die "cannot unpack onetbb $version"
    rm -rf "$target"
    mv "$work/tree" "$target"
    touch "$target/.complete"
  fi
  echo "$target"
}

work=""
main "$@"
