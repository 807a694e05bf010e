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
    with xr.open_dataset(path) as ds:
        for name in list(ds.variables):
            var = ds[name]
            values = var.values
            if values.dtype.kind == "M":
                flat = [None if np.isnat(x) else int(x.astype("datetime64[ns]").astype("i8"))
                        for x in values.ravel()]
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
                       ("arm_time", arm_time), ("text_cells", text_cells),
                       ("latin1_attrs", latin1_attrs)]:
        path = os.path.join(outdir, f"{name}.nc")
        if os.path.exists(path):
            os.remove(path)
        make(path)
        with open(os.path.join(outdir, f"{name}.xarray.json"), "w") as f:
            json.dump(describe(path), f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
