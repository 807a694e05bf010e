"""What xarray writes, Atlas gives back: `atlasds.write` (its default,
`decode="xarray"`) then the engine, named rule by rule. The oracle where one is needed is the
same Dataset through a NetCDF4 file (`to_netcdf`, then `xr.open_dataset`)."""

from __future__ import annotations

import asyncio
import threading
import warnings
from pathlib import Path

import cftime
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from xarray.testing import assert_identical

import atlasds


def atlas_roundtrip(tmp_path: Path, ds: xr.Dataset, **kwargs) -> xr.Dataset:
    open_kwargs = kwargs.pop("open_kwargs", {})
    path = tmp_path / "c"
    atlasds.write(path, {"ds": ds}, **kwargs)  # the plain call: no decode=
    return xr.open_dataset(path, engine="atlas", group="ds", **open_kwargs).load()


def netcdf_roundtrip(tmp_path: Path, ds: xr.Dataset, **kwargs) -> xr.Dataset:
    open_kwargs = kwargs.pop("open_kwargs", {})
    path = tmp_path / "f.nc"
    ds.to_netcdf(path, engine="netcdf4", **kwargs)
    with xr.open_dataset(path, engine="netcdf4", **open_kwargs) as opened:
        return opened.load()


def masked_scaled() -> xr.Dataset:
    values = np.array([10.0, np.nan, 10.5, 20.25])
    return xr.Dataset({"t": ("n", values, {"units": "degC"})})


PACKED = {"t": {"dtype": "int16", "scale_factor": 0.25, "add_offset": 10.0, "_FillValue": -1}}


# Encoding keywords -------------------------------------------------------------


def test_a_masked_scaled_int16_comes_back_as_float_with_nan(tmp_path):
    actual = atlas_roundtrip(tmp_path, masked_scaled(), encoding=PACKED)
    assert actual["t"].dtype == np.float64
    np.testing.assert_array_equal(actual["t"].values, [10.0, np.nan, 10.5, 20.25])
    enc = actual["t"].encoding
    assert enc["dtype"] == np.dtype("int16")
    assert (enc["scale_factor"], enc["add_offset"], enc["_FillValue"]) == (0.25, 10.0, -1)


def test_without_mask_and_scale_the_stored_integers_and_their_attributes_come_back(tmp_path):
    kwargs = dict(encoding=PACKED, open_kwargs=dict(mask_and_scale=False))
    actual = atlas_roundtrip(tmp_path / "a", masked_scaled(), **kwargs)
    expected = netcdf_roundtrip(tmp_path, masked_scaled(), **kwargs)
    assert actual["t"].dtype == np.int16
    np.testing.assert_array_equal(actual["t"].values, [0, -1, 2, 41])
    assert_identical(actual, expected)


def test_the_units_and_calendar_of_times_asked_for_are_stored(tmp_path):
    times = pd.date_range("2000-01-01", periods=3, freq="D", unit="ns")
    ds = xr.Dataset({"t": ("n", times)})
    encoding = {"t": {"units": "hours since 1999-12-31", "calendar": "standard", "dtype": "int32"}}
    raw = atlas_roundtrip(tmp_path, ds, encoding=encoding, open_kwargs=dict(decode_times=False))
    np.testing.assert_array_equal(raw["t"].values, [24, 48, 72])
    assert raw["t"].attrs["units"] == "hours since 1999-12-31"
    assert_identical(atlas_roundtrip(tmp_path / "b", ds, encoding=encoding), ds)


def test_an_unknown_encoding_key_is_refused_and_nothing_is_written(tmp_path):
    with pytest.raises(ValueError, match="unexpected encoding parameters for Atlas"):
        atlas_roundtrip(tmp_path, masked_scaled(), encoding={"t": {"colour": "red"}})
    assert not (tmp_path / "c" / "data.atlas").exists()


def test_an_encoding_applies_to_the_datasets_holding_the_variable_and_a_name_none_holds_is_a_key_error(tmp_path):
    other = xr.Dataset({"u": ("n", np.arange(3.0))})
    atlasds.write(tmp_path / "c", {"a": masked_scaled(), "b": other}, decode="xarray", encoding=PACKED)
    assert xr.open_dataset(tmp_path / "c", engine="atlas", group="a")["t"].encoding["dtype"] == np.int16
    assert_identical(xr.open_dataset(tmp_path / "c", engine="atlas", group="b"), other)
    with pytest.raises(KeyError, match="'invalid'"):
        atlasds.write(tmp_path / "d", {"a": masked_scaled()}, decode="xarray", encoding={"invalid": {}})
    assert not (tmp_path / "d" / "data.atlas").exists()


