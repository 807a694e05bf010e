#!/usr/bin/env bash
# Ingest throughput across processes: `atlas create -j 2` into a
# set, `atlasds.ingest` on a LocalCluster of 2 worker processes, and
# atlas-python's `atlas create`, on one directory, one after another.
#
#   scripts/bench-ingest.sh DIR [DATASETS_PER_MEMBER]
#
# DIR holds NetCDF files (scripts/make-argo-profiles.py DIR 20000). Needs
# release builds: cargo build --release -p atlas-cli -p atlas-py (with
# CARGO_TARGET_DIR honoured). Prints files/s and wall time of each run, and
# the peak RSS of every process taking part (the cluster's client, each
# worker; GNU time's for the commands).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$1"
per_member="${2:-2500}"
target="${CARGO_TARGET_DIR:-$root/target}"
profile="${ATLAS_PROFILE:-release}"   # `debug` only to try the script out
bin="$target/$profile/atlas"
lib="$target/$profile/lib_native.so"
py="$("$root/scripts/pyenv.sh")"
atlas_py="$(dirname "$py")/atlas"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
files=$(find "$dir" -type f -name '*.nc' | wc -l)
echo "files: $files, datasets per member: $per_member"

# The package as it is in this tree, with the release build of the extension.
mkdir -p "$out/pkg/atlasds"
cp "$root"/crates/atlas-py/python/atlasds/*.py "$out/pkg/atlasds/"
ln -s "$lib" "$out/pkg/atlasds/_native.abi3.so"

timed() {
  local label="$1"; shift
  /usr/bin/time -f '%e %M' -o "$out/time" "$@" >/dev/null 2>"$out/err" || {
    echo "$label failed:"; tail -5 "$out/err"; return 1; }
  read -r secs rss_kb <"$out/time"
  awk -v l="$label" -v n="$files" -v s="$secs" -v r="$rss_kb" \
    'BEGIN { printf "%-34s %7.1f s %7.0f files/s  peak RSS %6.0f MiB (one process)\n", l, s, n/s, r/1024 }'
}

timed "atlas create -j 2 --max-datasets" "$bin" -q create --jobs 2 --max-datasets "$per_member" "$dir" "$out/cli-set"
timed "atlas create -j 2 (one collection)" "$bin" -q create --jobs 2 "$dir" "$out/cli-lone"

# A file, not stdin: the cluster's worker processes are spawned and re-import it.
cat >"$out/bench_ingest.py" <<'PY'
import resource, sys, time
import atlasds
from distributed import Client, LocalCluster

def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

if __name__ == "__main__":
    src, dst, per = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, Client(cluster) as client:
        started = time.perf_counter()
        result = atlasds.ingest([src], dst, client=client, datasets_per_member=per)
        secs = time.perf_counter() - started
        workers = client.run(rss_mib)
    n = len(result.written)
    label = "atlasds.ingest LocalCluster(2x1)"
    print(f"{label:34} {secs:7.1f} s {n / secs:7.0f} files/s  "
          f"peak RSS client {rss_mib():.0f} MiB, workers "
          + ", ".join(f"{v:.0f}" for v in workers.values()) + " MiB")
PY
PYTHONPATH="$out/pkg" "$py" "$out/bench_ingest.py" "$dir" "$out/dask-set" "$per_member" 2>"$out/err" || {
  echo "atlasds.ingest failed:"; tail -5 "$out/err"; }
timed "atlas-python atlas create" "$atlas_py" create -q "$dir" "$out/peer"
