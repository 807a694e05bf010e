#!/usr/bin/env bash
# Installs the project's build tools into target/tools (cached: a tool already
# there at the pinned version is not rebuilt) and prints the bin directory.
#
#   scripts/tools.sh              install every tool; print target/tools/bin
#
# Tools come from crates.io with `cargo install --locked --root`, so CI and
# developers run the same versions without touching ~/.cargo/bin.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="${ATLAS_TOOLS:-$root/target/tools}"
mkdir -p "$tools"
exec 9>"$tools/lock"
flock 9

# name version
pins=(
  "cargo-deny 0.20.2"
)

for pin in "${pins[@]}"; do
  read -r name version <<<"$pin"
  if [ -x "$tools/bin/$name" ] && [ "$(cat "$tools/$name.version" 2>/dev/null)" = "$version" ]; then
    continue
  fi
  echo "scripts/tools.sh: installing $name $version into $tools" >&2
  cargo install --quiet --locked --root "$tools" --version "=$version" "$name" >&2
  echo "$version" >"$tools/$name.version"
done
echo "$tools/bin"
