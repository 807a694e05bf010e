"""Times of the collection-wide views and of the bulk read (not a test).

    python crates/atlas-py/bench/views.py COLLECTION

COLLECTION is typically `atlas demo DIR --count 30000` (the extension built
in release). Prints, in one process: the import of xarray, dask, pandas and
atlasds (paid once per process, reported apart); the ragged open of six
variables (metadata only) and the load of TEMP, PSAL and PRES from it; the
padded view's open and load; then TEMP of every dataset through
`Collection.read_many` and through `Dataset.read` one at a time, each on a
fresh handle. Compare with `cargo run --release -p xtask -- bench-read
COLLECTION TEMP,PSAL,PRES` and `... bench-read COLLECTION TEMP` (the same
reads from Rust).
"""

from __future__ import annotations

import sys
import time

started = time.perf_counter()
import dask.array  # noqa: E402,F401  (what an analyst has imported already)
import pandas  # noqa: E402,F401
import xarray  # noqa: E402,F401

import atlasds  # noqa: E402

IMPORTS = time.perf_counter() - started
VARIABLES = ["TEMP", "PSAL", "PRES", "JULD", "LATITUDE", "LONGITUDE"]


def timed(label: str, fn):
    started = time.perf_counter()
    result = fn()
    print(f"{label}: {time.perf_counter() - started:.3f} s")
    return result


def fresh(path: str) -> atlasds.Collection:
    atlasds._native.clear_cache()
    return atlasds.Collection.open(path)


def main() -> None:
    path = sys.argv[1]
    print(f"imports (xarray, dask, pandas, atlasds): {IMPORTS:.3f} s")
    ds = timed("ragged open, six variables", lambda: atlasds.open_dataset(fresh(path), VARIABLES))
    print(f"  {ds.sizes['profile']} profiles, {ds.sizes['obs']} obs, {len(ds['TEMP'].data.chunks[0])} chunks")
    timed("  load TEMP, PSAL, PRES", lambda: ds[["TEMP", "PSAL", "PRES"]].load(scheduler="threads"))
    padded = timed(
        "padded open, three variables",
        lambda: atlasds.open_dataset(fresh(path), ["TEMP", "PSAL", "PRES"], layout="padded"),
    )
    timed("  load", lambda: padded.load(scheduler="threads"))

    def many() -> int:
        return sum(v.size for _, v in fresh(path).read_many("TEMP"))

    def one_by_one() -> int:
        c = fresh(path)
        return sum(c[n].read("TEMP").size for n in c)

    timed("TEMP of every dataset, read_many", many)
    timed("TEMP of every dataset, Dataset.read one by one", one_by_one)


if __name__ == "__main__":
    main()
