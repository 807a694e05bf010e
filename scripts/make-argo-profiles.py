#!/usr/bin/env python3
"""Writes COUNT Argo-like profile files for benchmarking `atlas create`.

    python scripts/make-argo-profiles.py OUTDIR [COUNT]   (default 20000)

Half are NETCDF4 (zlib-compressed, as Argo's GDAC serves them), half
NETCDF3_CLASSIC, alternating. Each holds one profile in the Argo layout:
PRES/TEMP/PSAL (float32, fill 99999) and their char QC flags along
N_LEVELS (20-120 levels; fill " ", blank where the value is missing, as
real files are: the deepest PSAL always is), JULD (days since 1950-01-01),
LATITUDE/LONGITUDE, PLATFORM_NUMBER and DATA_MODE as char arrays,
SCIENTIFIC_CALIB_COEFFICIENT (delayed-mode profiles hold "±" as the single
Latin-1 byte 0xB1, which is not UTF-8, as real delayed-mode files do), and
the usual global attributes. Deterministic: seeded per file; existing files are kept, so an
interrupted run resumes.
"""

import os
import sys

import numpy as np
import netCDF4


def write(path, i, fmt):
    rng = np.random.default_rng(6901234 + i)
    levels = int(rng.integers(20, 121))
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.title = "Argo float vertical profile"
        ds.institution = "CORIOLIS"
        ds.source = "Argo float"
        ds.history = "2024-01-01T00:00:00Z creation"
        ds.Conventions = "Argo-3.1 CF-1.6"
        ds.featureType = "trajectoryProfile"
        ds.createDimension("N_PROF", 1)
        ds.createDimension("N_LEVELS", levels)
        ds.createDimension("STRING8", 8)
        ds.createDimension("N_PARAM", 3)
        ds.createDimension("STRING16", 16)
        ds.createDimension("N_CALIB", 1)
        ds.createDimension("STRING64", 64)
        zlib = fmt == "NETCDF4"

        platform = ds.createVariable("PLATFORM_NUMBER", "S1", ("N_PROF", "STRING8"))
        platform.long_name = "Float unique identifier"
        platform[:] = netCDF4.stringtochar(np.array([f"{6900000 + i // 100:<8d}"], dtype="S8"))
        params = ds.createVariable("STATION_PARAMETERS", "S1", ("N_PROF", "N_PARAM", "STRING16"))
        params[:] = netCDF4.stringtochar(np.array([["PRES", "TEMP", "PSAL"]], dtype="S16"))
        cycle = ds.createVariable("CYCLE_NUMBER", "i4", ("N_PROF",), fill_value=np.int32(99999))
        cycle.long_name = "Float cycle number"
        cycle[:] = [i % 100 + 1]
        mode = ds.createVariable("DATA_MODE", "S1", ("N_PROF",))
        mode[:] = np.array([b"R" if i % 3 else b"D"])
        juld = ds.createVariable("JULD", "f8", ("N_PROF",), fill_value=999999.0)
        juld.long_name = "Julian day (UTC) of the station relative to REFERENCE_DATE_TIME"
        juld.standard_name = "time"
        juld.units = "days since 1950-01-01 00:00:00 UTC"
        juld.conventions = "Relative julian days with decimal part (as parts of day)"
        juld.axis = "T"
        juld[:] = [25000.0 + i * 0.37]
        for name, lo, hi in (("LATITUDE", -90, 90), ("LONGITUDE", -180, 180)):
            v = ds.createVariable(name, "f8", ("N_PROF",), fill_value=99999.0)
            v.units = "degree_north" if name == "LATITUDE" else "degree_east"
            v.valid_min = float(lo)
            v.valid_max = float(hi)
            v[:] = [rng.uniform(lo / 2, hi / 2)]
        pres = np.sort(rng.uniform(0, 2000, levels)).astype("f4")
        temp = (20 * np.exp(-pres / 500) + rng.normal(0, 0.1, levels)).astype("f4")
        psal = (34.5 + rng.normal(0, 0.05, levels)).astype("f4")
        temp[rng.random(levels) < 0.03] = 99999.0
        psal[-1] = 99999.0
        for name, data, units in (("PRES", pres, "decibar"), ("TEMP", temp, "degree_Celsius"), ("PSAL", psal, "psu")):
            v = ds.createVariable(name, "f4", ("N_PROF", "N_LEVELS"), fill_value=np.float32(99999.0), zlib=zlib)
            v.units = units
            v.C_format = "%9.3f"
            v.resolution = np.float32(0.001)
            v[:] = data[None, :]
            qc = ds.createVariable(name + "_QC", "S1", ("N_PROF", "N_LEVELS"), zlib=zlib, fill_value=b" ")
            qc.long_name = "quality flag"
            qc.conventions = "Argo reference table 2"
            qc[:] = np.where(data == 99999.0, b" ", b"1")[None, :]
        calib = ds.createVariable(
            "SCIENTIFIC_CALIB_COEFFICIENT", "S1", ("N_PROF", "N_CALIB", "N_PARAM", "STRING64"), fill_value=b" "
        )
        calib.long_name = "Calibration coefficients for this equation"
        calib.set_auto_chartostring(False)
        delayed = i % 3 == 0
        texts = [b"none", b"r=0.9996 \xb10.0001", b"ds=0.003"] if delayed else [b"none"] * 3
        cells = np.full((1, 1, 3, 64), b" ", dtype="S1")
        for j, text in enumerate(texts):
            cells[0, 0, j, : len(text)] = np.frombuffer(text, dtype="S1")
        calib[:] = cells


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) == 3 else 20000
    os.makedirs(out, exist_ok=True)
    for i in range(count):
        fmt = "NETCDF4" if i % 2 == 0 else "NETCDF3_CLASSIC"
        path = os.path.join(out, f"R{6900000 + i // 100}_{i % 100 + 1:03d}.nc")
        if not os.path.exists(path):  # resumable: files are deterministic
            write(path, i, fmt)


if __name__ == "__main__":
    main()
