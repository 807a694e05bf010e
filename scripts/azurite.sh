#!/usr/bin/env bash
# Azurite (Azure Blob Storage emulator, from npm) on 127.0.0.1 for the Azure tests.
#
#   scripts/azurite.sh         start it (or reuse the running one); print its connection string
#   scripts/azurite.sh stop    stop it
#   scripts/azurite.sh status  exit 0 if it is running, 1 if not
#
# Installs azurite and @azure/storage-blob (to create the container) into
# target/azurite/node_modules on first use (needs node, npm and the npm
# registry once; cached after), keeps blobs in memory, creates the container
# `atlas-test`, and serializes concurrent callers with flock.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
state="${ATLAS_AZURITE_STATE:-$root/target/azurite}"
mkdir -p "$state"
exec 9>"$state/lock"
flock 9

pid_file="$state/pid"
port_file="$state/port"
account=devstoreaccount1
# Azurite's published development key (not a secret).
key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

conn() {
  echo "DefaultEndpointsProtocol=http;AccountName=$account;AccountKey=$key;BlobEndpoint=http://127.0.0.1:$(cat "$port_file")/$account;"
}

running() {
  [ -f "$pid_file" ] && [ -f "$port_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null &&
    curl -s -o /dev/null "http://127.0.0.1:$(cat "$port_file")/$account?comp=list"
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
  if [ ! -x "$state/node_modules/.bin/azurite-blob" ] || [ ! -d "$state/node_modules/@azure/storage-blob" ]; then
    npm install --prefix "$state" --no-audit --no-fund --loglevel=error \
      azurite@3.37.0 @azure/storage-blob@12.34.0 >&2
  fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  nohup "$state/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$port" \
    --inMemoryPersistence --skipApiVersionCheck --loose --silent >"$state/log" 2>&1 9>&- &
  echo $! >"$pid_file"
  echo "$port" >"$port_file"
  for _ in $(seq 600); do  # up to 60 s: node starts slowly on a busy machine
    running && break
    sleep 0.1
  done
  running || { echo "azurite did not start; see $state/log" >&2; exit 1; }
  ATLAS_CONN="$(conn)" NODE_PATH="$state/node_modules" node -e '
    const { BlobServiceClient } = require("@azure/storage-blob");
    BlobServiceClient.fromConnectionString(process.env.ATLAS_CONN)
      .getContainerClient("atlas-test").createIfNotExists()
      .catch((e) => { console.error(e.message); process.exit(1); });
  ' >&2
fi
conn
