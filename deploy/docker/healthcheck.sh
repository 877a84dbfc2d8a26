#!/bin/sh
# HEALTHCHECK command: asks the server's gRPC health service on loopback, at
# the port of NORMSERVE_ADDRESS (default 50051). Exit 0 only when SERVING.
set -eu
address=${NORMSERVE_ADDRESS:-0.0.0.0:50051}
exec normserve-cli --target="127.0.0.1:${address##*:}" health
