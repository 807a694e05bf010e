"""`storage_options` in fsspec's spelling (`anon`, `key`, `secret`, `token`,
`endpoint_url`, `region_name`, `client_kwargs`) reach the backend, against
the Rust tests' in-process S3 server (`cargo xtask s3-server`); an unknown
key is refused by name."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid

import pytest

import atlasds
from conftest import ROOT, _command, fixture

ARGO = ROOT / "crates" / "atlas-netcdf" / "tests" / "data" / "argo"


@pytest.fixture(scope="module")
def s3():
    """The S3 server: its endpoint, directory, bucket and credentials."""
    process = subprocess.Popen(
        [*_command("ATLAS_XTASK", "xtask"), "s3-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        yield json.loads(line)
    finally:
        process.stdin.close()
        process.wait(timeout=30)


def _prefix(s3: dict, copy_from=None) -> str:
    """A fresh prefix of the bucket, holding a copy of `copy_from`'s files."""
    name = f"p-{uuid.uuid4().hex}"
    if copy_from is not None:
        shutil.copytree(copy_from, f"{s3['dir']}/{s3['bucket']}/{name}")
    return f"s3://{s3['bucket']}/{name}"


def _fsspec(s3: dict, **extra) -> dict:
    return {
        "key": s3["access_key"],
        "secret": s3["secret_key"],
        "client_kwargs": {"endpoint_url": s3["endpoint"], "region_name": s3["region"]},
        **extra,
    }


def test_fsspec_keys_reach_the_s3_server_for_reading(s3):
    url = _prefix(s3, fixture("small"))
    local = atlasds.Collection.open(fixture("small"))
    nested = atlasds.Collection.open(url, storage_options=_fsspec(s3))
    assert nested.names() == local.names()
    top_level = {
        "key": s3["access_key"],
        "secret": s3["secret_key"],
        "endpoint_url": s3["endpoint"],
        "region_name": s3["region"],
    }
    flat = atlasds.Collection.open(url, storage_options=top_level)
    first = local.names()[0]
    array = local[first].arrays[0]
    assert (flat[first].read(array) == local[first].read(array)).all()
    # The key and secret are what the server checks: a wrong secret is refused.
    with pytest.raises(atlasds.AtlasError):
        atlasds.Collection.open(url, storage_options=_fsspec(s3, secret="wrong"))


def test_xarray_open_dataset_takes_fsspec_storage_options_as_for_zarr(s3):
    xr = pytest.importorskip("xarray")
    url = _prefix(s3, fixture("small"))
    remote = xr.open_dataset(url, engine="atlas", group="jan_2024", storage_options=_fsspec(s3))
    local = xr.open_dataset(fixture("small"), engine="atlas", group="jan_2024")
    xr.testing.assert_identical(remote.load(), local.load())


def test_ingest_and_sync_read_sources_on_s3_with_fsspec_keys(s3, tmp_path):
    url = _prefix(s3, ARGO)
    result = atlasds.ingest([f"{url}/"], tmp_path / "set", storage_options=_fsspec(s3))
    assert result.datasets == 4
    assert sorted(atlasds.Collection.open(tmp_path / "set").names()) == sorted(
        p.name for p in ARGO.glob("*.nc")
    )
    index = tmp_path / "index.txt"
    index.write_text(
        "file,date,latitude,longitude,ocean,profiler_type,institution,date_update\n"
        + "".join(f"{p.name},,,,A,846,IF,20240101000000\n" for p in sorted(ARGO.glob("*.nc")))
    )
    synced = atlasds.sync(tmp_path / "synced", index, root=url, storage_options=_fsspec(s3))
    assert len(synced.added) == 4 and synced.generation == 1


@pytest.mark.parametrize(
    "options, named",
    [
        ({"use_ssl": False}, "'use_ssl'"),
        ({"client_kwargs": {"verify": False}}, "'verify'"),
        ({"anon": "yes"}, "'anon'"),
        ({"endpoint_url": "http://a", "endpoint": "http://b"}, "'endpoint'"),
    ],
)
def test_an_unknown_or_malformed_storage_option_is_refused_by_name(options, named):
    with pytest.raises(atlasds.InvalidArgument, match=named):
        atlasds.Collection.open("s3://bucket/prefix", storage_options=options)


def test_anon_is_anonymous_and_token_is_a_session_token_on_s3():
    from atlasds._collection import _storage

    assert _storage({"anon": True}, "s3://b/p") == ([], True)
    assert _storage({"token": "t", "key": "k"}, "s3://b/p") == (
        [("session_token", "t"), ("access_key_id", "k")],
        False,
    )
    assert _storage({"token": "anon"}, "gs://b/p") == ([], True)
