#!/usr/bin/env bash
# Fetches the public real-world NetCDF corpus the atlas-netcdf tests read and
# prints its directory.
#
#   scripts/fetch-netcdf-corpus.sh      fetch (once) into target/netcdf-corpus; print the files' dir
#
# The corpus is the test/*.nc files of the netcdf4-python source distribution
# on PyPI, at a pinned version and archive checksum. Each extracted file is
# checked against crates/atlas-netcdf/tests/corpus.sha256 (names and sha256).
# The archive is cached, so later runs need no network. Concurrent callers are
# serialized with flock.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${ATLAS_NETCDF_CORPUS_CACHE:-$root/target/netcdf-corpus}"
version="1.7.2"
archive="netcdf4-$version.tar.gz"
archive_sha256="a4c6375540b19989896136943abb6d44850ff6f1fa7d3f063253b1ad3f8b7fce"
url="https://files.pythonhosted.org/packages/71/ed/4d27fcfa40ebfdad3d2088a3de7ee48dbff7f35163e815ec1870d2a7398c/$archive"
pins="$root/crates/atlas-netcdf/tests/corpus.sha256"
files="$dir/files"

mkdir -p "$dir"
exec 9>"$dir/lock"
flock 9

if ! echo "$archive_sha256  $dir/$archive" | sha256sum --check --status 2>/dev/null; then
  echo "scripts/fetch-netcdf-corpus.sh: downloading $archive from PyPI" >&2
  curl --silent --show-error --fail --location --max-time 300 -o "$dir/$archive.part" "$url"
  echo "$archive_sha256  $dir/$archive.part" | sha256sum --check --status ||
    { echo "scripts/fetch-netcdf-corpus.sh: $archive does not have the pinned sha256" >&2; exit 1; }
  mv "$dir/$archive.part" "$dir/$archive"
fi

if ! (cd "$files" 2>/dev/null && sha256sum --check --status --strict "$pins"); then
  rm -rf "$files" "$dir/extract"
  mkdir -p "$files" "$dir/extract"
  tar -xzf "$dir/$archive" -C "$dir/extract" --wildcards "netcdf4-$version/test/*.nc"
  mv "$dir/extract/netcdf4-$version/test/"*.nc "$files/"
  rm -rf "$dir/extract"
  (cd "$files" && sha256sum --check --status --strict "$pins") ||
    { echo "scripts/fetch-netcdf-corpus.sh: extracted files differ from $pins" >&2; exit 1; }
  listed=$(awk '{print $2}' "$pins" | sort)
  present=$(cd "$files" && ls | sort)
  [ "$listed" = "$present" ] ||
    { echo "scripts/fetch-netcdf-corpus.sh: the archive holds other files than $pins names" >&2; exit 1; }
fi
echo "$files"
