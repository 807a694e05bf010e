"""Pickling, the per-process handle cache, and computing on dask.distributed."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import xarray as xr

import atlasds
from atlasds import _native
from conftest import DEMO_PROFILES, fixture


def test_collections_and_datasets_pickle_by_location():
    c = atlasds.Collection.open(fixture("small"))
    again = pickle.loads(pickle.dumps(c))
    assert again.location == c.location and list(again) == list(c)
    ds = pickle.loads(pickle.dumps(c["feb_2024"]))
    assert ds.name == "feb_2024"
    np.testing.assert_array_equal(ds.read("temperature"), c["feb_2024"].read("temperature"))


def test_unpickling_reuses_the_processes_open_collection():
    blob = pickle.dumps(atlasds.Collection.open(fixture("deleted"))["d00"])
    _native.clear_cache()
    before = _native.open_count()
    for _ in range(5):
        pickle.loads(blob).read("v")
    assert _native.open_count() == before + 1


def test_open_mfdataarray_stacks_one_variable_padded_with_nan(kinds):
    arr = atlasds.open_mfdataarray(kinds, "TEMP")
    assert arr.dims == ("dataset", "point")
    assert arr["dataset"].values.tolist() == [f"station_{i}" for i in range(4)]
    values = arr.values
    assert values.shape == (4, 6)
    assert values[0, :2].tolist() == [10.0, 11.0]
    assert np.isnan(values[0, 2:]).all(), "the unwritten point and the padding are NaN"


def _expected_means(path) -> np.ndarray:
    c = atlasds.Collection.open(path)
    means = []
    for name in c:
        v = c[name].read("TEMP").astype(np.float64)
        v[v == c[name].layout("TEMP").fill] = np.nan
        means.append(np.nanmean(v))
    return np.array(means)


def test_per_dataset_means_on_a_two_worker_cluster_match_in_process(demo):
    distributed = pytest.importorskip("distributed")
    # Small chunks: 20 tasks, so that both workers get some.
    arr = atlasds.open_mfdataarray(demo, "TEMP", datasets_per_chunk=10)
    assert arr.sizes["dataset"] == DEMO_PROFILES
    assert len(arr.data.chunks[0]) == DEMO_PROFILES // 10
    expected = _expected_means(demo)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        got = arr.astype(np.float64).mean("N_LEVELS", skipna=True).compute()
        np.testing.assert_allclose(got.values, expected, rtol=1e-12)
        one = xr.open_dataset(demo, engine="atlas", group=arr["dataset"].values[7], chunks={})
        assert float(one["TEMP"].mean().compute()) == pytest.approx(expected[7], rel=1e-6)
        opens = client.run(_native.open_count)
    assert len(opens) == 2
    assert all(n == 1 for n in opens.values()), opens


# --- many datasets per task: partitions that follow storage blocks (issues 20, 23) ---

import math  # noqa: E402
import subprocess  # noqa: E402

import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402

from conftest import _command  # noqa: E402

MANY_PROFILES = 6_000
SMALL_BLOCK = 512 * 1024  # the writer's block size for variables of small arrays


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory):
    """`atlas demo --count 6000`: TEMP spans several storage blocks (30 000 take
    35 s of CPU in a debug build: their numbers are in docs/scale.md)."""
    path = tmp_path_factory.mktemp("many") / "argo"
    subprocess.run(
        [*_command("ATLAS_BIN", "atlas-cli"), "-q", "demo", str(path), "--count", str(MANY_PROFILES)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return path


def _two_worker_cluster():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    return cluster, distributed.Client(cluster)


def _blocks_bound(c: atlasds.Collection, var: str) -> int:
    """The most blocks `var` can fill: its raw bytes over the small-array block size, plus one."""
    stats = c.stats(var)
    return math.ceil(stats.count * c[c.names()[0]].layout(var).dtype.itemsize / SMALL_BLOCK) + 1


def test_partitions_are_contiguous_runs_covering_every_dataset_once(many):
    c = atlasds.Collection.open(many)
    parts = c.partitions(["TEMP", "PSAL"])
    assert [n for part in parts for n in part] == c.names()
    assert all(part for part in parts)
    bound = _blocks_bound(c, "TEMP")
    assert 2 <= len(parts) <= 2 * bound, (len(parts), bound)
    capped = c.partitions(["TEMP"], target_datasets=500)
    assert [n for part in capped for n in part] == c.names()
    assert max(map(len, capped)) <= 500
    assert len(capped) <= math.ceil(len(c) / 500) + len(c.partitions(["TEMP"]))


def test_thousands_of_profiles_are_as_many_tasks_as_blocks_not_datasets(many):
    # That `partitions` reads segment footers only, no block, is asserted by
    # request counts in crates/atlas/tests/it/read_requests.rs
    # (blocks_by_dataset_come_from_the_footer_alone_and_group_neighbours).
    c = atlasds.Collection.open(many)
    parts = c.partitions(["TEMP"])
    assert len(c) == MANY_PROFILES
    assert len(parts) <= _blocks_bound(c, "TEMP"), len(parts)
    ddf = atlasds.to_dask_dataframe(c, ["TEMP"])
    assert ddf.npartitions == len(parts)
    graph = ddf.__dask_graph__()
    assert len(graph) <= 2 * len(parts), len(graph)


def test_a_per_dataset_mean_on_a_two_worker_cluster_equals_numpy_in_process(many):
    c = atlasds.Collection.open(many)
    fill = c[c.names()[0]].layout("TEMP").fill
    ddf = atlasds.to_dask_dataframe(many, ["TEMP"])
    temp = ddf["TEMP"].astype("float64")
    ddf = ddf.assign(TEMP=temp.where(temp != fill))
    means = ddf.groupby("dataset")["TEMP"].mean()
    cluster, client = _two_worker_cluster()
    with cluster, client:
        got = means.compute()
        opens = client.run(_native.open_count)
    assert len(opens) == 2 and set(opens.values()) <= {0, 1}, opens
    assert sum(opens.values()) >= 1, "each worker opens the collection at most once"
    table = c.to_arrow(["TEMP"])
    names = table["dataset"].cast(pa.string()).to_numpy(zero_copy_only=False)
    values = table["TEMP"].to_numpy(zero_copy_only=False).astype(np.float64)
    values[values == fill] = np.nan
    order = c.names()
    codes = pd.Categorical(names, categories=order).codes
    sums = np.bincount(codes, weights=np.nan_to_num(values), minlength=len(order))
    counts = np.bincount(codes, weights=~np.isnan(values), minlength=len(order))
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = pd.Series(sums / counts, index=order)
    got = got.reindex(order)
    assert len(got) == len(order)
    np.testing.assert_allclose(got.to_numpy(dtype=np.float64), expected.to_numpy(), rtol=1e-12)


def test_the_dask_dataframe_equals_to_pandas_for_every_column(demo):
    c = atlasds.Collection.open(demo)
    ddf = c.to_dask_dataframe(["TEMP", "PSAL", "PRES"], attrs=["platform_number", "cycle_number"])
    want = c.to_pandas(["TEMP", "PSAL", "PRES"], attrs=["platform_number", "cycle_number"])
    got = ddf.compute(scheduler="sync").reset_index(drop=True)
    assert list(got.columns) == list(want.columns)
    want = want.assign(dataset=want["dataset"].astype(str))
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert list(ddf.dtypes) == list(got.dtypes)


def test_where_selects_exactly_what_select_gives(many):
    c = atlasds.Collection.open(many)
    where = "LATITUDE > 0 and PRES.max > 1000"
    selected = c.select(where)
    assert 0 < len(selected) < len(c)
    ddf = atlasds.to_dask_dataframe(c, ["TEMP"], where=where)
    got = ddf.compute(scheduler="threads")
    assert list(pd.unique(got["dataset"])) == selected
    assert len(got) == c.to_arrow(["TEMP"], where=where).num_rows
    assert ddf.npartitions <= len(c.partitions(["TEMP"])) + 1


def test_partitions_never_span_two_members_of_a_set(tmp_path):
    path = tmp_path / "set"

    def profile(i):
        return xr.Dataset({"TEMP": ("N_LEVELS", np.arange(i % 7 + 1, dtype=np.float32) + i)})

    for m in range(3):
        atlasds.write(path, {f"p{m}_{i:03d}": profile(i) for i in range(50)}, append=True)
    c = atlasds.Collection.open(path)
    catalogue = c.catalogue(attributes=[], arrays=[])
    member_of = dict(zip(catalogue["name"], catalogue["member"]))
    parts = c.partitions(["TEMP"])
    assert len(parts) >= 3
    assert all(len({member_of[n] for n in part}) == 1 for part in parts)
    ddf = c.to_dask_dataframe("TEMP")
    got = ddf.compute(scheduler="sync")
    np.testing.assert_array_equal(got["TEMP"].to_numpy(), c.to_arrow("TEMP")["TEMP"].to_numpy())


def test_open_mfdataarray_tasks_follow_blocks_and_values_equal_per_dataset_reads(many):
    c = atlasds.Collection.open(many)
    arr = atlasds.open_mfdataarray(c, "TEMP")
    chunks = arr.data.chunks[0]
    assert len(chunks) == len(c.partitions(["TEMP"], target_datasets=1000))
    assert len(chunks) <= _blocks_bound(c, "TEMP") + math.ceil(len(c) / 1000)
    names = c.names()
    picks = [0, 1, 999, 1000, len(names) // 2, len(names) - 1]
    values = arr.isel(dataset=picks).values
    fill = c[names[0]].layout("TEMP").fill
    for row, i in enumerate(picks):
        want = c[names[i]].read("TEMP").astype(np.float64)
        want[want == fill] = np.nan
        got = values[row]
        np.testing.assert_array_equal(got[: len(want)], want)
        assert np.isnan(got[len(want):]).all()


def test_an_empty_selection_is_an_empty_frame_with_the_tables_columns(demo):
    ddf = atlasds.to_dask_dataframe(demo, ["TEMP"], where="LATITUDE > 1000")
    got = ddf.compute(scheduler="sync")
    assert len(got) == 0
    assert "TEMP" in got.columns and "dataset" in got.columns
