#!/usr/bin/env bash
# Installs the Debian packages the project needs, and only those missing.
# Each area lists its packages in scripts/deps/<area>.txt (one per line, # comments).
#
# Usage: scripts/install-deps.sh [AREA...]
# With no argument, every scripts/deps/*.txt. An AREA names one list:
# scripts/deps/<area>.txt, or scripts/deps/extra/<area>.txt for the packages
# that only one make target needs (`make test-bignode`: extra/bignode.txt).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

lists=()
if (($# == 0)); then
  lists=("$here"/deps/*.txt)
fi
for area in "$@"; do
  if [[ -f $here/deps/$area.txt ]]; then
    lists+=("$here/deps/$area.txt")
  elif [[ -f $here/deps/extra/$area.txt ]]; then
    lists+=("$here/deps/extra/$area.txt")
  else
    echo "install-deps: no package list for '$area' (scripts/deps/$area.txt or scripts/deps/extra/$area.txt)" >&2
    exit 2
  fi
done

wanted=()
for list in "${lists[@]}"; do
  while read -r pkg _; do
    [[ -z "$pkg" || "$pkg" == \#* ]] && continue
    wanted+=("$pkg")
  done <"$list"
done

missing=()
for pkg in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or install them) and retry" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
