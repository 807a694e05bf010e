#!/usr/bin/env python
"""What the Zarr view costs next to the engine, in one run.

    ATLAS_BIN=target/debug/atlas python scripts/zarr-view-cost.py [COUNT]

Makes an `atlas demo` collection of COUNT profiles (default 200), then reads
every variable of every dataset four ways, twice each, in one process:
`Dataset.read` in a loop, the xarray engine (`xr.open_dataset(...,
group=name).load()`), zarr-python through `atlasds.ZarrStore`
(`zarr.open_group`, then `array[...]`), and `xr.open_zarr` over the same
store. Prints the seconds of each pass (docs/python.md, "A Zarr view").
"""

import subprocess, sys, tempfile, time, os
import numpy as np, xarray as xr, zarr
import atlasds

count = int(sys.argv[1]) if len(sys.argv) > 1 else 200
atlas_bin = os.environ["ATLAS_BIN"]
tmp = tempfile.mkdtemp()
path = f"{tmp}/argo"
subprocess.run([atlas_bin, "-q", "demo", path, "--count", str(count)], check=True, stdout=subprocess.DEVNULL)
c = atlasds.Collection.open(path)
names = list(c)
arrays = sum(len(c[n].arrays) for n in names)
print(f"{len(names)} datasets, {arrays} arrays, container {os.path.getsize(path + '/data.atlas')} bytes")

def engine():
    total = 0
    for n in names:
        ds = xr.open_dataset(path, engine="atlas", group=n).load()
        total += sum(v.size for v in ds.variables.values())
    return total

def native():
    total = 0
    for n in names:
        d = c[n]
        for a in d.arrays:
            total += d.read(a).size
    return total

def zarr_view():
    store = atlasds.ZarrStore(path)
    root = zarr.open_group(store, mode="r")
    total = 0
    for n in names:
        g = root[n]
        for a in g.array_keys():
            total += g[a][...].size
    return total

def zarr_xarray():
    store = atlasds.ZarrStore(path)
    total = 0
    for n in names:
        ds = xr.open_zarr(store, group=n, consolidated=False, zarr_format=3).load()
        total += sum(v.size for v in ds.variables.values())
    return total

for fn in (native, engine, zarr_view, zarr_xarray, native, engine, zarr_view, zarr_xarray):
    t = time.perf_counter(); n = fn(); dt = time.perf_counter() - t
    print(f"{fn.__name__:12} {dt:7.3f} s  ({n} values)")
t = time.perf_counter(); atlasds.ZarrStore(path); print(f"ZarrStore() alone {time.perf_counter()-t:.3f} s")
