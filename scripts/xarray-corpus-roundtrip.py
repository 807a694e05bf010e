#!/usr/bin/env python
"""The real NetCDF corpus through xarray and back, variable by variable.

    scripts/py-test.sh builds the package; then, with its python:
    python scripts/xarray-corpus-roundtrip.py [CORPUS_FILES_DIR]

Each file of the corpus (scripts/fetch-netcdf-corpus.sh; the default
directory is what it prints) that xarray opens is opened with
`xr.open_dataset(f)`, written three ways and opened again, and each variable
is compared with the original (`Variable.identical`, and whether it is a
coordinate):

- `default`: `atlasds.write(path, {"ds": ds})`, no `decode=` (the plain call),
  opened with `engine="atlas"`;
- `decode="xarray"`: the same, xarray's encoding asked for by name;
- `decode="cf"`: the same with the NetCDF ingest's mapping (`atlas create`);
- `netCDF4`: `ds.to_netcdf(f)`, opened with `xr.open_dataset(f)`.

Prints one line per path: variables identical / variables, and the files a
writer refused.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import xarray as xr

import atlasds

ROOT = Path(__file__).resolve().parent.parent


def identical(a: xr.Dataset, b: xr.Dataset) -> int:
    return sum(
        1
        for name, var in a.variables.items()
        if name in b.variables
        and (name in a.coords) == (name in b.coords)
        and b.variables[name].identical(var)
    )


def main() -> None:
    if len(sys.argv) > 1:
        files_dir = Path(sys.argv[1])
    else:
        done = subprocess.run(
            [str(ROOT / "scripts" / "fetch-netcdf-corpus.sh")], check=True, capture_output=True, text=True
        )
        files_dir = Path(done.stdout.strip())
    paths = {"default": 0, 'decode="xarray"': 0, 'decode="cf"': 0, "netCDF4": 0}
    refused: dict[str, list[str]] = {k: [] for k in paths}
    total = opened = 0
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        for f in sorted(files_dir.iterdir()):
            try:
                ds = xr.open_dataset(f).load()
            except Exception:  # noqa: BLE001 - files xarray cannot open are not counted
                continue
            opened += 1
            total += len(ds.variables)
            for path, save in (
                ("default", lambda p: atlasds.write(p, {"ds": ds})),
                ('decode="xarray"', lambda p: atlasds.write(p, {"ds": ds}, decode="xarray")),
                ('decode="cf"', lambda p: atlasds.write(p, {"ds": ds}, decode="cf")),
                ("netCDF4", lambda p: ds.to_netcdf(p, engine="netcdf4")),
            ):
                target = Path(tmp) / f"{f.name}-{list(paths).index(path)}"
                try:
                    save(target)
                    if path == "netCDF4":
                        back = xr.open_dataset(target).load()
                    else:
                        back = xr.open_dataset(target, engine="atlas", group="ds").load()
                except Exception as e:  # noqa: BLE001 - a refusal is counted as nothing identical
                    refused[path].append(f"{f.name} ({type(e).__name__})")
                    continue
                paths[path] += identical(ds, back)
    print(f"{opened} files xarray opens, {total} variables")
    for path, count in paths.items():
        print(f"{path:12} {count} / {total} identical; refused: {', '.join(refused[path]) or 'none'}")


if __name__ == "__main__":
    main()
