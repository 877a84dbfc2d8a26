#!/bin/sh
# Installs the normserve build into a temporary prefix, then configures, builds
# and runs a small outside project that does find_package(normserve) and links
# normserve::client.
#   find_package_test.sh <normserve build dir> <consumer source dir> <cmake>
set -eu
build_dir=$1
consumer_src=$2
cmake=${3:-cmake}
work=$(mktemp -d "${TMPDIR:-/tmp}/normserve_find_package.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$cmake" --install "$build_dir" --prefix "$work/prefix" > "$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
test -f "$work/prefix/lib/cmake/normserve/normserveConfig.cmake" ||
  test -f "$work/prefix/lib/x86_64-linux-gnu/cmake/normserve/normserveConfig.cmake" ||
  { echo "normserveConfig.cmake was not installed"; exit 1; }

"$cmake" -S "$consumer_src" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release > "$work/configure.log" 2>&1 ||
  { cat "$work/configure.log"; exit 1; }
"$cmake" --build "$work/build" -j2 > "$work/build.log" 2>&1 ||
  { cat "$work/build.log"; exit 1; }
"$work/build/consumer"
