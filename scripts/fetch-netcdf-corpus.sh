#!/usr/bin/env bash
# Fetches the public real-world NetCDF corpus the atlas-netcdf tests read and
# prints its directory.
#
#   scripts/fetch-netcdf-corpus.sh      fetch (once) into target/netcdf-corpus; print the files' dir
#
# The corpus is the NetCDF test files that packages on PyPI ship, each archive
# at a pinned version and checksum (the table below):
#   - netcdf4-python's source distribution: its test/*.nc files;
#   - xarray's source distribution: xarray/tests/data/*.nc;
#   - cfdm's source distribution: cfdm/test/example_field_0.nc;
#   - the Py-ART wheel: pyart/testing/data/*.{nc,cdf}, real ARM instrument
#     files (radiosondes, CF/Radial radar volumes) with ARM's time units.
# Each extracted file is checked against crates/atlas-netcdf/tests/corpus.sha256
# (names and sha256; names are unique across archives). Archives are cached,
# so later runs need no network. Concurrent callers are serialized with flock.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${ATLAS_NETCDF_CORPUS_CACHE:-$root/target/netcdf-corpus}"
pins="$root/crates/atlas-netcdf/tests/corpus.sha256"
files="$dir/files"
pypi="https://files.pythonhosted.org/packages"

# archive | sha256 | url path under $pypi | members to extract (shell globs, space separated)
sources=(
  "netcdf4-1.7.2.tar.gz|a4c6375540b19989896136943abb6d44850ff6f1fa7d3f063253b1ad3f8b7fce|71/ed/4d27fcfa40ebfdad3d2088a3de7ee48dbff7f35163e815ec1870d2a7398c|netcdf4-1.7.2/test/*.nc"
  "xarray-2026.9.0.tar.gz|6abc69694c22fa1f0fb2f357ff4e41d88beb4477ed71091f944b7dbf67ed54fe|ff/f5/781c70b234f54e0401f4f7c4427a7486da38d50dbb138c7d7c55144b3d86|xarray-2026.9.0/xarray/tests/data/*.nc"
  "cfdm-1.13.3.0.tar.gz|55ba3cb8157d0043fe93ca016cbe55b0038f271d5be3c4a8607c6bb114df9e16|b4/01/fb1716ab402e170ee0afb290a7186c211e05f697d0db08ede41cdd6de9c5|cfdm-1.13.3.0/cfdm/test/example_field_0.nc"
  "arm_pyart-2.3.0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl|f553af493a31be895b9cba31471c835231bbdaaed42a0352f2dc55ee78b314d2|fb/b1/900c7b5509b0497aa3a99777d5ae6cda4840c9c6339add52bb7dc6ae8616|pyart/testing/data/*.nc pyart/testing/data/*.cdf"
)

say() { echo "scripts/fetch-netcdf-corpus.sh: $*" >&2; }

mkdir -p "$dir"
exec 9>"$dir/lock"
flock 9

# Downloads one archive unless the cached copy has the pinned checksum.
fetch() {
  local archive="$1" sha="$2" path="$3"
  if echo "$sha  $dir/$archive" | sha256sum --check --status 2>/dev/null; then
    return
  fi
  say "downloading $archive from PyPI"
  curl --silent --show-error --fail --location --max-time 600 -o "$dir/$archive.part" "$pypi/$path/$archive"
  echo "$sha  $dir/$archive.part" | sha256sum --check --status ||
    { say "$archive does not have the pinned sha256"; exit 1; }
  mv "$dir/$archive.part" "$dir/$archive"
}

# Extracts the members matching the globs of one archive, flattened into $files.
extract() {
  local archive="$1" members="$2"
  local tmp="$dir/extract"
  rm -rf "$tmp" && mkdir -p "$tmp"
  case "$archive" in
    *.tar.gz)
      # shellcheck disable=SC2086 # the globs are tar's wildcards
      tar -xzf "$dir/$archive" -C "$tmp" --wildcards $members ;;
    *.whl)
      python3 - "$dir/$archive" "$tmp" $members <<'EOF'
import fnmatch, sys, zipfile
archive, out, patterns = sys.argv[1], sys.argv[2], sys.argv[3:]
with zipfile.ZipFile(archive) as z:
    for name in z.namelist():
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            z.extract(name, out)
EOF
      ;;
  esac
  find "$tmp" -type f -exec mv {} "$files/" \;
  rm -rf "$tmp"
}

if ! (cd "$files" 2>/dev/null && sha256sum --check --status --strict "$pins" 2>/dev/null); then
  rm -rf "$files"
  mkdir -p "$files"
  for source in "${sources[@]}"; do
    IFS='|' read -r archive sha path members <<<"$source"
    fetch "$archive" "$sha" "$path"
    extract "$archive" "$members"
  done
  (cd "$files" && sha256sum --check --status --strict "$pins") ||
    { say "extracted files differ from $pins"; exit 1; }
  listed=$(awk '{print $2}' "$pins" | sort)
  present=$(cd "$files" && ls | sort)
  [ "$listed" = "$present" ] ||
    { say "the archives hold other files than $pins names"; exit 1; }
fi
echo "$files"
