"""Opening by URL with storage_options and reader options, verify, and the delete guarantee."""

from __future__ import annotations

import pickle

import pytest

import atlasds
from conftest import fixture

# An S3 location that is never contacted: building the operator sends no request
# when the endpoint and region are given.
UNREACHABLE_S3 = {"endpoint": "http://127.0.0.1:9", "region": "us-east-1"}


def test_a_file_url_with_storage_options_opens_the_local_collection():
    c = atlasds.Collection.open(
        f"file://{fixture('small')}", storage_options={"anonymous": True, "region": "x"}
    )
    assert list(c) == ["jan_2024", "feb_2024", "mar_2024"]
    assert c.location == f"file://{fixture('small')}"


def test_reader_options_pass_through_and_survive_pickling():
    c = atlasds.Collection.open(fixture("small"), block_cache_bytes=0, segment_prefetch_bytes=4096)
    first = c.names()[0]
    before = c[first].read(c[first].arrays[0])
    again = pickle.loads(pickle.dumps(c))
    assert again._open_options == {"block_cache_bytes": 0, "segment_prefetch_bytes": 4096}
    assert (again[first].read(again[first].arrays[0]) == before).all()


def test_a_negative_reader_option_is_an_invalid_argument():
    with pytest.raises(atlasds.InvalidArgument):
        atlasds.Collection.open(fixture("small"), block_cache_bytes=-1)


def test_a_storage_option_of_the_wrong_type_for_the_backend_is_an_invalid_argument():
    options = {**UNREACHABLE_S3, "enable_versioning": "not-a-bool"}
    with pytest.raises(atlasds.InvalidArgument, match="configuration"):
        atlasds.Collection.open("s3://bucket/prefix", storage_options=options)


def test_anonymous_must_be_a_bool():
    with pytest.raises(atlasds.InvalidArgument, match="anonymous"):
        atlasds.Collection.open(fixture("small"), storage_options={"anonymous": "yes"})


def test_a_storage_option_that_is_not_a_scalar_is_an_invalid_argument():
    with pytest.raises(atlasds.InvalidArgument):
        atlasds.Collection.open(fixture("small"), storage_options={"endpoint": ["a", "b"]})


@pytest.mark.parametrize("deep", [False, True])
def test_verify_finds_a_conformance_fixture_sound(deep):
    result = atlasds.Collection.open(fixture("small")).verify(deep=deep)
    assert isinstance(result, atlasds.VerifyResult)
    assert result.sound and bool(result)
    assert result.problems == []
    assert result.checked["datasets"] == 3
    assert result.checked["elements"] > 0


def test_verify_counts_hidden_datasets_of_a_fixture_with_deletes():
    result = atlasds.Collection.open(fixture("deleted")).verify()
    assert result.sound, result.problems
    assert result.checked["hidden"] > 0


def test_verify_reports_a_damaged_segment_as_a_problem(copy_of):
    path = copy_of(fixture("small"))
    container = path / "data.atlas"
    c = atlasds.Collection.open(path)
    data = bytearray(container.read_bytes())
    # Damage the first bytes (segment data); the footer at the tail stays readable.
    for i in range(16, 48):
        data[i] ^= 0xFF
    container.write_bytes(bytes(data))
    result = atlasds.Collection.open(path).verify(deep=True)
    assert not result.sound
    assert result.problems
    assert len(c) == 3


def test_a_delete_on_local_disk_holds_the_lock(copy_of):
    c = atlasds.Collection.open(copy_of(fixture("small")))
    result = c.delete(["jan_2024"])
    assert result == atlasds.DeleteResult(1, "locked")
