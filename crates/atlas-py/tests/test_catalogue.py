"""The catalogue: one row per live dataset with attributes and per-array statistics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

import atlasds
from conftest import fixture, manifest


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
    assert df["time.max"].iloc[0] == pd.Timestamp(np.datetime64(1704067200000000001, "ns"))


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
