#!/usr/bin/env python3
"""Writes the small NetCDF files the `atlas-netcdf` tests read, with the real
netCDF library (Python `netCDF4`), and what `netCDF4` reads back from each.

    python scripts/make-netcdf-inputs.py OUTDIR

OUTDIR/good/     files every tool should ingest (both file families, every
                 numeric type, char and string variables, attributes of every
                 type, fills, missing_value, packing, CF times, an empty
                 unlimited dimension, a scalar, a group, a flag variable)
OUTDIR/cf_only/  files atlas-python cannot ingest and we can (a bool variable)
OUTDIR/bad/      one problem per file: a corrupt file, a compound type, a
                 calendar timestamp_ns cannot hold, two files of one name
OUTDIR/raw/      NAME.json per good file: every variable and attribute as
                 netCDF4 reads it with auto-masking and scaling off (the
                 expectation of `--decode raw`)

The output is deterministic: run it again and the files compare equal, apart
from the library version HDF5 writes into NetCDF-4 files.
"""

import json
import os
import sys

import numpy as np
import netCDF4

NUMERIC = ["i1", "i2", "i4", "f4", "f8"]
NC4_ONLY = ["u1", "u2", "u4", "i8", "u8"]


def common(ds, kinds, fmt):
    """Variables and attributes that every format holds."""
    ds.title = "atlas-netcdf test input"
    ds.format_name = fmt
    ds.byte_attr = np.int8(-3)
    ds.short_attr = np.int16(-300)
    ds.int_attr = np.int32(70000)
    ds.float_attr = np.float32(0.1)
    ds.double_attr = np.float64(2.5e-7)
    ds.int_list = np.array([1, 2, 3], dtype="i4")
    ds.double_list = np.array([0.5, 1e20, -3.25], dtype="f8")
    ds.float_list = np.array([1.5, 0.1], dtype="f4")

    ds.createDimension("n", 4)
    ds.createDimension("strlen", 6)
    ds.createDimension("rec", None)  # unlimited, left at zero records

    for kind in kinds:
        v = ds.createVariable(f"plain_{kind}", kind, ("n",))
        info = np.iinfo(kind) if kind[0] in "iu" else None
        if info is not None:
            v[:] = np.array([info.min, 0, 1, info.max], dtype=kind)
        else:
            v[:] = np.array([-1.5, 0.0, 0.1, 3.0e10], dtype=kind)
        v.long_name = f"every value of a {kind}"

        f = ds.createVariable(f"filled_{kind}", kind, ("n",), fill_value=np.array(7, dtype=kind))
        f[:] = np.array([1, 7, 3, 7], dtype=kind)
        f.units = "1"

    # A variable with missing_value but no _FillValue.
    m = ds.createVariable("missing_f4", "f4", ("n",))
    m.missing_value = np.float32(-999.0)
    m[:] = np.array([1.0, -999.0, 2.0, 3.0], dtype="f4")

    # An integer variable with both: xarray promotes it to a float with NaN.
    mi = ds.createVariable("masked_i2", "i2", ("n",), fill_value=np.int16(-1))
    mi.missing_value = np.int16(-2)
    mi[:] = np.array([5, -1, -2, 6], dtype="i2")

    # Packed: short with scale_factor/add_offset and a fill.
    p = ds.createVariable("packed", "i2", ("n",), fill_value=np.int16(-32767))
    p.scale_factor = np.float32(0.01)
    p.add_offset = np.float32(20.0)
    p.set_auto_maskandscale(False)
    p[:] = np.array([0, 100, -32767, -500], dtype="i2")
    p.set_auto_maskandscale(True)

    p64 = ds.createVariable("packed_f8", "i4", ("n",))
    p64.scale_factor = 0.001
    p64.set_auto_maskandscale(False)
    p64[:] = np.array([1, 2000, -3, 40000], dtype="i4")
    p64.set_auto_maskandscale(True)

    # Char strings along the last dimension.
    c = ds.createVariable("station", "S1", ("n", "strlen"))
    c[:] = netCDF4.stringtochar(np.array(["alpha", "b", "", "gamma6"], dtype="S6"))
    c.long_name = "station name"

    # CF times: several units and epochs, a fill.
    t = ds.createVariable("time", "f8", ("n",), fill_value=np.float64(99999.0))
    t.units = "days since 1950-01-01 00:00:00"
    t.standard_name = "time"
    t[:] = np.array([0.0, 25000.5, 99999.0, 27000.25])
    t2 = ds.createVariable("time_s", "i4", ("n",))
    t2.units = "seconds since 2000-01-01T00:00:00Z"
    t2.calendar = "gregorian"
    t2[:] = np.array([0, 1, 86400, -86400], dtype="i4")
    t3 = ds.createVariable("time_h", "f4", ("n",))
    t3.units = "hours since 1970-01-01"
    t3.calendar = "proleptic_gregorian"
    t3[:] = np.array([0.0, 1.5, 24.25, 1e5], dtype="f4")

    # A coordinate variable of dimension n.
    n = ds.createVariable("n", "i4", ("n",))
    n[:] = np.arange(4, dtype="i4")

    # A data variable naming an auxiliary coordinate.
    d = ds.createVariable("temp", "f4", ("n",), fill_value=np.float32(99999.0))
    d.coordinates = "time station"
    d.units = "degree_Celsius"
    d.valid_range = np.array([-5.0, 40.0], dtype="f4")
    d[:] = np.array([11.5, 99999.0, 10.25, 9.0], dtype="f4")

    # The empty record dimension.
    r = ds.createVariable("records", "f8", ("rec",))
    r.units = "m"

    # A scalar.
    s = ds.createVariable("scalar", "f8", ())
    s[...] = 42.5
    s.comment = "rank 0"

    # A bool-like flag.
    fl = ds.createVariable("flag", "i1", ("n",))
    fl.flag_values = np.array([0, 1], dtype="i1")
    fl.flag_meanings = "bad good"
    fl[:] = np.array([0, 1, 1, 0], dtype="i1")


