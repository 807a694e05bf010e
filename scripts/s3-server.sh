#!/usr/bin/env bash
# A local S3-compatible server (moto, from PyPI) on 127.0.0.1 for the tests.
#
#   scripts/s3-server.sh         start it (or reuse the running one); print its endpoint
#   scripts/s3-server.sh stop    stop it
#
# Installs moto into target/s3-server/venv on first use (needs python3 and PyPI),
# creates the bucket `atlas-test`, and serializes concurrent callers with flock.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
state="${ATLAS_S3_STATE:-$root/target/s3-server}"
mkdir -p "$state"
exec 9>"$state/lock"
flock 9

pid_file="$state/pid"
port_file="$state/port"

running() {
  [ -f "$pid_file" ] && [ -f "$port_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null &&
    curl -fs -o /dev/null "http://127.0.0.1:$(cat "$port_file")/moto-api/"
}

if [ "${1:-start}" = "stop" ]; then
  if [ -f "$pid_file" ]; then kill "$(cat "$pid_file")" 2>/dev/null || true; fi
  rm -f "$pid_file" "$port_file"
  exit 0
fi

if ! running; then
  venv="$state/venv"
  if [ ! -x "$venv/bin/moto_server" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==5.2.5" >&2
  fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  nohup "$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$state/log" 2>&1 9>&- &
  echo $! >"$pid_file"
  echo "$port" >"$port_file"
  for _ in $(seq 100); do
    running && break
    sleep 0.1
  done
  running || { echo "moto_server did not start; see $state/log" >&2; exit 1; }
fi
port=$(cat "$port_file")
curl -fs -o /dev/null -X PUT "http://127.0.0.1:$port/atlas-test" || true
echo "http://127.0.0.1:$port"
