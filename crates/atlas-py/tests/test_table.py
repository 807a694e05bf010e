"""`Collection.to_arrow` / `to_pandas`: the values of many datasets as one long
Arrow table (a row per element), the table `atlas export` writes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import xarray as xr

import atlasds
from atlasds import InvalidArgument

VARS = ["TEMP", "PSAL", "PRES"]


def _rows(table: pa.Table, name: str) -> pa.Table:
    return table.filter(pa.compute.equal(table["dataset"].cast(pa.string()), name))


def _column(rows: pa.Table, var: str) -> np.ndarray:
    return rows[var].to_numpy(zero_copy_only=False)


def test_to_arrow_values_equal_per_dataset_reads(demo):
    c = atlasds.Collection.open(demo)
    table = c.to_arrow(VARS, attrs=["platform_number"])
    assert table.column_names == ["dataset", "N_LEVELS", *VARS, "platform_number"]
    assert pa.types.is_dictionary(table.schema.field("dataset").type)
    assert table.schema.field("TEMP").type == pa.float32()
    names = [str(n) for n in table["dataset"].unique().cast(pa.string()).to_pylist()]
    assert names == c.names()
    for name in c.names():
        rows = _rows(table, name)
        ds = c[name]
        for var in VARS:
            np.testing.assert_array_equal(_column(rows, var), ds.read(var))
        assert _column(rows, "N_LEVELS").tolist() == list(range(len(ds.read("TEMP"))))
        assert set(rows["platform_number"].to_pylist()) == {ds.attrs["platform_number"]}
    temp = table["TEMP"].to_numpy(zero_copy_only=False)
    assert (temp == np.float32(99999.0)).any(), "fill values stay as stored"


def test_every_readable_kind_of_array_equals_its_reads(kinds):
    c = atlasds.Collection.open(kinds)
    checked = 0
    for var in c.arrays:
        try:
            table = c.to_arrow([var])
        except InvalidArgument as e:
            assert "does not take" in str(e) or "share" in str(e), e
            continue
        for name in c.names():
            ds = c[name]
            if var not in ds.arrays:
                assert len(_rows(table, name)) == 0
                continue
            want = np.ravel(ds.read(var, strings="object"))
            got = _rows(table, name)[var]
            if pa.types.is_timestamp(got.type):
                nat_ns = np.iinfo(np.int64).min
                want = want.astype("datetime64[ns]").astype(np.int64)
                assert got.null_count == (want == nat_ns).sum(), "NaT is null"
                got = got.cast(pa.int64()).fill_null(nat_ns).to_numpy(zero_copy_only=False)
                np.testing.assert_array_equal(got, want)
            elif pa.types.is_string(got.type) or pa.types.is_binary(got.type):
                assert got.to_pylist() == list(want)
            else:
                np.testing.assert_array_equal(got.to_numpy(zero_copy_only=False), want)
            checked += 1
    assert checked >= 5, checked


def test_a_duckdb_group_by_over_to_arrow_equals_numpy(demo):
    duckdb = pytest.importorskip("duckdb", reason="scripts/requirements-test.txt installs duckdb")
    c = atlasds.Collection.open(demo)
    t = c.to_arrow(VARS)
    got = duckdb.sql(
        "SELECT CAST(dataset AS VARCHAR) AS dataset, avg(TEMP) AS mean, count(*) AS n "
        "FROM t GROUP BY ALL ORDER BY dataset"
    ).fetchall()
    assert len(got) == len(c)
    for name, mean, n in got:
        temp = c[name].read("TEMP").astype(np.float64)
        assert n == len(temp)
        want = temp.mean()  # DuckDB's avg, like numpy's mean, lets a NaN through
        if np.isnan(want):
            assert mean is None or np.isnan(mean)
        else:
            assert mean == pytest.approx(want, rel=1e-12)


def test_where_gives_exactly_the_datasets_select_gives(demo):
    c = atlasds.Collection.open(demo)
    where = "LATITUDE > 0 and PRES.max > 1000"
    selected = c.select(where)
    assert 0 < len(selected) < len(c)
    t = c.to_arrow(["TEMP"], where=where)
    names = t["dataset"].unique().cast(pa.string()).to_pylist()
    assert names == selected


def test_to_pandas_is_the_arrow_table_as_a_dataframe(demo):
    c = atlasds.Collection.open(demo)
    df = c.to_pandas(["TEMP", "PSAL"], where="LATITUDE > 30", attrs=["cycle_number"])
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["dataset", "N_LEVELS", "TEMP", "PSAL", "cycle_number"]
    assert isinstance(df["dataset"].dtype, pd.CategoricalDtype)
    first = c.select("LATITUDE > 30")[0]
    part = df[df["dataset"] == first]
    np.testing.assert_array_equal(part["TEMP"].to_numpy(), c[first].read("TEMP"))


def test_batches_stream_with_at_most_rows_per_batch(demo):
    c = atlasds.Collection.open(demo)
    reader = c.to_arrow_batches(["TEMP"], rows_per_batch=1000)
    sizes = [b.num_rows for b in reader]
    assert all(n == 1000 for n in sizes[:-1]) and 0 < sizes[-1] <= 1000
    assert sum(sizes) == c.stats("TEMP").count


def test_a_set_reads_the_live_copy_of_each_dataset(tmp_path):
    path = tmp_path / "set"

    def profile(temp, cycle):
        return xr.Dataset(
            {"TEMP": ("N_LEVELS", np.array(temp, dtype=np.float32))}, attrs={"cycle": cycle}
        )

    atlasds.write(path, {"a": profile([1.0, 2.0], 1), "b": profile([3.0], 1)}, append=True)
    atlasds.write(path, {"b": profile([30.0, np.nan], 2), "c": profile([5.0], 2)}, append=True)
    c = atlasds.Collection.open(path)
    t = c.to_arrow("TEMP", attrs=["cycle"])
    assert t["dataset"].cast(pa.string()).to_pylist() == ["a", "a", "b", "b", "c"]
    assert t["cycle"].to_pylist() == [1, 1, 2, 2, 2]
    np.testing.assert_array_equal(
        t["TEMP"].to_numpy(zero_copy_only=False), np.array([1, 2, 30, np.nan, 5], np.float32)
    )
    assert c.to_arrow("TEMP", where="cycle = 2")["dataset"].cast(pa.string()).unique().to_pylist() == [
        "b",
        "c",
    ]


def test_mismatched_dimensions_and_bad_arguments_are_invalid_arguments(tmp_path, demo):
    path = tmp_path / "c"
    ds = xr.Dataset(
        {
            "A": ("x", np.zeros(2, np.float32)),
            "B": ("y", np.zeros(3, np.float32)),
        }
    )
    atlasds.write(path, {"one": ds})
    c = atlasds.Collection.open(path)
    with pytest.raises(InvalidArgument, match="one"):
        c.to_arrow(["A", "B"])
    d = atlasds.Collection.open(demo)
    with pytest.raises(InvalidArgument, match="NOPE"):
        d.to_arrow(["NOPE"])
    with pytest.raises(InvalidArgument, match="\\^"):
        d.to_arrow(["TEMP"], where="TEMP >")
    with pytest.raises(InvalidArgument):
        d.to_arrow([])
