"""The catalogue: one row per live dataset with attributes and per-array statistics,
the very table `atlas catalogue` prints, handed over as Arrow."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import atlasds
from conftest import atlas_json, fixture, manifest


def test_the_catalogue_has_a_row_per_live_dataset_with_every_attribute():
    df = atlasds.Collection.open(fixture("small")).catalogue()
    assert isinstance(df, pd.DataFrame)
    assert df["name"].tolist() == ["jan_2024", "feb_2024", "mar_2024"]
    assert df["ordinal"].tolist() == [0, 1, 2]
    assert df["platform"].tolist() == [6901, 6902, 6903]
    assert df["source"].tolist() == ["buoy"] * 3
    first = manifest("small")["datasets"][0]
    for key, _ in first["attributes"]:
        assert key in df.columns


def test_the_catalogue_carries_count_nulls_min_max_per_array():
    df = atlasds.Collection.open(fixture("small")).catalogue()
    assert df["temperature.count"].tolist() == [32, 32, 32]
    assert df["temperature.nulls"].tolist() == [0, 16, 32]
    assert df["temperature.min"].iloc[0] == 0.0
    assert pd.isna(df["temperature.min"].iloc[2]), "an all-fill array has no minimum"
    assert df["time.max"].iloc[0] == pd.Timestamp(1704067200000000001, unit="ns", tz="UTC")


def test_deleted_datasets_have_no_row():
    df = atlasds.Collection.open(fixture("deleted")).catalogue()
    assert len(df) == 7
    assert not {"d02", "d05", "d09"} & set(df["name"])


def test_datasets_without_an_attribute_or_array_have_empty_cells(kinds):
    df = atlasds.Collection.open(kinds).catalogue().set_index("name")
    assert pd.isna(df.loc["every_dtype", "cycle"])
    assert df.loc["station_2", "cycle"] == 2
    assert pd.isna(df.loc["station_0", "grid.count"])
    assert df.loc["station_2", "TEMP.count"] == 5
    assert df.loc["station_2", "TEMP.nulls"] == 1


def test_the_catalogue_can_be_an_arrow_table():
    table = atlasds.Collection.open(fixture("deleted")).catalogue(format="arrow")
    assert isinstance(table, pa.Table)
    assert table.num_rows == 7
    assert "name" in table.column_names


def _as_cli_json(value, arrow_type):
    """A cell of the Arrow table as `atlas --json catalogue` writes it."""
    if value is None:
        return None
    if pa.types.is_list(arrow_type):
        return [_as_cli_json(v, arrow_type.value_type) for v in value]
    if pa.types.is_timestamp(arrow_type):
        return int(pd.Timestamp(value).value)
    if pa.types.is_binary(arrow_type):
        return list(value)
    if pa.types.is_floating(arrow_type):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        # The CLI writes f32 values in their shortest decimal form.
        return float(str(np.float32(value))) if pa.types.is_float32(arrow_type) else value
    return value


def _cli_cell(value, arrow_type):
    if value is not None and pa.types.is_timestamp(arrow_type):
        return int(np.datetime64(value.removesuffix("Z"), "ns").astype(np.int64))
    if isinstance(value, list) and pa.types.is_list(arrow_type):
        return [_cli_cell(v, arrow_type.value_type) for v in value]
    return value


@pytest.mark.parametrize("name", ["small", "deleted", "kinds", "demo"])
def test_the_catalogue_is_the_table_atlas_catalogue_prints(name, request):
    path = fixture(name) if name in ("small", "deleted") else request.getfixturevalue(name)
    table = atlasds.Collection.open(path).catalogue(format="arrow")
    rows = atlas_json("catalogue", str(path))
    assert table.num_rows == len(rows) > 0
    assert table.column_names == list(rows[0]), "same columns, same order"
    assert table.column_names[:3] == ["name", "ordinal", "schema"]
    for column, field in zip(table.columns, table.schema):
        got = [_as_cli_json(v, field.type) for v in column.to_pylist()]
        want = [_cli_cell(row[field.name], field.type) for row in rows]
        assert got == want, field.name


def test_the_schema_column_tells_the_two_schemas_of_a_collection_apart(kinds):
    table = atlasds.Collection.open(kinds).catalogue(format="arrow")
    assert table.schema.field("schema").type == pa.uint32()
    by_name = dict(zip(table["name"].to_pylist(), table["schema"].to_pylist()))
    assert len(set(by_name.values())) >= 2
    assert by_name["station_0"] == by_name["station_2"] != by_name["every_dtype"]


def test_catalogue_columns_are_typed_as_declared(kinds):
    table = atlasds.Collection.open(kinds).catalogue(format="arrow")
    types = dict(zip(table.column_names, table.schema.types))
    assert types["ordinal"] == pa.uint32()
    assert types["TEMP.count"] == pa.uint64()
    assert pa.types.is_timestamp(types["time.min"]) and types["time.min"].tz == "UTC"


def test_attributes_arrays_and_where_narrow_the_table_as_the_cli_options_do():
    c = atlasds.Collection.open(fixture("small"))
    table = c.catalogue(format="arrow", attributes=["platform"], arrays=["temperature"], where="platform > 6901")
    assert table.column_names == [
        "name", "ordinal", "schema", "platform",
        "temperature.count", "temperature.nulls", "temperature.min", "temperature.max",
    ]  # fmt: skip
    rows = atlas_json(
        "catalogue", str(fixture("small")), "--attrs", "platform", "--arrays", "temperature",
        "--where", "platform > 6901",
    )  # fmt: skip
    assert table["name"].to_pylist() == [r["name"] for r in rows] == ["feb_2024", "mar_2024"]


def test_a_bad_where_or_an_unknown_column_is_an_invalid_argument():
    c = atlasds.Collection.open(fixture("small"))
    with pytest.raises(atlasds.InvalidArgument, match="salinity"):
        c.catalogue(arrays=["salinity"])
    with pytest.raises(atlasds.InvalidArgument):
        c.catalogue(where="platform >")
    with pytest.raises(atlasds.InvalidArgument, match="list"):
        c.catalogue(attributes="platform")


def test_the_native_catalogue_is_an_arrow_c_stream_any_consumer_can_read():
    stream = atlasds.Collection.open(fixture("deleted"))._native.catalogue()
    capsule = stream.__arrow_c_stream__()
    assert type(capsule).__name__ == "PyCapsule"
    del capsule  # never imported: releasing it must not leak or crash
    first = pa.RecordBatchReader.from_stream(stream).read_all()
    again = pa.table(stream)
    assert first.equals(again) and first.num_rows == len(stream) == 7


def test_the_pandas_form_keeps_missing_integers_as_na(kinds):
    df = atlasds.Collection.open(kinds).catalogue().set_index("name")
    assert str(df["TEMP.count"].dtype) == "UInt64"
    assert df.loc["station_0", "grid.count"] is pd.NA
