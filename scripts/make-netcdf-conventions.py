#!/usr/bin/env python3
"""Writes small NetCDF files that each show one real-world convention the
`atlas-netcdf` CF mapping must follow, and what xarray makes of each.

    python scripts/make-netcdf-conventions.py OUTDIR

OUTDIR/NAME.nc           the file, written with the netCDF library (netCDF4)
OUTDIR/NAME.xarray.json  per variable, as `xarray.open_dataset` decodes it:
                         name, dtype, dims and values (NaN and NaT as null,
                         times as integer nanoseconds since the epoch)

Files:
- non_coord.nc: a netCDF-4 variable `z` over dimension `x` while a dimension
  `z` exists; the library stores it as `_nc4_non_coord_z` and shows `z`.
- masked_ints.nc: integer variables of every width carrying `_FillValue` or
  `missing_value` (one a string, one of another type than the data), with and
  without `scale_factor`.
- arm_time.nc: ARM-style `seconds since 1970-1-1 0:00:00 0:00` time units.
- undecodable_time.nc: time variables without a `timestamp_ns` form: `time`
  reaches 2508 (days since 1961), `t360` is on the 360_day calendar; next to
  them a time that decodes and a data variable. xarray decodes both into
  cftime objects (described as dtype "object", values as their text).
- char_coord.nc: a char variable `station(station, strlen)`, which xarray
  joins into strings and makes the index coordinate of `station`.
"""

import json
import os
import sys
import warnings

import numpy as np
import netCDF4
import xarray as xr


def non_coord(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("x", 3)
        ds.createDimension("z", 2)
        v = ds.createVariable("z", "f8", ("x",))
        v[:] = [1.5, 2.5, 3.5]
        v.long_name = "not the coordinate of dimension z"
        w = ds.createVariable("w", "i4", ("z",))
        w[:] = [7, 8]


def masked_ints(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("n", 4)
        for kind in ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"]:
            v = ds.createVariable(f"fill_{kind}", kind, ("n",), fill_value=np.array(3, kind))
            v[:] = np.array([1, 2, 3, 4], kind)
        v = ds.createVariable("missing_i2", "i2", ("n",), fill_value=False)
        v[:] = np.array([1, -99, 3, 4], "i2")
        v.missing_value = np.int16(-99)
        v = ds.createVariable("missing_f8_on_i4", "i4", ("n",), fill_value=False)
        v[:] = np.array([1, -99, 3, 4], "i4")
        v.missing_value = np.float64(-99)
        v = ds.createVariable("missing_text_on_i4", "i4", ("n",), fill_value=False)
        v[:] = np.array([1, -99, 3, 4], "i4")
        v.setncattr_string("missing_value", "-99")
        v = ds.createVariable("missing_chars_on_i2", "i2", ("n",), fill_value=False)
        v[:] = np.array([1, -99, 3, 4], "i2")
        v.missing_value = "-99"
        v = ds.createVariable("packed_i2", "i2", ("n",), fill_value=np.int16(-1))
        v.set_auto_maskandscale(False)
        v[:] = np.array([10, -1, 30, 40], "i2")
        v.scale_factor = np.float32(0.5)
        v = ds.createVariable("plain_i4", "i4", ("n",), fill_value=False)
        v[:] = np.array([1, 2, 3, 4], "i4")


def arm_time(path):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("time", 3)
        t = ds.createVariable("time", "f8", ("time",))
        t[:] = [0.0, 1.5, 86400.0]
        t.units = "seconds since 2019-5-1 0:00:00 0:00"
        b = ds.createVariable("base_time", "i4", ())
        b[...] = 1556668800
        b.units = "seconds since 1970-1-1 0:00:00 0:00"
        o = ds.createVariable("time_offset", "f8", ("time",))
        o[:] = [0.0, 1.5, 86400.0]
        o.units = "seconds since 2019-05-01 00:00:00 0:00"


def undecodable_time(path):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("time", 3)
        t = ds.createVariable("time", "i4", ("time",))
        t[:] = [0, 1, 200000]
        t.units = "days since 1961-01-01"
        t.calendar = "standard"
        t.long_name = "time"
        n = ds.createVariable("t360", "f8", ("time",))
        n[:] = [0.0, 30.0, 60.5]
        n.units = "days since 2000-01-01"
        n.calendar = "360_day"
        ok = ds.createVariable("decodes", "f8", ("time",))
        ok[:] = [0.0, 1.0, 2.0]
        ok.units = "hours since 2000-01-01"
        x = ds.createVariable("x", "f4", ("time",))
        x[:] = [1.0, 2.0, 3.0]


def char_coord(path):
    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("time", 2)
        ds.createDimension("station", 3)
        ds.createDimension("strlen", 4)
        t = ds.createVariable("time", "f8", ("time",))
        t[:] = [0.0, 1.0]
        t.units = "days since 2000-01-01"
        v = ds.createVariable("temp", "f4", ("time", "station"))
        v[:] = np.arange(6, dtype="f4").reshape(2, 3)
        v.coordinates = "lat"
        s = ds.createVariable("station", "S1", ("station", "strlen"))
        s[:] = netCDF4.stringtochar(np.array(["AB", "CDE", "FGHI"], "S4"))
        s.long_name = "station id"
        lat = ds.createVariable("lat", "f4", ("station",))
        lat[:] = [1.0, 2.0, 3.0]


def describe(path):
    out = []
    with warnings.catch_warnings():
        # xarray warns that it falls back to cftime for undecodable_time.nc.
        warnings.simplefilter("ignore")
        ds = xr.open_dataset(path)
    with ds:
        for name in list(ds.variables):
            var = ds[name]
            values = var.values
            if values.dtype.kind == "M":
                flat = [None if np.isnat(x) else int(x.astype("datetime64[ns]").astype("i8"))
                        for x in values.ravel()]
            elif values.dtype.kind == "O" and values.size and hasattr(values.flat[0], "calendar"):
                flat = [x.isoformat() for x in values.ravel()]  # cftime objects
            elif values.dtype.kind == "S":
                flat = [x.decode() for x in values.ravel()]
            elif values.dtype.kind == "f":
                flat = [None if np.isnan(x) else float(x) for x in values.ravel()]
            else:
                flat = [x.item() if hasattr(x, "item") else x for x in values.ravel()]
            out.append({"name": name, "dtype": str(values.dtype), "dims": list(var.dims),
                        "values": flat})
    return out


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name, make in [("non_coord", non_coord), ("masked_ints", masked_ints),
                       ("arm_time", arm_time), ("undecodable_time", undecodable_time),
                       ("char_coord", char_coord)]:
        path = os.path.join(outdir, f"{name}.nc")
        if os.path.exists(path):
            os.remove(path)
        make(path)
        with open(os.path.join(outdir, f"{name}.xarray.json"), "w") as f:
            json.dump(describe(path), f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