def test_append_mode_is_refused_because_collections_are_write_once(tmp_path):
    with pytest.raises(atlasds.InvalidArgument, match="write-once"):
        atlasds.write(tmp_path / "c", {"ds": masked_scaled()}, decode="xarray", mode="a")


def test_to_netcdf_keywords_are_refused_with_the_file_mappings(tmp_path):
    # decode="cf" and "raw" take a file's stored form: an encoding would mean nothing there.
    for decode in ("cf", "raw"):
        with pytest.raises(atlasds.InvalidArgument, match="decode='xarray'"):
            atlasds.write(tmp_path / decode, {"ds": masked_scaled()}, decode=decode, encoding=PACKED)
        assert not (tmp_path / decode).exists()


def test_the_plain_write_of_a_dataset_gives_it_back_as_it_went_in(tmp_path):
    ds = masked_scaled().assign(
        flag=("n", np.array([True, False, True, True])),
        when=("n", pd.date_range("2024-01-01", periods=4, freq="h")),
    )
    atlasds.write(tmp_path / "c", {"ds": ds})
    back = xr.open_dataset(tmp_path / "c", engine="atlas", group="ds").load()
    assert_identical(back, ds)
    assert back["flag"].dtype == bool and np.isnan(back["t"].values[1])


# Chunk shapes ---------------------------------------------------------------


def gridded() -> xr.Dataset:
    values = np.arange(20 * 30, dtype=np.float32).reshape(20, 30)
    return xr.Dataset({"v": (("y", "x"), values), "w": (("y",), np.arange(20.0))})


def test_chunksizes_in_encoding_become_the_stored_chunk_shape_and_the_values_come_back(tmp_path):
    ds = gridded()
    path = tmp_path / "c"
    atlasds.write(path, {"ds": ds}, encoding={"v": {"chunksizes": (5, 10)}, "w": {"chunks": (4,)}})
    stored = atlasds.Collection.open(path)["ds"]
    assert stored.layout("v").chunk_shape == (5, 10)
    assert stored.layout("w").chunk_shape == (4,)
    back = xr.open_dataset(path, engine="atlas", group="ds")
    assert back["v"].encoding["chunksizes"] == (5, 10)
    np.testing.assert_array_equal(back["v"][3:12, 7:25].values, ds["v"].values[3:12, 7:25])
    assert_identical(back.load(), ds)


def test_a_chunk_shape_asked_twice_differently_is_refused_and_nothing_is_written(tmp_path):
    with pytest.raises(atlasds.InvalidArgument, match=r"encoding\['v'\]\['chunksizes'\] is \[5, 10\]"):
        atlasds.write(tmp_path / "c", {"ds": gridded()}, chunks={"v": [2, 2]}, encoding={"v": {"chunksizes": (5, 10)}})
    with pytest.raises(atlasds.InvalidArgument, match="must be positive"):
        atlasds.write(tmp_path / "c", {"ds": gridded()}, encoding={"v": {"chunksizes": (0, 10)}})
    assert not (tmp_path / "c").exists()


def test_unlimited_dims_are_accepted_and_change_nothing(tmp_path):
    ds = masked_scaled()
    actual = atlas_roundtrip(tmp_path, ds, unlimited_dims=["n"])
    assert_identical(actual, ds)
    assert "unlimited_dims" not in actual.encoding


# CF encoding undone on open --------------------------------------------------


@pytest.mark.parametrize("fill", [255, -1])
def test_an_unsigned_variable_stored_signed_comes_back_unsigned(tmp_path, fill):
    ds = xr.Dataset({"u": ("n", np.array([0, 1, 200, 255], dtype=np.uint8))})
    encoding = {"u": {"dtype": "i1", "_Unsigned": "true", "_FillValue": fill}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xr.SerializationWarning)
        actual = atlas_roundtrip(tmp_path / "a", ds, encoding=encoding)
        expected = netcdf_roundtrip(tmp_path, ds, encoding=encoding)
    assert_identical(actual, expected)
    assert np.isnan(actual["u"].values[3]) and actual["u"].values[2] == 200


