# normserve container image: a build stage compiles and installs the service
# into /opt/normserve, a run stage holds only the runtime libraries, the
# installed binaries and a non-root user.
#
#   GPU (default; needs the NVIDIA container toolkit to run):
#     docker build -t normserve:gpu .
#   CPU (Debian bookworm-slim, no CUDA):
#     docker build --build-arg VARIANT=cpu -t normserve:cpu .
#
# VARIANT picks the base images of both stages; GPU_BUILD_IMAGE,
# GPU_RUN_IMAGE and CPU_IMAGE override them (e.g. a mirror, another CUDA
# release). Only the stages of the chosen variant are built or pulled (by
# BuildKit, Podman and Buildah; Docker's legacy builder would pull them all).
# The GPU build stage needs apt and nvcc at /usr/local/cuda/bin (or on PATH);
# the server links cudart statically, so the run stage needs no CUDA library.
# tests/deploy/gpu_image_test.sh builds it on local stand-ins for NVIDIA's
# images (Debian 12 + this machine's CUDA toolkit). deploy/README.md has the
# run options.

ARG VARIANT=gpu
ARG GPU_BUILD_IMAGE=docker.io/nvidia/cuda:13.0.0-devel-ubuntu24.04
ARG GPU_RUN_IMAGE=docker.io/nvidia/cuda:13.0.0-runtime-ubuntu24.04
ARG CPU_IMAGE=docker.io/library/debian:bookworm-slim

FROM ${GPU_BUILD_IMAGE} AS build-base-gpu
FROM ${CPU_IMAGE} AS build-base-cpu
# The run bases also set the default backend: "auto" picks CUDA when a device
# is visible; the CPU image is built without CUDA, so it asks for "cpu".
FROM ${GPU_RUN_IMAGE} AS run-base-gpu
ENV NORMSERVE_BACKEND=auto
FROM ${CPU_IMAGE} AS run-base-cpu
ENV NORMSERVE_BACKEND=cpu

# ---------------------------------------------------------------- build ----
FROM build-base-${VARIANT} AS build
ARG VARIANT
# Parallel compile jobs; empty means one per CPU of the build machine.
ARG BUILD_JOBS=
ENV DEBIAN_FRONTEND=noninteractive

# The dependency list is the repository's own (deploy/scripts/install-deps.sh),
# copied alone first so this layer stays cached while the sources change.
COPY deploy/scripts/install-deps.sh /tmp/install-deps.sh
RUN /tmp/install-deps.sh --build-only && rm -rf /var/lib/apt/lists/*

COPY . /src
RUN set -eu; \
    if [ "$VARIANT" = gpu ]; then cuda=ON; else cuda=OFF; fi; \
    cmake -S /src -B /build -G Ninja \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX=/opt/normserve \
      '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' \
      -DNORMSERVE_ENABLE_CUDA="$cuda" \
      -DNORMSERVE_BUILD_TESTS=OFF \
      -DNORMSERVE_BUILD_BENCH=OFF; \
    cmake --build /build --parallel ${BUILD_JOBS:-$(nproc)}; \
    cmake --install /build --strip; \
    test -x /opt/normserve/bin/normserve-server; \
    test -x /opt/normserve/bin/normserve-cli; \
    mkdir -p /opt/normserve/share/normserve; \
    /src/deploy/docker/runtime-packages.sh /opt/normserve/bin/* \
      > /opt/normserve/share/normserve/runtime-packages.txt; \
    echo "runtime packages:"; cat /opt/normserve/share/normserve/runtime-packages.txt

# ------------------------------------------------------------------ run ----
FROM run-base-${VARIANT} AS run
ARG VARIANT
ENV DEBIAN_FRONTEND=noninteractive

# Exactly the packages that own the shared libraries the binaries load
# (listed by runtime-packages.sh in the build stage), so the list follows
# whatever distribution the base image is: Debian 12 here, Ubuntu 24.04 under
# the CUDA images.
COPY --from=build /opt/normserve/share/normserve/runtime-packages.txt /tmp/runtime-packages.txt
RUN apt-get update -qq \
 && xargs -a /tmp/runtime-packages.txt apt-get install -y -qq --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages.txt \
 && groupadd --system --gid 10001 normserve \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin normserve

COPY --from=build /opt/normserve /opt/normserve
COPY deploy/docker/entrypoint.sh /usr/local/bin/normserve-entrypoint
COPY deploy/docker/healthcheck.sh /usr/local/bin/normserve-healthcheck

ENV PATH=/opt/normserve/bin:$PATH \
    NORMSERVE_ADDRESS=0.0.0.0:50051 \
    NORMSERVE_METRICS_ADDRESS=0.0.0.0:9464
LABEL org.opencontainers.image.title="normserve" \
      org.opencontainers.image.description="gRPC LayerNorm/RMSNorm service (CUDA or CPU backend)" \
      org.opencontainers.image.source="https://github.com/normserve/normserve"

# gRPC, Prometheus /metrics.
EXPOSE 50051 9464
USER 10001:10001
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["/usr/local/bin/normserve-healthcheck"]
ENTRYPOINT ["/usr/local/bin/normserve-entrypoint"]
