#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a running service: installs
# what is missing (apt-get), builds, and starts normserve-server on
# 0.0.0.0:50051 (metrics on :9464). The backend is CUDA when a GPU is
# present, else CPU. Extra arguments are server flags (see --help).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash deploy/scripts/install-deps.sh
bash deploy/scripts/build.sh -DNORMSERVE_BUILD_TESTS=OFF -DNORMSERVE_BUILD_BENCH=OFF
exec build/server/normserve-server --backend=auto "$@"
