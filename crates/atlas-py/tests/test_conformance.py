"""The v8 conformance fixtures read from Python exactly as their manifests say."""

from __future__ import annotations

import numpy as np
import pytest

import atlasds
from conftest import fixture, manifest

FIXTURES = ["small", "deleted", "mixed", "empty"]


def manifest_attr(entry: dict):
    kind, value = entry["type"], entry["value"]
    if kind == "binary":
        return bytes(value)
    if kind == "list<binary>":
        return [bytes(v) for v in value]
    return value


def same_attr(got, want) -> bool:
    if isinstance(got, np.ndarray):
        return got.tolist() == want
    if isinstance(got, float) or isinstance(want, float):
        return got == pytest.approx(want)
    return got == want


def manifest_stat(value: dict | None, dtype: str):
    if value is None:
        return None
    ((kind, v),) = value.items()
    if kind == "timestamp_ns":
        return np.datetime64(v, "ns")
    if kind == "bytes":
        return bytes(v).decode() if dtype == "string" else bytes(v)
    return v


def expected_values(array: dict) -> np.ndarray:
    values = array["values"]
    dtype = array["dtype"]
    if dtype == "timestamp_ns":
        fill = array["fill"]
        return np.array(
            ["NaT" if v == fill and fill is not None else np.datetime64(v, "ns") for v in values],
            dtype="datetime64[ns]",
        ).reshape(array["shape"])
    if dtype == "binary":
        out = np.empty(len(values), dtype=object)
        out[:] = [bytes(v) for v in values]
        return out.reshape(array["shape"])
    if dtype == "string":
        text = np.dtypes.StringDType() if atlasds.HAS_STRINGDTYPE else np.dtype(object)
        return np.array(values, dtype=text).reshape(array["shape"])
    return np.array(values, dtype=dtype).reshape(array["shape"])


@pytest.mark.parametrize("name", FIXTURES)
def test_a_collection_lists_exactly_its_live_datasets(name):
    m = manifest(name)
    c = atlasds.Collection.open(fixture(name))
    live = [d["name"] for d in m["datasets"] if not d["deleted"]]
    assert list(c) == live
    assert len(c) == len(live)
    for d in m["datasets"]:
        assert (d["name"] in c) is (not d["deleted"])
        if not d["deleted"]:
            assert c[d["name"]].ordinal == d["ordinal"]


@pytest.mark.parametrize("name", FIXTURES)
def test_every_array_reads_back_with_its_values_dtype_layout_and_stats(name):
    c = atlasds.Collection.open(fixture(name))
    for d in manifest(name)["datasets"]:
        if d["deleted"]:
            continue
        ds = c[d["name"]]
        assert ds.arrays == [a["name"] for a in d["arrays"]]
        for a in d["arrays"]:
            layout = ds.layout(a["name"])
            assert layout.atlas_dtype == a["dtype"].replace("timestamp_nanoseconds", "timestamp_ns")
            assert list(layout.shape) == a["shape"]
            assert list(layout.chunk_shape) == a["chunk_shape"]
            assert list(layout.dims) == a["dims"]
            values = ds.read(a["name"])
            want = expected_values(a)
            assert values.dtype == want.dtype, a["name"]
            assert values.shape == want.shape
            if values.dtype.kind == "f":
                np.testing.assert_array_equal(values, want)
            else:
                assert values.tolist() == want.tolist(), (d["name"], a["name"])
            stats = ds.stats(a["name"])
            if a["stats"] is None:
                assert stats is None
            else:
                assert stats.count == a["stats"]["row_count"]
                assert stats.nulls == a["stats"]["null_count"]
                assert stats.min == manifest_stat(a["stats"]["min"], a["dtype"])
                assert stats.max == manifest_stat(a["stats"]["max"], a["dtype"])


@pytest.mark.parametrize("name", FIXTURES)
def test_dataset_and_array_attributes_keep_their_order_and_values(name):
    c = atlasds.Collection.open(fixture(name))
    for d in manifest(name)["datasets"]:
        if d["deleted"]:
            continue
        ds = c[d["name"]]
        attrs = ds.attrs
        assert list(attrs) == [k for k, _ in d["attributes"]]
        for key, entry in d["attributes"]:
            assert same_attr(attrs[key], manifest_attr(entry)), key
        for a in d["arrays"]:
            got = ds.array_attrs(a["name"])
            assert list(got) == [k for k, _ in a["attributes"]]
            for key, entry in a["attributes"]:
                assert same_attr(got[key], manifest_attr(entry)), key


def test_numeric_attributes_come_back_as_their_own_numpy_type():
    attrs = atlasds.Collection.open(fixture("small"))["jan_2024"].attrs
    assert type(attrs["platform"]) is np.uint16
    assert type(attrs["month"]) is np.int64
    assert type(attrs["qc_passed"]) is bool
    assert attrs["levels"].dtype == np.int32


def test_collection_stats_fold_every_live_dataset():
    c = atlasds.Collection.open(fixture("small"))
    s = c.stats("temperature")
    assert (s.count, s.nulls, s.min, s.max) == (96, 48, 0.0, 76.75)
    by = c.stats_by_dataset("temperature")
    assert list(by) == ["jan_2024", "feb_2024", "mar_2024"]
    assert by["mar_2024"].min is None and by["mar_2024"].nulls == 32


def test_attributes_by_dataset_give_one_value_per_live_dataset():
    c = atlasds.Collection.open(fixture("small"))
    assert c.attrs_by_dataset("platform") == {"jan_2024": 6901, "feb_2024": 6902, "mar_2024": 6903}
    assert c.attrs_by_dataset("units", array="temperature") == dict.fromkeys(c, "celsius")


def test_one_array_name_with_three_dtypes_reads_each_as_its_own():
    c = atlasds.Collection.open(fixture("mixed"))
    text = np.dtypes.StringDType() if atlasds.HAS_STRINGDTYPE else np.dtype(object)
    assert [c[n].read("value").dtype for n in c] == [np.float32, np.int64, text]
    assert c.stats_by_dataset("value")["b"].max == 9_000_000_000
    assert c.stats_by_dataset("value")["c"].min == "x"


def test_an_empty_collection_has_no_dataset_and_an_empty_catalogue():
    c = atlasds.Collection.open(fixture("empty"))
    assert len(c) == 0 and list(c) == []
    assert len(c.catalogue()) == 0