def test_a_bool_comes_back_bool_and_is_stored_as_int8_with_a_dtype_attribute(tmp_path):
    ds = xr.Dataset({"flag": ("n", np.array([True, False, True]))})
    path = tmp_path / "c"
    atlasds.write(path, {"ds": ds}, decode="xarray")
    stored = atlasds.Collection.open(path)["ds"]
    assert stored.layout("flag").atlas_dtype == "int8"
    assert stored.array_attrs("flag")["dtype"] == "bool"
    actual = xr.open_dataset(path, engine="atlas", group="ds")
    assert actual["flag"].dtype == bool
    assert_identical(actual, ds)


def test_a_fill_value_explicitly_left_out_is_not_in_encoding(tmp_path):
    ds = xr.Dataset({"x": ("n", np.array([1.5, 2.5]))}, coords={"n": [10, 20]})
    actual = atlas_roundtrip(tmp_path, ds, encoding={"x": {"_FillValue": None}, "n": {"_FillValue": None}})
    assert "_FillValue" not in actual["x"].encoding
    assert "_FillValue" not in actual["n"].encoding
    # Where xarray adds one by default (floats), it is there as for a NetCDF file.
    assert np.isnan(atlas_roundtrip(tmp_path / "b", ds)["x"].encoding["_FillValue"])


def test_an_integer_without_a_declared_fill_keeps_its_value_that_equals_netcdfs_default_fill(tmp_path):
    # The collection records NetCDF's default fill (-127 for int8); xarray masks
    # no value a file did not declare, so neither may the engine.
    ds = xr.Dataset({"b": ("n", np.array([-127, 0, 5], dtype=np.int8))})
    actual = atlas_roundtrip(tmp_path, ds)
    assert actual["b"].dtype == np.int8
    assert_identical(actual, ds)


# Values xarray writes --------------------------------------------------------


def test_zero_dimensional_variables_of_every_kind_round_trip(tmp_path):
    ds = xr.Dataset(
        {
            "f": ((), 1.0e9, {"units": "units of awesome"}),
            "b": ((), b"foobar"),
            "s": ((), "foobar"),
            "t": ((), np.datetime64("2001-02-03T04:05", "ns")),
        }
    )
    assert_identical(atlas_roundtrip(tmp_path, ds), ds)


def test_none_and_object_arrays_of_floats_come_back_as_float_with_nan(tmp_path):
    ds = xr.Dataset(
        {
            "floats": ("a", np.array([0.0, None, 2.0], dtype=object)),
            "nones": ("b", np.array([None, None], dtype=object)),
        }
    )
    actual = atlas_roundtrip(tmp_path, ds)
    assert actual["floats"].dtype == np.float64
    np.testing.assert_array_equal(actual["floats"].values, [0.0, np.nan, 2.0])
    assert np.isnan(actual["nones"].values).all()


def test_bytes_come_back_as_bytes_with_their_fill_value_masked(tmp_path):
    values = np.array([b"ab", b"cdef", np.nan], dtype=object)
    ds = xr.Dataset({"x": ("t", values, {}, {"_FillValue": b"X", "dtype": "S1"})})
    actual = atlas_roundtrip(tmp_path, ds)
    assert actual["x"].values[:2].tolist() == [b"ab", b"cdef"]
    assert actual["x"].values[2] is np.nan or np.isnan(actual["x"].values[2])
    assert actual["x"].encoding["dtype"] == np.dtype("S1")


def test_bytes_that_are_not_utf8_come_back_byte_for_byte(tmp_path):
    ds = xr.Dataset({"x": ("t", np.array([b"\xff\xfe", b"caf\xe9"]))})
    assert actual_values(atlas_roundtrip(tmp_path, ds)) == [b"\xff\xfe", b"caf\xe9"]


def actual_values(ds: xr.Dataset) -> list:
    return ds["x"].values.tolist()


def test_text_with_an_encoding_is_decoded_by_that_encoding(tmp_path):
    ds = xr.Dataset({"x": ("t", np.array(["café", "ü"], dtype=object))})
    actual = atlas_roundtrip(tmp_path, ds, encoding={"x": {"_Encoding": "utf-8", "dtype": "S1"}})
    assert actual["x"].values.tolist() == ["café", "ü"]
    assert actual["x"].encoding["_Encoding"] == "utf-8"


