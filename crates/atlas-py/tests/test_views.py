"""Many datasets as one Dataset: the ragged (CF contiguous ragged array) and
padded layouts, checked against one-dataset reads through the engine."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

import atlasds
from atlasds import _native
from conftest import DEMO_PROFILES, atlas_json, fixture

FIXTURES = ["small", "mixed", "deleted"]


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal element for element, NaN equal to NaN and NaT to NaT."""
    got, want = np.asarray(got).ravel(), np.asarray(want).ravel()
    if got.shape != want.shape:
        return False
    for a, b in zip(got.tolist(), want.tolist()):
        a_missing = a is None or (isinstance(a, float) and math.isnan(a))
        b_missing = b is None or (isinstance(b, float) and math.isnan(b))
        if a_missing or b_missing:
            if not (a_missing and b_missing):
                return False
        elif a != b:
            return False
    return True


def _missing(values: np.ndarray) -> bool:
    values = np.asarray(values).ravel()
    if values.dtype.kind == "M":
        return bool(np.isnat(values).all())
    return all(v is None or (isinstance(v, float) and math.isnan(v)) for v in values.tolist())


def _per_dataset(path, name: str, array: str) -> np.ndarray:
    with xr.open_dataset(path, engine="atlas", group=name) as one:
        return one[array].values


def _collections(kinds, demo):
    return {**{f: fixture(f) for f in FIXTURES}, "kinds": kinds, "demo": demo}


def _readable(collection: atlasds.Collection) -> list[str]:
    """Arrays of one dtype in every dataset (one of two dtypes is refused, tested below)."""
    out = []
    for array in collection.arrays:
        dtypes = {collection[n].layout(array).atlas_dtype for n in collection if array in collection[n].arrays}
        if len(dtypes) == 1:
            out.append(array)
    return out


def test_a_variable_of_two_dtypes_is_refused():
    collection = atlasds.Collection.open(fixture("mixed"))
    dtypes = {collection[n].layout("value").atlas_dtype for n in collection}
    assert len(dtypes) >= 2, "the fixture holds 'value' as several dtypes"
    with pytest.raises(atlasds.InvalidArgument, match="cannot hold both"):
        atlasds.open_dataset(collection, ["value"])


@pytest.mark.parametrize("which", [*FIXTURES, "kinds", "demo"])
def test_ragged_values_equal_per_dataset_reads_for_every_fixture(which, kinds, demo):
    path = _collections(kinds, demo)[which]
    collection = atlasds.Collection.open(path)
    names = list(collection)
    for array in _readable(collection):
        ds = atlasds.open_dataset(path, [array], layout="ragged", datasets_per_chunk=2)
        assert ds["dataset"].values.tolist() == names
        values = ds[array].values
        if ds[array].dims == ("profile",):
            for i, name in enumerate(names):
                if array in collection[name].arrays:
                    assert _same(values[i : i + 1], _per_dataset(path, name, array)), (array, name)
                else:
                    assert _missing(values[i : i + 1]), (array, name)
            continue
        assert ds[array].dims == ("obs",)
        rows = ds["row_size"].values
        assert int(rows.sum()) == ds.sizes["obs"]
        starts = np.concatenate(([0], np.cumsum(rows)[:-1]))
        for i, name in enumerate(names):
            part = values[starts[i] : starts[i] + rows[i]]
            if array in collection[name].arrays:
                assert _same(part, _per_dataset(path, name, array)), (array, name)
            else:
                assert rows[i] == 0 and part.size == 0, (array, name)


@pytest.mark.parametrize("which", [*FIXTURES, "kinds", "demo"])
def test_padded_values_equal_per_dataset_reads_padded_with_missing(which, kinds, demo):
    path = _collections(kinds, demo)[which]
    collection = atlasds.Collection.open(path)
    names = list(collection)
    for array in _readable(collection):
        ds = atlasds.open_dataset(path, [array], layout="padded", datasets_per_chunk=3)
        values = ds[array].values
        assert values.shape[0] == len(names)
        for i, name in enumerate(names):
            row = values[i]
            if array not in collection[name].arrays:
                assert _missing(row), (array, name)
                continue
            want = _per_dataset(path, name, array)
            if ds[array].dims == ("profile",):
                assert _same(row, want), (array, name)
                continue
            inside = tuple(slice(0, n) for n in want.shape)
            assert _same(row[inside], want), (array, name)
            outside = np.ones(row.shape, dtype=bool)
            outside[inside] = False
            assert _missing(row[outside]), (array, name)


def test_row_size_sums_to_the_obs_length_and_profiles_hold_their_scalars(demo):
    ds = atlasds.open_dataset(demo, ["TEMP", "PSAL", "PRES", "JULD", "LATITUDE", "LONGITUDE"])
    assert ds.sizes["profile"] == DEMO_PROFILES
    assert int(ds["row_size"].sum()) == ds.sizes["obs"]
    for array in ("TEMP", "PSAL", "PRES"):
        assert ds[array].dims == ("obs",)
    for array in ("JULD", "LATITUDE", "LONGITUDE"):
        assert ds[array].dims == ("profile",)
    assert ds["JULD"].dtype == np.dtype("datetime64[ns]")


