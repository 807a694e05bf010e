#!/usr/bin/env bash
# The project's Python environment for tests, test inputs and benchmarks.
#
#   scripts/pyenv.sh          create or update target/pyenv; print its python
#
# Creates a venv under target/pyenv (needs python3 with venv and PyPI) and
# installs scripts/requirements-test.txt; reinstalls only when that file changes.
# Concurrent callers are serialized with flock.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${ATLAS_PYENV:-$root/target/pyenv}"
req="$root/scripts/requirements-test.txt"
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2
  echo "$want" >"$stamp"
fi
echo "$venv/bin/python"
