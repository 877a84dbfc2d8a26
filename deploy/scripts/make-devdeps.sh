#!/usr/bin/env bash
# Packs this (Debian 12) machine's Abseil, GoogleTest/GoogleMock and Google
# Benchmark into a relocatable prefix, by default .devdeps/ at the repository
# root (git-ignored), for a machine that has a compiler but none of these
# libraries (the lent GPU machine: Ubuntu 24.04, no internet).
#
#   deploy/scripts/make-devdeps.sh            # here, once
#   # there (carry .devdeps):
#   cmake -S . -B build -G Ninja -DNORMSERVE_KERNELS_ONLY=ON -DCMAKE_PREFIX_PATH=$PWD/.devdeps
#   LD_LIBRARY_PATH=$PWD/.devdeps/lib/x86_64-linux-gnu build/tests/kernels/normserve_kernels_test
#
# The layout mirrors Debian's (include/, lib/x86_64-linux-gnu/, and the CMake
# package configs under lib/x86_64-linux-gnu/cmake/): the configs locate
# everything relative to their own directory (_IMPORT_PREFIX, four levels up),
# so the prefix works wherever it is unpacked. Abseil and Benchmark are shared
# libraries (their SONAME files are copied as real files, no symlinks to break
# in transit); GTest/GMock are static. Built with GCC 12 / glibc 2.36, which a
# newer distribution runs and links against.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
prefix=${1:-$repo/.devdeps}
lib=/usr/lib/x86_64-linux-gnu

for need in /usr/include/absl /usr/include/gtest /usr/include/gmock /usr/include/benchmark \
            $lib/cmake/absl $lib/cmake/GTest $lib/cmake/benchmark; do
  [[ -e $need ]] || { echo "missing $need (apt-get install libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev)" >&2; exit 1; }
done

rm -rf "$prefix"
mkdir -p "$prefix/include" "$prefix/lib/x86_64-linux-gnu/cmake"
cp -r /usr/include/absl /usr/include/gtest /usr/include/gmock /usr/include/benchmark "$prefix/include/"
cp -r $lib/cmake/absl $lib/cmake/GTest $lib/cmake/benchmark "$prefix/lib/x86_64-linux-gnu/cmake/"

# Abseil: the files the config imports (libabsl_*.so.<ver>.0.0) and their SONAMEs.
for real in $lib/libabsl_*.so.*.*.*; do
  base=$(basename "$real")
  cp -L "$real" "$prefix/lib/x86_64-linux-gnu/$base"
  soname=${base%.*.*}  # libabsl_x.so.20220623
  cp -L "$real" "$prefix/lib/x86_64-linux-gnu/$soname"
done
# Benchmark: the imported file, its SONAME, and the static main.
cp -L $lib/libbenchmark.so.1.7.1 "$prefix/lib/x86_64-linux-gnu/"
cp -L $lib/libbenchmark.so.1.7.1 "$prefix/lib/x86_64-linux-gnu/libbenchmark.so.1debian"
cp -L $lib/libbenchmark_main.a "$prefix/lib/x86_64-linux-gnu/"
# GoogleTest / GoogleMock: static.
cp -L $lib/libgtest.a $lib/libgtest_main.a $lib/libgmock.a $lib/libgmock_main.a \
  "$prefix/lib/x86_64-linux-gnu/"

# Every file a config names must exist under the prefix.
missing=0
while read -r path; do
  [[ -e $prefix/$path ]] || { echo "config names missing $path" >&2; missing=1; }
done < <(grep -ho '${_IMPORT_PREFIX}/lib/[^"; ]*' "$prefix"/lib/x86_64-linux-gnu/cmake/*/*-none.cmake |
         sed 's|${_IMPORT_PREFIX}/||' | sort -u)
# And no config may point back at this machine's /usr.
if grep -l '"/usr/lib\|"/usr/include' "$prefix"/lib/x86_64-linux-gnu/cmake/*/*.cmake | \
   xargs -r grep -L '_realOrig' | grep -q .; then
  echo "a config names an absolute /usr path" >&2
  missing=1
fi
[[ $missing == 0 ]] || exit 1
echo "devdeps in $prefix ($(du -sh "$prefix" | cut -f1))"
