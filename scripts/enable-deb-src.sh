#!/usr/bin/env bash
# Makes Debian source packages available to `apt-get source`: adds a deb-src
# entry of coexec's own (mirroring Debian's main archive) when missing, and
# refreshes the package lists. Never edits the system's existing source files.
# Usage: enable-deb-src.sh   (as root)
set -euo pipefail
[[ $(id -u) -eq 0 ]] || { echo "enable-deb-src: must run as root" >&2; exit 1; }
list=/etc/apt/sources.list.d/coexec-deb-src.sources
if [[ ! -e $list ]]; then
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  echo "enable-deb-src: enabling deb-src in $list" >&2
  cat >"$list" <<SRC
# Added by coexec (scripts/enable-deb-src.sh) to fetch Debian source packages.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: ${suite} ${suite}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
apt-get update -qq >/dev/null 2>&1 || { echo "enable-deb-src: apt-get update failed" >&2; exit 1; }
