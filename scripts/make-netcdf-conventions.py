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
- attr_order.nc: netCDF-4 attributes whose order in the HDF5 object header is
  not their creation order, which netCDF lists them by: a second session
  deletes attributes and adds others (libhdf5 puts a new attribute in the
  space a deleted one freed) and rewrites some with longer values (netCDF
  deletes and recreates an attribute it rewrites, so it moves to the end).
  One variable has more attributes than fit in the header (dense storage).
- var_order.nc: netCDF-4 variables created in an order other than their
  names' (more than fit in the group's header, so links are in dense
  storage), one renamed by a second session.
- undecodable_time.nc: time variables without a `timestamp_ns` form: `time`
  reaches 2508 (days since 1961), `t360` is on the 360_day calendar; next to
  them a time that decodes and a data variable. xarray decodes both into
  cftime objects (described as dtype "object", values as their text).
- char_coord.nc: a char variable `station(station, strlen)`, which xarray
  joins into strings and makes the index coordinate of `station`.
- text_cells.nc: char variables (classic format, record dimension) with the
  fill " ": cells equal to the fill (xarray gives NaN), cells the file leaves
  empty (NUL bytes: xarray gives b""), both in one variable, and a text with
  the Latin-1 byte 0xB1 (not UTF-8), in the data and in an attribute.
- latin1_attrs.nc: a NETCDF4 file whose text attributes (global and of a
  variable) hold the byte 0xB1; netCDF4-python shows U+FFFD for it.

Char data comes back from xarray as bytes; the JSON holds them as text, read
as UTF-8 when every cell of the variable is valid UTF-8 and as Latin-1
otherwise (the rule the mapping follows; docs/netcdf-ingest.md).
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


def attr_order(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("n", 3)
        ds.title = "attribute order"
        ds.history = "created"
        ds.source = "a source that the second session deletes"
        ds.institution = "nowhere"
        t = ds.createVariable("temp", "f4", ("n",), fill_value=False)
        t[:] = [280.5, 281.0, 282.25]
        t.units = "K"
        t.comment = "a comment that the second session deletes"
        t.long_name = "temperature"
        q = ds.createVariable("temp_qc", "i1", ("n",), fill_value=False)
        q[:] = np.array([0, 1, 9], "i1")
        q.long_name = "flag"
        q.flag_values = np.array([0, 1, 9], "i1")
        q.flag_meanings = "good bad missing"
        m = ds.createVariable("many", "i4", ("n",), fill_value=False)
        m[:] = np.array([1, 2, 3], "i4")
        for i in range(12):
            m.setncattr(f"a{(i * 5) % 12:02d}", i)
    with netCDF4.Dataset(path, "a") as ds:
        ds.delncattr("source")
        ds.references = "added by the second session"
        ds.history = "created; then amended by a second session"
        t = ds["temp"]
        t.delncattr("comment")
        t.standard_name = "air_temperature"
        q = ds["temp_qc"]
        q.long_name = "quality flag of temp, rewritten longer"
        m = ds["many"]
        m.delncattr("a05")
        m.a01 = np.int32(-1)


def var_order(path):
    names = ["zeta", "alpha", "mid", "beta", "kappa", "delta", "omicron", "chi", "eta",
             "gamma", "psi", "iota"]
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("n", 2)
        for i, name in enumerate(names):
            v = ds.createVariable(name, "i4", ("n",), fill_value=False)
            v[:] = np.array([i, i + 1], "i4")
    with netCDF4.Dataset(path, "a") as ds:
        ds.renameVariable("alpha", "omega")


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


def text_cells(path):
    def cells(rows, width):
        out = np.zeros((len(rows), width), dtype="S1")
        for i, row in enumerate(rows):
            out[i, : len(row)] = np.frombuffer(row, dtype="S1")
        return out

    with netCDF4.Dataset(path, "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("n", None)
        ds.createDimension("STRING8", 8)
        ds.createDimension("STRING24", 24)
        ds.comment = b"calibrated \xb10.01 (Latin-1)"
        ds.createVariable("PRES", "f4", ("n",))[:] = [1.0, 2.0, 3.0, 4.0, 5.0]
        qc = ds.createVariable("blank_qc", "S1", ("n",), fill_value=b" ")
        qc[:] = np.array([b"1", b" ", b"4", b" ", b"1"])
        qc = ds.createVariable("mixed_qc", "S1", ("n",), fill_value=b" ")
        qc[:] = np.array([b"1", b" ", b"\0", b"4", b" "])
        for name, rows in [
            ("blank_names", [b"abc", b" ", b"de f", b" ", b"g"]),
            ("mixed_names", [b"abc", b" ", b"", b"d", b"e"]),
        ]:
            v = ds.createVariable(name, "S1", ("n", "STRING8"), fill_value=b" ")
            v.set_auto_chartostring(False)
            v[:] = cells(rows, 8)
        v = ds.createVariable("calib", "S1", ("n", "STRING24"))
        v.set_auto_chartostring(False)
        v.comment = b"\xb1 is 0xB1"
        v[:] = cells([b"r=0.9996 \xb10.0001", b"none", b"caf\xc3\xa9", b"", b"x"], 24)
        v = ds.createVariable("utf8", "S1", ("n", "STRING8"))
        v.set_auto_chartostring(False)
        v[:] = cells([b"caf\xc3\xa9", b"\xc2\xb1", b"a", b"b", b"c"], 8)


def latin1_attrs(path):
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("n", 2)
        ds.comment = b"calibrated \xb10.01 (Latin-1)"
        v = ds.createVariable("calib", "f4", ("n",))
        v[:] = [1.0, 2.0]
        v.comment = b"\xb1 is 0xB1"
        v.long_name = "plain UTF-8 \u00b1"


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
                flat = texts([x.item() if hasattr(x, "item") else x for x in values.ravel()])
            out.append({"name": name, "dtype": str(values.dtype), "dims": list(var.dims),
                        "values": flat})
    return out


def texts(cells):
    """Bytes as text: UTF-8 when every cell of the variable is valid UTF-8,
    else Latin-1 for all of them; NaN as null."""
    def utf8(x):
        try:
            x.decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False

    encoding = "utf-8" if all(utf8(x) for x in cells if isinstance(x, bytes)) else "latin-1"
    out = []
    for x in cells:
        if isinstance(x, bytes):
            x = x.decode(encoding)
        elif isinstance(x, float) and np.isnan(x):
            x = None
        out.append(x)
    return out


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name, make in [("non_coord", non_coord), ("masked_ints", masked_ints),
                       ("arm_time", arm_time), ("attr_order", attr_order),
                       ("var_order", var_order), ("undecodable_time", undecodable_time),
                       ("char_coord", char_coord), ("text_cells", text_cells),
                       ("latin1_attrs", latin1_attrs)]:
        path = os.path.join(outdir, f"{name}.nc")
        if os.path.exists(path):
            os.remove(path)
        make(path)
        with open(os.path.join(outdir, f"{name}.xarray.json"), "w") as f:
            json.dump(describe(path), f, indent=1, sort_keys=True)
            f.write("\n")
        # The orders netCDF gives (tests/it/conventions.rs hard-codes them).
        with netCDF4.Dataset(path) as ds:
            print(f"{name}: global {ds.ncattrs()}")
            for var in ds.variables.values():
                print(f"{name}: {var.name} {var.ncattrs()}")


if __name__ == "__main__":
    main()
