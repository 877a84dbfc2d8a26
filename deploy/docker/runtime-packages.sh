#!/bin/sh
# Prints, one per line, the distribution packages that own the shared
# libraries the given binaries load: the run stage installs exactly these.
# Libraries of normserve itself (under /opt/normserve) and ones no package owns
# (the NVIDIA driver's libcuda, injected at run time) are left out.
#   runtime-packages.sh /opt/normserve/bin/*
set -eu

for binary in "$@"; do
  # ldd prints "libfoo.so.1 => /path/libfoo.so.1 (0x...)"; keep the paths.
  ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }'
done | sort -u | while read -r library; do
  case "$library" in /opt/normserve/*) continue ;; esac
  # dpkg records /lib/... or /usr/lib/... depending on the package (merged
  # /usr): ask for the path as ldd printed it, then for its other spelling and
  # the resolved file.
  resolved=$(readlink -f "$library")
  for candidate in "$library" "${library#/usr}" "/usr${library}" "$resolved" "${resolved#/usr}"; do
    owner=$(dpkg-query -S "$candidate" 2>/dev/null | head -n1 | cut -d: -f1) || true
    if [ -n "$owner" ]; then
      echo "$owner"
      break
    fi
  done
done | sort -u
