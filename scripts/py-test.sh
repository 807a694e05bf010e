#!/usr/bin/env bash
# The Python package's test suite.
#
#   scripts/py-test.sh [pytest args...]
#
# Creates target/pyenv (scripts/pyenv.sh), builds crates/atlas-py into it in
# development mode (maturin develop), builds the `atlas` command and the xtask
# fixture writer the tests call, and runs pytest on crates/atlas-py/tests.
# Fails when pytest fails or collects no test (pytest exit code 5).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
python="$(scripts/pyenv.sh)"
venv="$(dirname "$(dirname "$python")")"

cargo build --quiet -p atlas-cli -p xtask
target_dir="$(cargo metadata --format-version 1 --no-deps | "$python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" "$venv/bin/maturin" develop --quiet \
  --manifest-path crates/atlas-py/Cargo.toml >&2

export ATLAS_BIN="$target_dir/debug/atlas"
export ATLAS_XTASK="$target_dir/debug/xtask"
exec "$python" -m pytest -p no:cacheprovider crates/atlas-py/tests "$@"
