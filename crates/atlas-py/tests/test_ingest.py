"""`atlasds.ingest`: NetCDF files into a collection set, one member per task,
on a dask.distributed LocalCluster of two worker processes and on local
threads, committed once; all or nothing; a worker lost mid-run leaves one
copy of each dataset.

Inputs: the NetCDF files the `atlas-netcdf` tests read
(`crates/atlas-netcdf/tests/data`, written by scripts/make-netcdf-inputs.py,
make-netcdf-conventions.py and make-argo-profiles.py), the reference their
`atlas create` into one collection."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import atlasds
from atlasds import _native
from conftest import ROOT, _command

DATA = ROOT / "crates" / "atlas-netcdf" / "tests" / "data"
PER_MEMBER = 4


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated inputs in one directory: 18 files of both NetCDF families."""
    path = tmp_path_factory.mktemp("inputs")
    for folder, pattern in [("good", "*.nc*"), ("argo", "*.nc"), ("conventions", "*.nc")]:
        for f in sorted((DATA / folder).glob(pattern)):
            if f.suffix != ".json":
                shutil.copy(f, path / f.name)
    return path


@pytest.fixture(scope="module")
def reference(inputs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`atlas create` of the inputs into one lone collection."""
    path = tmp_path_factory.mktemp("reference") / "collection"
    subprocess.run([*_command("ATLAS_BIN", "atlas-cli"), "-q", "create", str(inputs), str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        yield client


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    if a.dtype.kind == "M":
        return bool(np.array_equal(a.view(np.int64), b.view(np.int64)))
    return a.tolist() == b.tolist()


def _attrs_equal(a: dict, b: dict) -> bool:
    if list(a) != list(b):
        return False
    return all(
        _same(np.asarray(a[k]), np.asarray(b[k])) if not isinstance(a[k], str) else a[k] == b[k]
        for k in a
    )


def _layout(layout) -> dict:
    """A layout as a dict, the fill as its repr (NaN != NaN, NaT != NaT)."""
    d = dataclasses.asdict(layout)
    d["fill"] = repr(d["fill"])
    return d


def assert_reads_back_as(got_path: Path, want_path: Path) -> None:
    """Names, arrays, layouts, values and attributes of every dataset equal."""
    got, want = atlasds.Collection.open(got_path), atlasds.Collection.open(want_path)
    assert sorted(got) == sorted(want)
    for name in want:
        g, w = got[name], want[name]
        assert g.arrays == w.arrays, name
        assert _attrs_equal(g.attrs, w.attrs), name
        for array in w.arrays:
            assert _layout(g.layout(array)) == _layout(w.layout(array)), (name, array)
            assert _attrs_equal(g.array_attrs(array), w.array_attrs(array)), (name, array)
            assert _same(g.read(array), w.read(array)), (name, array)


def _member_dirs(set_path: Path) -> list[str]:
    members = set_path / "members"
    return sorted(os.listdir(members)) if members.exists() else []


def test_a_two_worker_cluster_ingest_reads_back_as_atlas_create_of_the_same_files(
    inputs, reference, cluster, tmp_path
):
    dst = tmp_path / "set"
    result = atlasds.ingest([inputs], dst, client=cluster, datasets_per_member=PER_MEMBER)
    files = sorted(str(p) for p in inputs.iterdir())
    assert result.written == files
    assert result.skipped == [] and result.generation == 1
    assert len(result.members) == -(-len(files) // PER_MEMBER)
    assert result.datasets == len(files) and result.bytes > 0
    c = atlasds.Collection.open(dst)
    assert [m["id"] for m in c.members] == result.members
    assert [m["datasets_total"] for m in c.members] == [4, 4, 4, 4, 2]
    # Members hold the sorted files in order: chunk i holds files[4i:4i+4].
    assert c.names() == [Path(f).name for f in files]
    assert _member_dirs(dst) == sorted(result.members)
    assert_reads_back_as(dst, reference)


def test_one_task_per_member_named_atlas_ingest(inputs, cluster, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.get_task_stream(client=cluster) as stream:
        result = atlasds.ingest([inputs], tmp_path / "set", client=cluster, datasets_per_member=9)
    keys = [str(t["key"]) for t in stream.data]
    assert len(result.members) == 2
    assert len(keys) == 2 and all(k.startswith("atlas-ingest-") for k in keys), keys


def test_local_threads_write_the_same_set_as_the_cluster(inputs, reference, cluster, tmp_path):
    on_threads = atlasds.ingest([inputs], tmp_path / "threads", jobs=3, datasets_per_member=PER_MEMBER)
    on_cluster = atlasds.ingest([inputs], tmp_path / "cluster", client=cluster, datasets_per_member=PER_MEMBER)
    assert on_threads.written == on_cluster.written
    assert on_threads.datasets == on_cluster.datasets == len(on_threads.written)
    a, b = atlasds.Collection.open(tmp_path / "threads"), atlasds.Collection.open(tmp_path / "cluster")
    assert a.names() == b.names()
    assert [m["datasets_total"] for m in a.members] == [m["datasets_total"] for m in b.members]
    assert_reads_back_as(tmp_path / "threads", tmp_path / "cluster")
    assert_reads_back_as(tmp_path / "threads", reference)


@pytest.mark.parametrize("on", ["cluster", "threads"])
def test_a_failing_task_commits_nothing_and_leaves_no_member_behind(inputs, cluster, tmp_path, on):
    sources = tmp_path / "in"
    shutil.copytree(inputs, sources)
    shutil.copy(DATA / "bad" / "corrupt.nc", sources / "corrupt.nc")
    dst = tmp_path / "set"
    with pytest.raises(atlasds.AtlasError, match="corrupt.nc"):
        atlasds.ingest(
            [sources], dst, client=cluster if on == "cluster" else None, datasets_per_member=3
        )
    assert not (dst / "set.manifest").exists()
    assert _member_dirs(dst) == []


def test_a_failing_task_leaves_an_existing_set_as_it_was(inputs, cluster, tmp_path):
    dst = tmp_path / "set"
    first = atlasds.ingest(sorted(inputs.glob("R69*.nc")), dst, client=cluster, datasets_per_member=2)
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(DATA / "bad" / "corrupt.nc", bad / "corrupt.nc")
    shutil.copy(DATA / "good" / "classic.nc", bad / "classic.nc")
    with pytest.raises(atlasds.AtlasError):
        atlasds.ingest([bad], dst, client=cluster, datasets_per_member=1)
    c = atlasds.Collection.open(dst)
    assert c.generation == 1 and [m["id"] for m in c.members] == first.members
    assert _member_dirs(dst) == sorted(first.members)


def test_skip_errors_commits_the_readable_files_and_reports_the_others(inputs, cluster, tmp_path):
    sources = tmp_path / "in"
    sources.mkdir()
    shutil.copy(DATA / "bad" / "corrupt.nc", sources / "corrupt.nc")
    for f in sorted(inputs.glob("R69*.nc")):
        shutil.copy(f, sources / f.name)
    dst = tmp_path / "set"
    # corrupt.nc sorts after the R69 files: the last member holds it alone.
    result = atlasds.ingest([sources], dst, client=cluster, datasets_per_member=4, skip_errors=True)
    assert [Path(p).name for p, _ in result.skipped] == ["corrupt.nc"]
    assert len(result.members) == 1 and result.datasets == 4
    # The member whose every file was skipped is not committed, nor left behind.
    assert _member_dirs(dst) == result.members
    assert sorted(atlasds.Collection.open(dst)) == sorted(f.name for f in inputs.glob("R69*.nc"))


def test_names_that_would_land_in_two_members_are_refused_before_anything_is_written(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        shutil.copy(DATA / "good" / "classic.nc", tmp_path / d / "classic.nc")
    with pytest.raises(atlasds.InvalidArgument, match="different members"):
        atlasds.ingest([tmp_path / "a", tmp_path / "b"], tmp_path / "set", datasets_per_member=1)
    assert not (tmp_path / "set").exists()


def _longitudes_by_member(path: Path) -> list[list[float]]:
    """Per member, in commit order, the LONGITUDE of each of its datasets."""
    import json

    out = subprocess.run(
        [*_command("ATLAS_BIN", "atlas-cli"), "--json", "catalogue", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    members: dict[str, list[float]] = {}
    for row in json.loads(out):
        members.setdefault(row["member"], []).append(row["LONGITUDE.min"])
    return [sorted(v) for v in members.values()]


def test_a_sorted_ingest_cuts_members_in_key_order_with_the_same_datasets(tmp_path):
    plain = atlasds.ingest(DATA / "argo", tmp_path / "plain", datasets_per_member=2, jobs=1)
    result = atlasds.ingest(
        DATA / "argo", tmp_path / "sorted", datasets_per_member=2, jobs=2, sort_by="LONGITUDE"
    )
    assert result.datasets == plain.datasets == 4
    assert sorted(result.written) == sorted(plain.written)
    spans = _longitudes_by_member(tmp_path / "sorted")
    assert [len(s) for s in spans] == [2, 2]
    # Disjoint and in order: the first member's highest below the second's lowest.
    assert spans[0][-1] < spans[1][0], spans
    assert _longitudes_by_member(tmp_path / "plain") != spans, "the test needs keys out of path order"
    assert_reads_back_as(tmp_path / "sorted", tmp_path / "plain")


def test_a_sorted_ingest_refuses_an_unknown_or_many_valued_key_before_writing_anything(tmp_path):
    with pytest.raises(atlasds.InvalidArgument, match='"NOT_THERE"'):
        atlasds.ingest(DATA / "argo", tmp_path / "set", sort_by=["JULD", "NOT_THERE"])
    with pytest.raises(atlasds.InvalidArgument, match='"PRES"'):
        atlasds.ingest(DATA / "argo", tmp_path / "set", sort_by="PRES")
    assert not (tmp_path / "set").exists()


@pytest.fixture
def http_server(tmp_path):
    """The Argo-like profiles served over HTTP from a local thread; yields the base URL."""
    import functools
    import http.server
    import threading

    served = tmp_path / "served"
    shutil.copytree(DATA / "argo", served)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))

    class Quiet(handler.func):  # type: ignore[name-defined]
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(served))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_files_at_http_urls_are_ingested_as_the_same_local_files_are(http_server, tmp_path):
    names = sorted(p.name for p in (DATA / "argo").glob("*.nc"))
    result = atlasds.ingest([f"{http_server}/{n}" for n in names], tmp_path / "set", jobs=2)
    assert result.datasets == len(names)
    assert result.written == sorted(f"{http_server}/{n}" for n in names)
    local = atlasds.ingest(DATA / "argo", tmp_path / "local")
    a, b = atlasds.Collection.open(tmp_path / "set"), atlasds.Collection.open(tmp_path / "local")
    assert sorted(a.names()) == sorted(b.names()) == names
    for name in names:
        for array in b[name].arrays:
            x, y = a[name].read(array), b[name].read(array)
            assert x.dtype == y.dtype and x.shape == y.shape
            assert np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"), (name, array)


def test_a_url_that_fails_for_good_is_named_and_skip_errors_lets_the_rest_land(http_server, tmp_path):
    good, missing = f"{http_server}/R6900000_001.nc", f"{http_server}/R6900000_404.nc"
    with pytest.raises(atlasds.AtlasError, match="R6900000_404.nc"):
        atlasds.ingest([good, missing], tmp_path / "set")
    assert not (tmp_path / "set" / "set.manifest").exists()
    result = atlasds.ingest([good, missing], tmp_path / "set", skip_errors=True)
    assert result.datasets == 1
    assert [s[0] for s in result.skipped] == [missing]
    assert "cannot fetch it" in result.skipped[0][1]


def test_an_http_folder_cannot_be_listed_and_says_so(http_server, tmp_path):
    with pytest.raises(atlasds.AtlasError, match="cannot be listed"):
        atlasds.ingest([f"{http_server}/"], tmp_path / "set")


def test_run_member_ids_share_the_run_prefix_and_sort_in_chunk_order():
    prefix, ids = _native.run_member_ids(3)
    assert len(ids) == 3 and all(i.startswith(prefix) for i in ids)
    assert ids == sorted(ids) and [i[len(prefix):] for i in ids] == ["00000", "00001", "00002"]
    other, _ = _native.run_member_ids(1)
    assert other != prefix


def _exit_once_after_writing(marker: str):
    """A worker plugin that kills its process (os._exit) the first time, on
    any worker, an ingest task has finished writing its member and before the
    scheduler has its result: the task is then run again elsewhere."""
    import distributed

    class ExitOnce(distributed.WorkerPlugin):
        def transition(self, key, start, finish, **kwargs):
            if str(key).startswith("atlas-ingest-") and start == "executing" and finish == "memory":
                try:
                    fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                except FileExistsError:
                    return
                os.write(fd, str(key).encode())
                os.close(fd)
                os._exit(1)

    return ExitOnce()


def test_a_worker_killed_after_writing_its_member_leaves_exactly_one_copy_of_each_dataset(
    inputs, reference, tmp_path
):
    distributed = pytest.importorskip("distributed")
    marker = tmp_path / "killed"
    dst = tmp_path / "set"
    # A cluster of its own (the plugin kills a worker); its dashboard on any
    # free port, since the module's cluster holds the default one.
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster, distributed.Client(cluster) as client:
        client.register_plugin(_exit_once_after_writing(str(marker)), name="exit-once")
        result = atlasds.ingest([inputs], dst, client=client, datasets_per_member=PER_MEMBER)
    assert marker.exists(), "no worker was killed"
    assert marker.read_text().startswith("atlas-ingest-")
    files = sorted(p.name for p in inputs.iterdir())
    c = atlasds.Collection.open(dst)
    assert c.names() == files, "each dataset once, in file order"
    assert sum(m["datasets_total"] for m in c.members) == len(files)
    assert [m["id"] for m in c.members] == result.members
    assert _member_dirs(dst) == sorted(result.members)
    assert_reads_back_as(dst, reference)
