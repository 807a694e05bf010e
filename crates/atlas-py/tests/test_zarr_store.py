"""`atlasds.ZarrStore`: a collection as a read-only Zarr v3 store, read with
zarr-python (pinned in scripts/requirements-test.txt)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import xarray as xr

import atlasds
from atlasds._zarr import _array_document

zarr = pytest.importorskip("zarr")
from zarr.abc.store import RangeByteRequest, SuffixByteRequest  # noqa: E402
from zarr.core.buffer import default_buffer_prototype  # noqa: E402

RAW = dict(mask_and_scale=False, decode_times=False, concat_characters=False, decode_coords=False)


def _same(zarr_values: np.ndarray, engine_values: np.ndarray) -> None:
    assert zarr_values.shape == engine_values.shape
    if engine_values.dtype.kind in "fc":
        np.testing.assert_array_equal(zarr_values, engine_values)  # NaN where NaN
    else:
        assert zarr_values.tolist() == engine_values.tolist()


@pytest.mark.parametrize("fixture_name", ["kinds", "demo"])
def test_a_zarr_reader_gets_every_variable_of_every_dataset_as_the_engine_does(fixture_name, request):
    path = request.getfixturevalue(fixture_name)
    collection = atlasds.Collection.open(path)
    root = zarr.open_group(atlasds.ZarrStore(path), mode="r")
    assert sorted(root.group_keys()) == sorted(collection)
    for name in collection:
        group = root[name]
        dataset = collection[name]
        assert dict(group.attrs) == pytest.approx(_plain(dataset.attrs))
        assert sorted(group.array_keys()) == sorted(dataset.arrays)
        engine = xr.open_dataset(path, engine="atlas", group=name, **RAW)
        for array in dataset.arrays:
            z = group[array]
            layout = dataset.layout(array)
            assert z.shape == layout.shape
            assert z.metadata.dimension_names == layout.dims
            if layout.dtype.kind in "iufb":
                assert z.dtype == layout.dtype
                if layout.fill is not None:
                    assert z.fill_value == layout.fill or (np.isnan(z.fill_value) and np.isnan(layout.fill))
            for key, value in dataset.array_attrs(array).items():
                assert z.attrs[key] == pytest.approx(_plain(value)), (name, array, key)
            values = z[...]
            _same(values, dataset.read(array, strings="object"))
            stored = engine.variables[array].values
            if stored.dtype.kind not in "SO":
                _same(values, stored)


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def test_a_sub_region_reads_only_the_atlas_chunks_it_covers(kinds, monkeypatch):
    store = atlasds.ZarrStore(kinds)
    grid = zarr.open_group(store, mode="r")["every_dtype/grid"]
    assert grid.chunks == (4, 4)  # the stored chunk shape
    read = []
    original = store._read_chunk
    monkeypatch.setattr(store, "_read_chunk", lambda array, coords: read.append(coords) or original(array, coords))
    expected = atlasds.Collection.open(kinds)["every_dtype"].read("grid")
    np.testing.assert_array_equal(grid[1:5, 3:9], expected[1:5, 3:9])
    # Rows 1..4 span chunk rows 0 and 1, columns 3..8 chunk columns 0, 1 and 2.
    assert sorted(read) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    # The unwritten last row reads as the array's fill value, as from Atlas.
    assert grid[5, :].tolist() == [-1.0] * 10


def test_text_bytes_and_timestamps_come_back_as_zarr_pythons_own_types(kinds):
    group = zarr.open_group(atlasds.ZarrStore(kinds), mode="r")["every_dtype"]
    assert group["label"][:].tolist() == ["a", "é ü", ""]
    assert group["blob"][:].tolist() == [b"\x00\xff", b"", b"\x07"]
    time = group["time"][:]
    assert time.dtype == np.dtype("datetime64[ns]")
    assert time[0] == np.datetime64("2024-01-01T00:00:00", "ns")
    assert np.isnat(time[-1])  # unwritten: NaT, as Dataset.read gives


def test_xarray_opens_a_dataset_through_the_zarr_view_with_the_engines_values(kinds):
    back = xr.open_zarr(atlasds.ZarrStore(kinds), group="station_1", consolidated=False, zarr_format=3)
    engine = xr.open_dataset(kinds, engine="atlas", group="station_1")
    np.testing.assert_array_equal(back["lat"].values, engine["lat"].values)
    assert back["TEMP"].attrs["units"] == "degree_Celsius"
    assert back["TEMP"].dims == ("point",)


def test_a_byte_range_of_a_key_is_that_part_of_its_bytes(kinds):
    store = atlasds.ZarrStore(kinds)
    proto = default_buffer_prototype()

    async def get(range_=None):
        value = await store.get("every_dtype/grid/c/0/0", proto, range_)
        return value.to_bytes()

    whole = asyncio.run(get())
    assert len(whole) == 4 * 4 * 8
    assert asyncio.run(get(RangeByteRequest(8, 24))) == whole[8:24]
    assert asyncio.run(get(SuffixByteRequest(8))) == whole[-8:]
    assert asyncio.run(store.get("every_dtype/grid/c/9/9", proto)) is None  # outside the grid
    assert asyncio.run(store.get("no/such/key", proto)) is None
    assert asyncio.run(store.exists("every_dtype/grid/c/1/2"))
    assert not asyncio.run(store.exists("every_dtype/grid/c/2/0"))


def test_listing_names_every_node_and_chunk(kinds):
    store = atlasds.ZarrStore(kinds)

    async def collect(iterator):
        return [k async for k in iterator]

    top = asyncio.run(collect(store.list_dir("")))
    assert set(top) == {"zarr.json", *atlasds.Collection.open(kinds)}
    inside = asyncio.run(collect(store.list_dir("every_dtype/grid")))
    assert sorted(inside) == ["c", "zarr.json"]
    chunks = asyncio.run(collect(store.list_prefix("every_dtype/grid/c/")))
    assert len(chunks) == 2 * 3  # a 6 x 10 array in 4 x 4 chunks
    assert set(chunks) <= set(asyncio.run(collect(store.list())))


def test_the_view_refuses_writes(kinds):
    store = atlasds.ZarrStore(kinds)
    assert not store.supports_writes and store.read_only
    array = zarr.open_group(store, mode="r")["every_dtype/grid"]
    with pytest.raises(ValueError):
        array[0, 0] = 1.0
    with pytest.raises(atlasds.InvalidArgument):
        store.with_read_only(False)


LIST_LAYOUT = {"dtype": "list<float32>", "shape": [3], "chunk_shape": [3], "dims": ["n"], "fill": None}


def test_a_list_typed_array_has_no_zarr_form_and_is_refused_by_name():
    with pytest.raises(atlasds.InvalidArgument, match=r"'ragged' of dataset 'p'.*list<float32>"):
        _array_document("p", "ragged", LIST_LAYOUT, {})


class _WithAListArray:
    """The extension handle of a collection whose first dataset also holds a list-typed array."""

    def __init__(self, native):
        self._native = native

    def __getattr__(self, name):
        return getattr(self._native, name)

    def describe_many(self, names):
        described = self._native.describe_many(names)
        attrs, arrays = described[0]
        return [(attrs, [*arrays, ("ragged", LIST_LAYOUT, [])]), *described[1:]]


def test_a_collection_with_a_list_array_is_refused_unless_such_arrays_are_left_out(kinds):
    collection = atlasds.Collection.open(kinds)
    collection._native = _WithAListArray(collection._native)
    with pytest.raises(atlasds.InvalidArgument, match="skip_unsupported=True"):
        atlasds.ZarrStore(collection)
    store = atlasds.ZarrStore(collection, skip_unsupported=True)
    first = collection.names()[0]
    assert store.skipped == [(first, "ragged", "list<float32>")]
    assert "ragged" not in zarr.open_group(store, mode="r")[first]


def test_the_store_pickles_by_location(kinds):
    import pickle

    store = pickle.loads(pickle.dumps(atlasds.ZarrStore(kinds)))
    assert store == atlasds.ZarrStore(kinds)
    assert zarr.open_group(store, mode="r")["station_0/lat"][0] == -10.0


def test_datasets_named_by_tree_paths_are_nested_groups(tmp_path):
    tree = xr.DataTree.from_dict(
        {
            "/a": xr.Dataset({"x": ("n", [1, 2])}, attrs={"level": 1}),
            "/a/b/c": xr.Dataset({"t": ("m", [0.5, 1.5, 2.5])}, attrs={"level": 3}),
        }
    )
    atlasds.write(tmp_path / "c", tree)
    root = zarr.open_group(atlasds.ZarrStore(tmp_path / "c"), mode="r")
    assert sorted(root.group_keys()) == ["a"]
    assert root["a"].attrs["level"] == 1 and root["a/x"][:].tolist() == [1, 2]
    assert dict(root["a/b"].attrs) == {}  # between two datasets: an empty group
    assert root["a/b/c"].attrs["level"] == 3
    assert root["a/b/c/t"][:].tolist() == [0.5, 1.5, 2.5]


def test_a_dataset_group_where_an_array_is_is_refused_by_name(tmp_path):
    sep = atlasds.TREE_SEPARATOR
    atlasds.write(tmp_path / "c", {"a": xr.Dataset({"b": ("n", [1])}), f"a{sep}b": xr.Dataset({"v": ("n", [2])})})
    with pytest.raises(atlasds.InvalidArgument, match="'a/b' is both an array and a dataset's group"):
        atlasds.ZarrStore(tmp_path / "c")