def nc4_extras(ds):
    ds.uint_attr = np.uint32(4000000000)
    ds.int64_attr = np.int64(-(2**40))
    ds.ubyte_list = np.array([1, 255], dtype="u1")
    ds.setncattr_string("string_attr", "a string")
    ds.setncattr_string("string_list", ["one", "two"])

    sv = ds.createVariable("label", str, ("n",))
    sv[:] = np.array(["x", "yy", "", "zzzz"], dtype=object)
    sv.long_name = "a NC_STRING variable"

    t = ds.createVariable("time_ms", "i8", ("n",), fill_value=np.int64(-1))
    t.units = "milliseconds since 2020-02-29 12:00:00"
    t[:] = np.array([0, -1, 1500, 10**9], dtype="i8")

    g = ds.createGroup("profile")
    g.createDimension("level", 3)
    gv = g.createVariable("pres", "f4", ("level",), fill_value=np.float32(-1.0))
    gv[:] = np.array([1.0, 2.0, -1.0], dtype="f4")
    gv.units = "dbar"
    g.group_comment = "a sub-group"
    sub = g.createGroup("qc")
    sv = sub.createVariable("pres_qc", "S1", ("level",))
    sv[:] = np.array([b"1", b"4", b" "])


def cf_extras(ds):
    """CF corners: _Unsigned, time bounds, a 2-D field, a shared char dimension,
    mixed packing types, text needing JSON escapes, a global coordinates attribute."""
    ds.coordinates = "lat"
    ds.history = "caf\u00e9 \"quoted\" \u00b0C"
    ds.nan_list = np.array([np.nan, np.inf, -1.0], dtype="f8")
    ds.createDimension("time", 3)
    ds.createDimension("depth", 2)
    ds.createDimension("nv", 2)
    ds.createDimension("code", 2)
    t = ds.createVariable("time", "f8", ("time",))
    t.units = "hours since 2001-02-03 04:05:06"
    t.bounds = "time_bnds"
    t[:] = [0.5, 1.0, 100.0]
    tb = ds.createVariable("time_bnds", "f8", ("time", "nv"))
    tb[:] = [[0.0, 1.0], [0.5, 1.5], [99.0, 101.0]]
    lat = ds.createVariable("lat", "f4", ())
    lat[...] = 45.5
    u = ds.createVariable("ubyte_counts", "i1", ("time",), fill_value=np.int8(-1))
    u._Unsigned = "true"
    u[:] = np.array([-2, -1, 5], dtype="i1")
    f = ds.createVariable("field", "i2", ("time", "depth"), fill_value=np.int16(-999))
    f.scale_factor = 0.5
    f.add_offset = np.float32(1.0)
    f.set_auto_maskandscale(False)
    f[:] = np.array([[1, 2], [-999, 4], [5, 6]], dtype="i2")
    g = ds.createVariable("grid", "f8", ("time", "depth"))
    g[:] = np.arange(6, dtype="f8").reshape(3, 2) / 3.0
    c = ds.createVariable("codes", "S1", ("time", "code"))
    c[:] = np.array([[b"a", b"b"], [b"c", b""], [b"", b""]])
    other = ds.createVariable("code", "i4", ("code",))
    other[:] = [10, 20]


def write_good(outdir):
    files = {
        "classic.nc": ("NETCDF3_CLASSIC", NUMERIC),
        "offset64.nc": ("NETCDF3_64BIT_OFFSET", NUMERIC),
        "nc4classic.nc": ("NETCDF4_CLASSIC", NUMERIC),
        "nc4.nc4": ("NETCDF4", NUMERIC + NC4_ONLY),
    }
    with netCDF4.Dataset(os.path.join(outdir, "cf_extras.nc"), "w", format="NETCDF4_CLASSIC") as ds:
        cf_extras(ds)
    for name, (fmt, kinds) in files.items():
        path = os.path.join(outdir, name)
        with netCDF4.Dataset(path, "w", format=fmt) as ds:
            common(ds, kinds, fmt)
            if fmt == "NETCDF4":
                nc4_extras(ds)


