"""Timings of the Python package on a large collection (not a test).

    python crates/atlas-py/bench/bench.py COLLECTION [--dask COLLECTION]

COLLECTION is typically `atlas demo DIR --count 30000` (built with --release,
and the extension built with `maturin develop --release`). Prints, each in a
fresh process state where it matters:

- open + catalogue DataFrame;
- xr.open_datatree of the whole collection;
- reading TEMP of every dataset, one after another (compare with
  `cargo xtask bench-read COLLECTION TEMP`, the same reads from Rust);
- with --dask, the per-dataset mean of TEMP on a LocalCluster of 1 and then 2
  worker processes (one thread each).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import atlasds


def timed(label: str, fn):
    started = time.perf_counter()
    result = fn()
    print(f"{label}: {time.perf_counter() - started:.3f} s")
    return result


def catalogue(path: str) -> None:
    def run():
        c = atlasds.Collection.open(path)
        return c.catalogue()

    frame = timed("open + catalogue DataFrame", run)
    print(f"  {len(frame)} rows x {len(frame.columns)} columns")


def datatree(path: str) -> None:
    import xarray as xr

    atlasds._native.clear_cache()
    tree = timed("xr.open_datatree", lambda: xr.open_datatree(path, engine="atlas"))
    print(f"  {len(tree.children)} nodes")


def read_all(path: str, array: str) -> None:
    def run():
        c = atlasds.Collection.open(path)
        total = 0
        for name in c:
            total += c[name].read(array).size
        return total

    total = timed(f"python: open + read {array} of every dataset", run)
    print(f"  {total} values")


def dask_means(path: str) -> None:
    from distributed import Client, LocalCluster

    arr = atlasds.open_mfdataarray(path, "TEMP")
    for workers in (1, 2):
        with LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster, Client(cluster):
            means = timed(
                f"dask per-dataset mean of TEMP, {workers} worker(s), {arr.sizes['dataset']} datasets",
                lambda: arr.mean("N_LEVELS").compute(),
            )
            assert np.isfinite(means.values).any()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("collection")
    parser.add_argument("--array", default="TEMP")
    parser.add_argument("--dask", metavar="COLLECTION")
    args = parser.parse_args()
    catalogue(args.collection)
    datatree(args.collection)
    read_all(args.collection, args.array)
    if args.dask:
        dask_means(args.dask)


if __name__ == "__main__":
    main()
