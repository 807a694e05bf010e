"""Bad input raises the documented exception class with the library's message."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import atlasds
from conftest import fixture


def test_a_missing_path_is_not_found(tmp_path: Path):
    with pytest.raises(atlasds.NotFound) as e:
        atlasds.Collection.open(tmp_path / "nowhere")
    assert "nowhere" in str(e.value)


def test_a_directory_without_a_container_is_not_found(tmp_path: Path):
    with pytest.raises(atlasds.NotFound):
        atlasds.Collection.open(tmp_path)


def test_random_bytes_are_not_an_atlas_collection(tmp_path: Path):
    (tmp_path / "data.atlas").write_bytes(bytes(range(256)) * 64)
    with pytest.raises(atlasds.NotAnAtlasCollection):
        atlasds.Collection.open(tmp_path)


def test_a_truncated_container_is_rejected(tmp_path: Path):
    data = (fixture("small") / "data.atlas").read_bytes()
    (tmp_path / "data.atlas").write_bytes(data[: len(data) // 2])
    with pytest.raises((atlasds.NotAnAtlasCollection, atlasds.CorruptCollection)):
        atlasds.Collection.open(tmp_path)


def test_a_file_instead_of_a_directory_is_an_invalid_argument():
    with pytest.raises(atlasds.InvalidArgument):
        atlasds.Collection.open(fixture("small") / "manifest.json")


def test_a_path_naming_the_container_file_opens_its_directory():
    # main's location rules: `DIR/data.atlas` means the collection in DIR.
    c = atlasds.Collection.open(fixture("small") / "data.atlas")
    assert list(c) == ["jan_2024", "feb_2024", "mar_2024"]


def test_an_unknown_dataset_is_not_found_and_a_key_error():
    c = atlasds.Collection.open(fixture("small"))
    with pytest.raises(atlasds.NotFound, match="apr_2024"):
        c["apr_2024"]
    with pytest.raises(KeyError):
        c["apr_2024"]


def test_an_unknown_array_is_not_found():
    ds = atlasds.Collection.open(fixture("small"))["jan_2024"]
    with pytest.raises(atlasds.NotFound, match="salinity"):
        ds.read("salinity")
    with pytest.raises(atlasds.NotFound):
        atlasds.Collection.open(fixture("small")).stats("salinity")


def test_a_deleted_dataset_is_not_found():
    c = atlasds.Collection.open(fixture("deleted"))
    with pytest.raises(atlasds.NotFound):
        c["d02"]


def test_a_url_of_an_unknown_scheme_is_an_invalid_argument():
    with pytest.raises(atlasds.InvalidArgument):
        atlasds.Collection.open("ftp://host/collection")


def test_a_file_url_opens_the_directory_it_names():
    c = atlasds.Collection.open(f"file://{fixture('small')}")
    assert list(c) == ["jan_2024", "feb_2024", "mar_2024"]


def test_errors_share_one_base_class_and_storage_errors_keep_retryable():
    for cls in (
        atlasds.NotAnAtlasCollection,
        atlasds.CorruptCollection,
        atlasds.NotFound,
        atlasds.StorageError,
        atlasds.InvalidArgument,
    ):
        assert issubclass(cls, atlasds.AtlasError)
    e = pickle.loads(pickle.dumps(atlasds.StorageError("timed out", retryable=True)))
    assert e.retryable is True and str(e) == "timed out"
