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
    arr = atlasds.open_mfdataarray(demo, "TEMP")
    assert arr.sizes["dataset"] == DEMO_PROFILES
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
