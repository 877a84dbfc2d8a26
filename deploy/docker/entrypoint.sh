#!/bin/sh
# Container entrypoint: starts normserve-server with flags taken from
# NORMSERVE_* environment variables, followed by any arguments given to the
# container (they come last, so they win over the environment).
#   docker run normserve:cpu                         # the server, env flags
#   docker run normserve:cpu --max_batch_rows=512    # the server, one more flag
#   docker run normserve:cpu normserve-cli --target=HOST:50051 health
# A first argument that is not a flag names a command to run instead (the CLI,
# the load generator, a shell).
set -eu

if [ "$#" -gt 0 ] && [ "${1#-}" = "$1" ]; then
  exec "$@"
fi

# Variable -> flag; an unset or empty variable leaves the server's default,
# except NORMSERVE_METRICS_ADDRESS, where set-but-empty disables /metrics.
set -- \
  ${NORMSERVE_ADDRESS:+"--address=$NORMSERVE_ADDRESS"} \
  ${NORMSERVE_METRICS_ADDRESS+"--metrics_address=$NORMSERVE_METRICS_ADDRESS"} \
  ${NORMSERVE_BACKEND:+"--backend=$NORMSERVE_BACKEND"} \
  ${NORMSERVE_DEVICES:+"--devices=$NORMSERVE_DEVICES"} \
  ${NORMSERVE_CPU_THREADS:+"--cpu_threads=$NORMSERVE_CPU_THREADS"} \
  ${NORMSERVE_MAX_BATCH_ROWS:+"--max_batch_rows=$NORMSERVE_MAX_BATCH_ROWS"} \
  ${NORMSERVE_MAX_QUEUE_DELAY_US:+"--max_queue_delay_us=$NORMSERVE_MAX_QUEUE_DELAY_US"} \
  ${NORMSERVE_MAX_QUEUED_REQUESTS:+"--max_queued_requests=$NORMSERVE_MAX_QUEUED_REQUESTS"} \
  ${NORMSERVE_MAX_QUEUED_ROWS:+"--max_queued_rows=$NORMSERVE_MAX_QUEUED_ROWS"} \
  ${NORMSERVE_MAX_MESSAGE_BYTES:+"--max_message_bytes=$NORMSERVE_MAX_MESSAGE_BYTES"} \
  ${NORMSERVE_MAX_STREAM_IN_FLIGHT:+"--max_stream_in_flight=$NORMSERVE_MAX_STREAM_IN_FLIGHT"} \
  ${NORMSERVE_MAX_PARAMS:+"--max_params=$NORMSERVE_MAX_PARAMS"} \
  ${NORMSERVE_DRAIN_TIMEOUT_S:+"--drain_timeout_s=$NORMSERVE_DRAIN_TIMEOUT_S"} \
  ${NORMSERVE_MAX_CONNECTION_AGE_S:+"--max_connection_age_s=$NORMSERVE_MAX_CONNECTION_AGE_S"} \
  ${NORMSERVE_TLS_CERT_FILE:+"--tls_cert_file=$NORMSERVE_TLS_CERT_FILE"} \
  ${NORMSERVE_TLS_KEY_FILE:+"--tls_key_file=$NORMSERVE_TLS_KEY_FILE"} \
  ${NORMSERVE_LOG_LEVEL:+"--log_level=$NORMSERVE_LOG_LEVEL"} \
  "$@"

# exec: the server is PID 1 and receives SIGTERM itself (it drains, exits 0).
exec normserve-server "$@"