def test_stringdtype_nulls_come_back_as_empty_text_as_from_netcdf(tmp_path):
    dt = np.dtypes.StringDType(na_object=None)
    ds = xr.Dataset({"x": ("t", np.array(["a", None, "c"], dtype=dt))})
    actual = atlas_roundtrip(tmp_path / "a", ds)
    expected = netcdf_roundtrip(tmp_path, ds)
    assert actual["x"].values.tolist() == expected["x"].values.tolist() == ["a", "", "c"]


def test_timedeltas_and_cftime_dates_round_trip(tmp_path):
    dates = [cftime.DatetimeNoLeap(2000, 2, 28), cftime.DatetimeNoLeap(2000, 3, 1)]
    ds = xr.Dataset(
        {
            "dt": ("n", pd.to_timedelta(["1D", "NaT"]).values),
            "noleap": ("n", dates),
        }
    )
    times = xr.coders.CFDatetimeCoder(use_cftime=True)
    actual = atlas_roundtrip(tmp_path, ds, open_kwargs=dict(decode_timedelta=True, decode_times=times))
    assert_identical(actual, ds)
    assert actual["noleap"].encoding["calendar"] == "noleap"


def test_an_unnamed_variable_comes_back_unnamed(tmp_path):
    ds = xr.Dataset({None: (("x", "y"), [[0, 1], [2, 3]])})
    assert_identical(atlas_roundtrip(tmp_path, ds), ds)


@pytest.mark.parametrize("name", [0, (4, 5), True])
def test_a_variable_name_that_is_not_text_is_a_type_error_naming_it(tmp_path, name):
    ds = xr.Dataset({name: xr.DataArray(np.zeros(2))})
    with pytest.raises(TypeError, match=r"string or None") as info:
        atlas_roundtrip(tmp_path, ds)
    info.match(repr(name).replace("(", r"\(").replace(")", r"\)"))


# Coordinates ---------------------------------------------------------------


def test_non_index_coordinates_bounds_and_grid_mapping_come_back_as_from_netcdf(tmp_path):
    ds = xr.Dataset(
        {
            "temp": (("y", "x"), np.arange(4.0).reshape(2, 2), {"grid_mapping": "crs"}),
            "crs": ((), 0, {"grid_mapping_name": "latitude_longitude"}),
            "x_bnds": (("x", "nv"), [[0.0, 1.0], [1.0, 2.0]]),
        },
        coords={
            "x": ("x", [0.5, 1.5], {"bounds": "x_bnds"}),
            "y": ("y", [0, 1]),
            "lat": (("y", "x"), np.ones((2, 2))),
        },
    )
    for decode_coords in (True, "all"):
        kwargs = dict(open_kwargs=dict(decode_coords=decode_coords))
        actual = atlas_roundtrip(tmp_path / str(decode_coords), ds, **kwargs)
        expected = netcdf_roundtrip(tmp_path, ds, **kwargs)
        assert_identical(actual, expected)
        assert set(actual.coords) == set(expected.coords)


def test_variables_can_be_dropped_on_open(tmp_path):
    ds = masked_scaled().assign(u=("n", np.arange(4)))
    actual = atlas_roundtrip(tmp_path, ds, open_kwargs=dict(drop_variables=["u"]))
    assert list(actual.data_vars) == ["t"]


# The backend array ------------------------------------------------------------


def opened(tmp_path: Path, ds: xr.Dataset) -> xr.Dataset:
    path = tmp_path / "c"
    atlasds.write(path, {"ds": ds}, decode="xarray")
    return xr.open_dataset(path, engine="atlas", group="ds")


def grid() -> xr.Dataset:
    return xr.Dataset({"v": (("y", "x"), np.arange(20.0).reshape(4, 5))})


def test_vectorised_indexing_with_a_negative_step_gives_numpys_values(tmp_path):
    ds = grid()
    lazy = opened(tmp_path, ds)
    ind = xr.DataArray([[0, 3], [2, 1]], dims=["a", "b"])
    for key in ({"x": ind, "y": slice(None, None, -1)}, {"x": slice(None, None, -2), "y": ind}):
        assert_identical(lazy.isel(key).load(), ds.isel(key))


def test_outer_indexing_with_lists_gives_numpys_values(tmp_path):
    ds = grid()
    lazy = opened(tmp_path, ds)
    key = {"y": [3, 0, 2], "x": [4, 1]}
    assert_identical(lazy.isel(key).load(), ds.isel(key))


