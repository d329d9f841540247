#!/usr/bin/env bash
# Usage: check-shm-leaks.sh COMMAND [ARG...]
# Runs COMMAND, then fails if it left behind in /dev/shm a coexec segment
# (coexec.*) or a libomp registration file (__KMP_REGISTERED_LIB_<pid>_*)
# that was not there before. An entry still in use is not counted: a segment
# some running process maps, or the registration of a running process (another
# run on the same machine). What is left behind is listed, not removed (on a
# shared machine it may be another run's), and the script exits 1; otherwise
# it exits with COMMAND's status.
set -uo pipefail

pattern='^(coexec\.|__KMP_REGISTERED_LIB_)'
snapshot() { ls -1 /dev/shm 2>/dev/null | grep -E "$pattern" | sort; }

# True if a running process still uses the entry.
in_use() {
  local name=$1
  if [[ $name == __KMP_REGISTERED_LIB_* ]]; then
    local pid=${name#__KMP_REGISTERED_LIB_}
    pid=${pid%%_*}
    [[ -d /proc/$pid ]]
  else
    grep -qsF "/dev/shm/$name" /proc/[0-9]*/maps
  fi
}

before=$(mktemp)
trap 'rm -f "$before"' EXIT
snapshot >"$before"

"$@"
status=$?

leaked=()
while read -r name; do
  [[ -n $name ]] || continue
  in_use "$name" || leaked+=("$name")
done < <(snapshot | comm -13 "$before" -)

if ((${#leaked[@]} > 0)); then
  echo "check-shm-leaks: '$*' left behind in /dev/shm:" >&2
  printf '  /dev/shm/%s\n' "${leaked[@]}" >&2
  echo "check-shm-leaks: a test that kills a process must remove what it leaves there" >&2
  exit 1
fi
exit "$status"
