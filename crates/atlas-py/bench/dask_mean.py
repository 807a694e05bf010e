"""Mean TEMP per dataset: dask cluster vs numpy in one process (not a test).

    python crates/atlas-py/bench/dask_mean.py COLLECTION [--var TEMP] [--workers 2]

COLLECTION is typically `atlas demo DIR --count 30000`. Prints, in one run:
numpy in one process (`to_arrow`, then a bincount per dataset), the same
through `to_dask_dataframe(...).groupby("dataset")` on a `LocalCluster` of
`--workers` single-threaded worker processes (cluster start-up, graph
building and compute timed apart), and `open_mfdataarray(...).mean()` on the
same cluster; with partition and task counts. Compare with the Rust sweep:
`cargo run --release -p atlas --example mean_per_dataset -- COLLECTION`.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import atlasds


def _numpy_means(c: atlasds.Collection, var: str, fill: float) -> np.ndarray:
    table = c.to_arrow([var])
    codes = table["dataset"].combine_chunks().indices.to_numpy()
    values = table[var].to_numpy(zero_copy_only=False).astype(np.float64)
    ok = (values != fill) & ~np.isnan(values)
    n = len(table["dataset"].combine_chunks().dictionary)
    sums = np.bincount(codes, weights=np.where(ok, values, 0.0), minlength=n)
    counts = np.bincount(codes, weights=ok, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("collection")
    parser.add_argument("--var", default="TEMP")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    import distributed

    c = atlasds.Collection.open(args.collection)
    fill = c[c.names()[0]].layout(args.var).fill
    t = time.perf_counter()
    want = _numpy_means(c, args.var, fill)
    print(f"numpy, one process (to_arrow + bincount): {time.perf_counter() - t:.2f} s, {len(want)} means")

    t = time.perf_counter()
    cluster = distributed.LocalCluster(
        n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    print(f"LocalCluster of {args.workers} workers started in {time.perf_counter() - t:.2f} s")
    with cluster, client:
        t = time.perf_counter()
        ddf = atlasds.to_dask_dataframe(args.collection, [args.var])
        col = ddf[args.var].astype("float64")
        ddf = ddf.assign(**{args.var: col.where(col != fill)})
        means = ddf.groupby("dataset")[args.var].mean()
        built = time.perf_counter() - t
        t = time.perf_counter()
        got = means.compute()
        took = time.perf_counter() - t
        graph = means.__dask_graph__()
        print(
            f"to_dask_dataframe: graph built in {built:.2f} s (metadata only), computed in {took:.2f} s; "
            f"{ddf.npartitions} partitions, {len(graph)} tasks in the groupby graph"
        )
        got = got.reindex(c.names()).to_numpy(dtype=np.float64)
        np.testing.assert_allclose(got, want, rtol=1e-9)
        # A second run: the workers have the collection open.
        t = time.perf_counter()
        means.compute()
        print(f"to_dask_dataframe again (workers warm): {time.perf_counter() - t:.2f} s")
        # No dataset straddles two partitions: reduce inside each, no shuffle.
        local = ddf.map_partitions(
            lambda df: df.groupby("dataset", sort=False)[args.var].mean(),
            meta=(args.var, "float64"),
        )
        t = time.perf_counter()
        got = local.compute()
        print(
            f"to_dask_dataframe, map_partitions groupby (no shuffle): {time.perf_counter() - t:.2f} s, "
            f"{len(local.__dask_graph__())} tasks"
        )
        np.testing.assert_allclose(got.reindex(c.names()).to_numpy(dtype=np.float64), want, rtol=1e-9)

        t = time.perf_counter()
        arr = atlasds.open_mfdataarray(args.collection, args.var)
        built = time.perf_counter() - t
        t = time.perf_counter()
        mf = arr.astype(np.float64).mean(arr.dims[1], skipna=True).compute()
        took = time.perf_counter() - t
        print(
            f"open_mfdataarray: built in {built:.2f} s, mean computed in {took:.2f} s; "
            f"{len(arr.data.chunks[0])} chunks along dataset"
        )
        np.testing.assert_allclose(mf.values, want, rtol=1e-5)
    print("all three agree")


if __name__ == "__main__":
    main()
