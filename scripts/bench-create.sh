#!/usr/bin/env bash
# Times `atlas create` against atlas-python's `atlas create` on one directory.
#
#   scripts/bench-create.sh DIR [ATLAS_BIN]
#
# DIR holds NetCDF files (e.g. from scripts/make-argo-profiles.py DIR 20000).
# Needs a release build (cargo build --release -p atlas-cli). Prints files/s, wall time and peak
# RSS of each run, and collection size against the sum of the inputs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$1"
bin="${2:-$root/target/release/atlas}"
py="$("$root/scripts/pyenv.sh")"
atlas_py="$(dirname "$py")/atlas"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
files=$(find "$dir" -type f \( -name '*.nc' -o -name '*.nc4' -o -name '*.cdf' -o -name '*.netcdf' \) | wc -l)
input_bytes=$(find "$dir" -type f -name '*.nc' -printf '%s\n' | awk '{s+=$1} END {print s}')
echo "files: $files, input bytes: $input_bytes"

run() {
  local label="$1"; shift
  local dest="$out/$label"
  /usr/bin/time -f '%e %M' -o "$out/time.$label" "$@" "$dest" >/dev/null 2>"$out/err.$label" || {
    echo "$label failed:"; tail -5 "$out/err.$label"; return 1; }
  read -r secs rss_kb <"$out/time.$label"
  local size
  size=$(stat -c %s "$dest/data.atlas")
  awk -v l="$label" -v n="$files" -v s="$secs" -v r="$rss_kb" -v z="$size" -v i="$input_bytes" \
    'BEGIN { printf "%-14s %7.1f s %9.0f files/s  peak RSS %6.0f MiB  collection %.1f MiB (%.1f%% of inputs)\n", l, s, n/s, r/1024, z/1048576, 100*z/i }'
}

run "rust -j 1" "$bin" -q create --jobs 1 "$dir"
run "rust -j 2" "$bin" -q create --jobs 2 "$dir"
run "atlas-python" "$atlas_py" create -q "$dir"