def test_one_text_element_is_a_numpy_array_not_a_bare_str(tmp_path):
    lazy = opened(tmp_path, xr.Dataset({"s": ("n", np.array(["a", "bc"], dtype=object))}))
    one = lazy["s"][1]
    assert isinstance(one.values, np.ndarray) and one.values.ndim == 0
    assert one.values.item() == "bc"


def test_load_async_reads_the_values(tmp_path):
    ds = grid()
    lazy = opened(tmp_path, ds)

    async def load() -> xr.Dataset:
        return await lazy.load_async()

    assert_identical(asyncio.run(load()), ds)


def test_the_backend_array_is_read_from_many_threads_at_once(tmp_path):
    ds = xr.Dataset({"v": ("n", np.arange(10_000, dtype=np.int64))})
    lazy = opened(tmp_path, ds)
    results: dict[int, np.ndarray] = {}

    def read(i: int) -> None:
        results[i] = lazy["v"][i * 1000 : (i + 1) * 1000].values

    threads = [threading.Thread(target=read, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(np.concatenate([results[i] for i in range(10)]), ds["v"].values)


# DataTree -------------------------------------------------------------------


def test_a_datatree_of_datasets_comes_back_identical_from_open_datatree(tmp_path):
    tree = xr.DataTree.from_dict(
        {
            "/profile_1": masked_scaled().assign_attrs(platform="6901"),
            "/profile_2": xr.Dataset(
                {"flag": ("m", np.array([True, False])), "name": ((), "second")},
                coords={"m": [5, 6]},
            ),
        }
    )
    path = tmp_path / "c"
    result = atlasds.write(path, tree, decode="xarray", encoding={"t": PACKED["t"]})
    assert result.datasets == ["profile_1", "profile_2"]
    back = xr.open_datatree(path, engine="atlas")
    xr.testing.assert_identical(back, tree)
    assert back["profile_1"]["t"].encoding["dtype"] == np.dtype("int16")


def deep_tree() -> xr.DataTree:
    return xr.DataTree.from_dict(
        {
            "/a": xr.Dataset(coords={"x": [0, 1, 2]}, attrs={"level": 1}),
            "/a/b": xr.Dataset({"u": ("x", [1.5, np.nan, 3.0])}, attrs={"level": 2}),
            "/a/b/c": masked_scaled().assign_attrs(level=3),
            "/d/e/f": xr.Dataset({"name": ((), "leaf")}),
            "/g": xr.Dataset(),
        }
    )


def test_a_datatree_three_levels_deep_comes_back_identical_node_by_node(tmp_path):
    tree = deep_tree()
    path = tmp_path / "c"
    result = atlasds.write(path, tree)
    sep = atlasds.TREE_SEPARATOR
    # Nodes named by their paths; /d and /d/e hold nothing and are made again on open.
    assert result.datasets == ["a", f"a{sep}b", f"a{sep}b{sep}c", "g", f"d{sep}e{sep}f"]
    back = xr.open_datatree(path, engine="atlas")
    xr.testing.assert_identical(back, tree)
    # `x` is inherited from /a, as in the tree written.
    assert "x" in back["a/b"].coords and "x" not in back["a/b"].to_dataset(inherit=False).coords
    # One node alone, as xarray opens one group of a NetCDF file: without what it inherits.
    assert_identical(
        xr.open_dataset(path, engine="atlas", group="a/b/c").load(), tree["a/b/c"].to_dataset(inherit=False)
    )


def test_a_tree_node_name_holding_the_separator_is_refused_by_name(tmp_path):
    tree = xr.DataTree.from_dict({f"/x{atlasds.TREE_SEPARATOR}y": masked_scaled()})
    with pytest.raises(atlasds.InvalidArgument, match="node name 'x.y' holds"):
        atlasds.write(tmp_path / "c", tree)
    assert not (tmp_path / "c").exists()


def test_a_datatree_whose_root_holds_variables_is_refused(tmp_path):
    tree = xr.DataTree.from_dict({"/": xr.Dataset({"x": 1}), "/a": masked_scaled()})
    with pytest.raises(atlasds.InvalidArgument, match="root holds variables"):
        atlasds.write(tmp_path / "c", tree, decode="xarray")
