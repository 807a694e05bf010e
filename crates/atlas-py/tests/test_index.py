"""The dataset index beside a container (`data.atlas.index`): plain Parquet that
other tools query as it is, and that `write_index` adds to any v8 collection."""

from __future__ import annotations

import duckdb
import pyarrow.parquet as pq

import atlasds
from conftest import fixture


def test_duckdb_over_the_index_selects_what_select_selects(demo):
    where = "LATITUDE between -40 0 and JULD >= 2020-01-01 and JULD < 2021-01-01"
    expected = atlasds.Collection.open(demo).select(where)
    assert expected, "the window holds some profiles"
    rows = duckdb.sql(
        f"""
        SELECT dataset FROM read_parquet('{demo / "data.atlas.index"}')
        WHERE LATITUDE BETWEEN -40 AND 0
          AND JULD::TIMESTAMPTZ >= TIMESTAMPTZ '2020-01-01 00:00:00+00'
          AND JULD::TIMESTAMPTZ < TIMESTAMPTZ '2021-01-01 00:00:00+00'
        ORDER BY ordinal
        """
    ).fetchall()
    assert [name for (name,) in rows] == expected


def test_the_index_has_a_row_per_dataset_with_statistics_and_attributes(demo):
    table = pq.read_table(demo / "data.atlas.index")
    catalogue = atlasds.Collection.open(demo).catalogue(format="arrow")
    assert table.num_rows == catalogue.num_rows
    assert table.column("dataset").to_pylist() == catalogue.column("name").to_pylist()
    assert table.column("TEMP.max").to_pylist() == catalogue.column("TEMP.max").to_pylist()
    assert table.column("PSAL.nulls").to_pylist() == catalogue.column("PSAL.nulls").to_pylist()
    for key in ("PLATFORM_NUMBER", "DATA_CENTRE"):
        if key in catalogue.column_names:
            assert table.column(key).to_pylist() == catalogue.column(key).to_pylist()


def test_write_index_adds_an_index_to_a_collection_written_without_one(copy_of):
    path = copy_of(fixture("small"))
    assert not (path / "data.atlas.index").exists()
    before = atlasds.Collection.open(path).catalogue(format="arrow")
    containers, size = atlasds.Collection.open(path).write_index()
    assert containers == 1
    assert (path / "data.atlas.index").stat().st_size == size
    assert atlasds.Collection.open(path).catalogue(format="arrow").equals(before)