def write_bad(outdir):
    with open(os.path.join(outdir, "corrupt.nc"), "wb") as f:
        f.write(b"CDF\x01" + bytes(range(60)))
    with netCDF4.Dataset(os.path.join(outdir, "compound.nc"), "w", format="NETCDF4") as ds:
        ds.createDimension("n", 2)
        ok = ds.createVariable("ok", "f4", ("n",))
        ok[:] = [1.0, 2.0]
        ct = ds.createCompoundType(np.dtype([("a", "i4"), ("b", "f8")]), "pair")
        v = ds.createVariable("pairs", ct, ("n",))
        data = np.zeros(2, dtype=[("a", "i4"), ("b", "f8")])
        v[:] = data
    with netCDF4.Dataset(os.path.join(outdir, "noleap.nc"), "w", format="NETCDF3_CLASSIC") as ds:
        ds.createDimension("t", 2)
        t = ds.createVariable("time", "f8", ("t",))
        t.units = "days since 2000-01-01"
        t.calendar = "noleap"
        t[:] = [0.0, 59.0]
    for sub in ("a", "b"):
        os.makedirs(os.path.join(outdir, "dup", sub), exist_ok=True)
        with netCDF4.Dataset(os.path.join(outdir, "dup", sub, "same.nc"), "w", format="NETCDF3_CLASSIC") as ds:
            ds.createDimension("n", 1)
            v = ds.createVariable("x", "f8", ("n",))
            v[:] = [1.0]


def write_cf_only(outdir):
    with netCDF4.Dataset(os.path.join(outdir, "bool.nc"), "w", format="NETCDF4_CLASSIC") as ds:
        ds.createDimension("n", 3)
        b = ds.createVariable("is_valid", "i1", ("n",))
        b.setncattr("dtype", "bool")
        b[:] = np.array([1, 0, 1], dtype="i1")


def value_json(x):
    """A value as the raw expectation writes it: non-finite floats as strings."""
    if isinstance(x, (np.floating, float)):
        x = float(x)
        if np.isnan(x):
            return "NaN"
        if np.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, bytes):
        return x.decode("utf-8")
    return x


def attr_json(value, nc_type):
    if isinstance(value, str):
        return {"type": "string", "value": value}
    arr = np.atleast_1d(np.asarray(value))
    if arr.dtype.kind in "OU":
        return {"type": "list<string>", "value": [str(v) for v in arr]}
    names = {
        "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
        "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
        "f4": "float32", "f8": "float64",
    }
    t = names[arr.dtype.str[1:]]
    values = [value_json(v) for v in arr]
    if arr.size == 1 and nc_type == "scalar":
        return {"type": t, "value": values[0]}
    return {"type": f"list<{t}>", "value": values}


def describe_raw(path):
    """Every variable of every group as netCDF4 reads it with masking off."""
    out = {"attributes": {}, "variables": {}}
    with netCDF4.Dataset(path) as ds:
        ds.set_auto_maskandscale(False)
        ds.set_always_mask(False)

        def walk(group, prefix):
            for key in group.ncattrs():
                if prefix:
                    continue  # sub-group attributes are not dataset attributes
                raw = group.getncattr(key)
                out["attributes"][key] = attr_json(raw, "scalar" if np.ndim(raw) == 0 else "list")
            for name, var in group.variables.items():
                data = var[...]
                dims = list(var.dimensions)
                if var.dtype == np.dtype("S1"):
                    if data.ndim == 0:
                        data = np.array(data.tobytes().rstrip(b"\0"))
                    else:
                        data = netCDF4.chartostring(data, encoding="utf-8")
                        dims = dims[:-1]
                    dtype = "string"
                elif var.dtype is str:
                    dtype = "string"
                else:
                    dtype = {
                        "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
                        "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
                        "f4": "float32", "f8": "float64",
                    }[np.dtype(var.dtype).str[1:]]
                attrs = {}
                for key in var.ncattrs():
                    raw = var.getncattr(key)
                    # A vector attribute of one value is still a list when stored as one.
                    attrs[key] = attr_json(raw, "scalar" if np.ndim(raw) == 0 else "list")
                out["variables"][prefix + name] = {
                    "dtype": dtype,
                    "dims": dims,
                    "shape": [len(group.dimensions[d]) if d in group.dimensions else None for d in dims]
                    if False else list(np.shape(data)),
                    "values": [value_json(v) for v in np.ravel(np.asarray(data, dtype=object))],
                    "attributes": attrs,
                }
            for gname, sub in group.groups.items():
                walk(sub, prefix + gname + "/")

        walk(ds, "")
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    good = os.path.join(outdir, "good")
    bad = os.path.join(outdir, "bad")
    raw = os.path.join(outdir, "raw")
    for d in (good, bad, raw):
        os.makedirs(d, exist_ok=True)
    write_good(good)
    write_bad(bad)
    cf_only = os.path.join(outdir, "cf_only")
    os.makedirs(cf_only, exist_ok=True)
    write_cf_only(cf_only)
    for name in sorted(os.listdir(good)):
        doc = describe_raw(os.path.join(good, name))
        with open(os.path.join(raw, name + ".json"), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