def test_the_cf_attributes_are_those_of_a_contiguous_ragged_array(demo):
    ds = atlasds.open_dataset(demo, ["TEMP", "PRES", "JULD", "LATITUDE", "LONGITUDE"])
    assert ds.attrs["featureType"] == "profile"
    # Exactly one variable has sample_dimension, it is the count variable of
    # the instance dimension, and it names the sample dimension.
    counts = [k for k, v in ds.variables.items() if "sample_dimension" in v.attrs]
    assert counts == ["row_size"]
    assert ds["row_size"].attrs["sample_dimension"] == "obs"
    assert ds["row_size"].dims == ("profile",)
    assert np.issubdtype(ds["row_size"].dtype, np.integer)
    ids = [k for k, v in ds.variables.items() if v.attrs.get("cf_role") == "profile_id"]
    assert ids == ["dataset"] and ds["dataset"].dims == ("profile",)
    # The instance variables are coordinates the obs variables name (CF's `coordinates`).
    assert {"JULD", "LATITUDE", "LONGITUDE"} <= set(ds.coords)
    named = ds["TEMP"].encoding["coordinates"].split()
    assert {"JULD", "LATITUDE", "LONGITUDE"} <= set(named)
    # What a CF reader does with it: row_size partitions obs into the profiles.
    written = ds.isel(profile=slice(0, 3)).load()
    assert written["row_size"].values.tolist() == [
        atlasds.Collection.open(demo)[n].layout("TEMP").shape[0]
        for n in written["dataset"].values
    ]


def test_where_selects_exactly_what_collection_select_gives(demo):
    collection = atlasds.Collection.open(demo)
    where = "LATITUDE.max > 0 and TEMP.count >= 60"
    expected = collection.select(where)
    assert 0 < len(expected) < len(collection)
    ds = atlasds.open_dataset(demo, ["TEMP", "LATITUDE"], where=where)
    assert ds["dataset"].values.tolist() == expected
    assert (ds["LATITUDE"].values > 0).all()


def test_dask_chunks_cover_many_datasets_each(demo):
    per_chunk = 64
    ds = atlasds.open_dataset(demo, ["TEMP", "JULD"], datasets_per_chunk=per_chunk)
    limit = math.ceil(DEMO_PROFILES / per_chunk)
    assert len(ds["TEMP"].data.chunks[0]) <= limit
    assert len(ds["JULD"].data.chunks[0]) <= limit
    padded = atlasds.open_dataset(demo, ["TEMP"], layout="padded", datasets_per_chunk=per_chunk)
    assert len(padded["TEMP"].data.chunks[0]) <= limit


def test_read_concat_joins_every_dataset_in_the_order_given(demo):
    collection = atlasds.Collection.open(demo)
    names = list(collection)[::-7]
    values, counts, shapes, fill = _native.read_concat(collection._native, "TEMP", names)
    assert counts.dtype == np.int64 and len(counts) == len(names)
    assert fill == pytest.approx(99999.0)
    offset = 0
    for name, n, shape in zip(names, counts, shapes):
        want = collection[name].read("TEMP")
        assert tuple(shape) == want.shape and n == want.size
        np.testing.assert_array_equal(values[offset : offset + n], want)
        offset += n
    assert offset == values.size


def test_the_engine_opens_many_datasets_with_layout(demo):
    ds = xr.open_dataset(demo, engine="atlas", layout="ragged", variables=["TEMP", "LATITUDE"])
    same = atlasds.open_dataset(demo, ["TEMP", "LATITUDE"])
    xr.testing.assert_identical(ds.load(), same.load())
    padded = xr.open_dataset(demo, engine="atlas", layout="padded", variables=["TEMP"], where="LATITUDE.max > 0")
    assert padded["TEMP"].dims == ("profile", "N_LEVELS")


def test_ragged_refuses_variables_of_different_lengths(kinds):
    with pytest.raises(atlasds.InvalidArgument, match="different lengths"):
        atlasds.open_dataset(kinds, ["i8", "label"], where='title = "every dtype"')


def test_dataset_attributes_become_profile_variables(kinds):
    ds = atlasds.open_dataset(kinds, ["TEMP"], attrs=["cycle", "title"])
    names = ds["dataset"].values.tolist()
    cycle = ds["cycle"].values
    assert np.isnan(cycle[names.index("every_dtype")])
    assert cycle[names.index("station_2")] == 2
    assert ds["title"].values[names.index("station_1")] == "station 1"


def test_an_unknown_layout_is_refused(demo):
    with pytest.raises(atlasds.InvalidArgument, match="layout"):
        atlasds.open_dataset(demo, ["TEMP"], layout="wide")


@pytest.mark.parametrize(
    "where",
    ["LATITUDE.max > 0 and TEMP.count >= 60", "PRES.max > 1500 or LATITUDE.min < -30"],
)
def test_where_selects_exactly_what_atlas_ls_where_lists(demo, where):
    listed = [row["name"] for row in atlas_json("ls", str(demo), "--where", where)]
    assert 0 < len(listed) < DEMO_PROFILES
    collection = atlasds.Collection.open(demo)
    assert collection.select(where) == listed
    ds = atlasds.open_dataset(demo, ["TEMP", "LATITUDE"], where=where)
    assert ds["dataset"].values.tolist() == listed
    table = collection.to_arrow(["TEMP"], where=where)
    assert list(dict.fromkeys(table.column("dataset").to_pylist())) == listed
