#!/usr/bin/env bash
# Measures the time from starting the built service to a healthy /health, with the embedded PostgreSQL:
# first on an empty DATA_DIR (creates the cluster) and then again (restart). Usage: npm run build && scripts/measure-startup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
DATA_DIR=$(mktemp -d); chmod 755 "$DATA_DIR"
PORT=${PORT:-3917}
V8_FLAGS=$(node -p "require('./dist/src/v8-flags').V8_FLAGS.join(' ')") # as npm run start:prod passes them
measure() {
  local start=$(date +%s%N)
  DATA_DIR="$DATA_DIR" PORT=$PORT EMBEDDED_PG_PORT=55917 LOG_LEVEL=warn node $V8_FLAGS dist/src/main.js > /dev/null &
  local pid=$!
  until curl -sf "http://127.0.0.1:$PORT/health" > /dev/null; do sleep 0.02; done
  echo "$1: $(( ($(date +%s%N) - start) / 1000000 )) ms to a healthy /health"
  kill -TERM $pid; wait $pid
}
measure "first run (creates the cluster)"
measure "restart"
rm -rf "$DATA_DIR"
