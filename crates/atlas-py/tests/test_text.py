"""Text through the xarray engine equals xarray's view of the NetCDF file:
cells left at a text fill are NaN, and bytes that are not UTF-8 come back as
Latin-1 text (``encoding["_Encoding"] == "latin-1"``) whose
``.encode("latin-1")`` is xarray's bytes. Inputs: the Argo-like profiles of
``scripts/make-argo-profiles.py`` and ``text_cells.nc`` of
``scripts/make-netcdf-conventions.py`` (crates/atlas-netcdf/tests/data)."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import atlasds
from atlasds.xarray_backend import MISSING_TEXT_ATTRIBUTE
from conftest import ROOT, _command

DATA = ROOT / "crates" / "atlas-netcdf" / "tests" / "data"
ARGO = sorted((DATA / "argo").glob("*.nc"))
CELLS = DATA / "conventions" / "text_cells.nc"
RAW = dict(decode_cf=False, mask_and_scale=False, decode_times=False)


def _create(source: Path, destination: Path) -> Path:
    subprocess.run(
        [*_command("ATLAS_BIN", "atlas-cli"), "-q", "create", "--decode", "cf", str(source), str(destination)],
        check=True,
    )
    return destination


@pytest.fixture(scope="module")
def argo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _create(DATA / "argo", tmp_path_factory.mktemp("argo") / "collection")


@pytest.fixture(scope="module")
def cells(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _create(CELLS, tmp_path_factory.mktemp("cells") / "collection")


def _is_nan(x) -> bool:
    return isinstance(x, float) and math.isnan(x)


def _text_variables(original: xr.Dataset) -> list[str]:
    return [name for name, v in original.variables.items() if v.dtype.kind in "OS"]


def assert_text_equals_xarray(ours: xr.Dataset, original: xr.Dataset, names: list[str]) -> None:
    """Each variable: same dims and shape, NaN where xarray has NaN, and xarray's
    bytes decoded with the encoding the engine names (UTF-8 unless Latin-1)."""
    for name in names:
        want, got = original[name], ours[name]
        assert got.dims == want.dims, name
        assert got.dtype == np.dtype(object), name
        encoding = got.encoding.get("_Encoding", "utf-8")
        for w, g in zip(want.values.ravel().tolist(), got.values.ravel().tolist()):
            if _is_nan(w):
                assert _is_nan(g), (name, w, g)
            else:
                assert g == w.decode(encoding), (name, w, g)


def test_blank_filled_cells_and_latin1_bytes_read_as_xarray_reads_the_file(argo):
    for path in ARGO:
        original = xr.open_dataset(path)
        ours = xr.open_dataset(argo, engine="atlas", group=path.name)
        names = _text_variables(original)
        assert {"TEMP_QC", "PSAL_QC", "SCIENTIFIC_CALIB_COEFFICIENT"} <= set(names)
        assert_text_equals_xarray(ours, original, names)
        # Every file's deepest PSAL is missing: its flag is NaN in both.
        assert _is_nan(ours["PSAL_QC"].values[0, -1])


def test_a_byte_that_is_not_utf8_is_latin1_text_that_encodes_back_to_it(argo):
    delayed = "R6900000_001.nc"  # NETCDF4; R6900000_004.nc is the classic one
    for name in (delayed, "R6900000_004.nc"):
        original = xr.open_dataset(DATA / "argo" / name)
        calib = xr.open_dataset(argo, engine="atlas", group=name)["SCIENTIFIC_CALIB_COEFFICIENT"]
        assert calib.encoding["_Encoding"] == "latin-1"
        assert "_Encoding" not in calib.attrs
        text = calib.values[0, 0, 1]
        assert text.rstrip() == "r=0.9996 \u00b10.0001"
        assert text.encode("latin-1") == original["SCIENTIFIC_CALIB_COEFFICIENT"].values[0, 0, 1]


def test_the_missing_text_marker_becomes_the_fill_and_leaves_attrs(argo):
    qc = xr.open_dataset(argo, engine="atlas", group="R6900000_002.nc")["PSAL_QC"]
    assert MISSING_TEXT_ATTRIBUTE not in qc.attrs
    assert qc.encoding["_FillValue"] == ""
    assert qc.attrs == {"long_name": "quality flag", "conventions": "Argo reference table 2"}


def test_without_mask_and_scale_missing_cells_stay_empty_text(argo):
    # xarray then keeps the file's fill b" " in the cells and in attrs; the
    # collection holds "" there.
    original = xr.open_dataset(DATA / "argo" / "R6900000_002.nc", mask_and_scale=False)["PSAL_QC"]
    assert original.values[0, -1] == b" " and original.attrs["_FillValue"] == b" "
    qc = xr.open_dataset(argo, engine="atlas", group="R6900000_002.nc", mask_and_scale=False)["PSAL_QC"]
    assert qc.values[0, -1] == ""
    assert qc.attrs["_FillValue"] == ""
    assert MISSING_TEXT_ATTRIBUTE not in qc.attrs


def test_text_cells_equal_xarray_except_where_empty_and_blank_cells_share_a_variable(cells):
    original = xr.open_dataset(CELLS)
    ours = xr.open_dataset(cells, engine="atlas", group=CELLS.name)
    assert_text_equals_xarray(ours, original, ["blank_qc", "blank_names", "calib", "utf8"])
    # mixed_*: the file has empty cells and blank-filled ones; both are stored
    # as "" and the collection cannot tell them apart (documented), so the
    # engine gives "" where xarray gives NaN.
    xarray_view = ["NaN" if _is_nan(x) else x for x in original["mixed_qc"].values.tolist()]
    assert xarray_view == [b"1", "NaN", b"", b"4", "NaN"]
    assert ours["mixed_qc"].values.tolist() == ["1", "", "", "4", ""]
    assert ours["mixed_names"].values.tolist() == ["abc", "", "", "d", "e"]
    assert MISSING_TEXT_ATTRIBUTE not in ours["mixed_qc"].attrs


def test_atlasds_write_stores_the_text_atlas_create_stores(tmp_path, argo):
    datasets = {p.name: xr.open_dataset(p, **RAW) for p in ARGO}
    # decode="cf": the files' stored form, mapped as `atlas create` maps the files.
    atlasds.write(tmp_path / "py", datasets, decode="cf")
    for path in ARGO:
        ours = xr.open_dataset(tmp_path / "py", engine="atlas", group=path.name)
        cli = xr.open_dataset(argo, engine="atlas", group=path.name)
        for name in _text_variables(xr.open_dataset(path)):
            assert ours[name].encoding.get("_Encoding") == cli[name].encoding.get("_Encoding"), name
            a, b = ours[name].values.ravel().tolist(), cli[name].values.ravel().tolist()
            assert [x if not _is_nan(x) else "NaN" for x in a] == [x if not _is_nan(x) else "NaN" for x in b], name
