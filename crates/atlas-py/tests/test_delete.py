"""Deleting hides datasets with one mask write and reports the guarantee it had."""

from __future__ import annotations

import pytest

import atlasds
from conftest import fixture


def test_deleted_datasets_disappear_from_every_view(copy_of):
    path = copy_of(fixture("small"))
    c = atlasds.Collection.open(path)
    result = c.delete(["feb_2024"])
    assert result.deleted == 1
    assert result.guarantee in ("conditional", "locked", "last_writer_wins")
    assert "feb_2024" not in c and len(c) == 2
    with pytest.raises(atlasds.NotFound):
        c["feb_2024"]
    reopened = atlasds.Collection.open(path)
    assert list(reopened) == ["jan_2024", "mar_2024"]
    assert reopened.catalogue()["name"].tolist() == ["jan_2024", "mar_2024"]


def test_a_delete_naming_an_unknown_dataset_hides_nothing(copy_of):
    path = copy_of(fixture("deleted"))
    c = atlasds.Collection.open(path)
    with pytest.raises(atlasds.NotFound):
        c.delete(["d00", "no_such_dataset"])
    assert len(atlasds.Collection.open(path)) == 7


def test_delete_takes_a_list_not_a_string(copy_of):
    c = atlasds.Collection.open(copy_of(fixture("small")))
    with pytest.raises(atlasds.InvalidArgument):
        c.delete("jan_2024")
    assert len(c) == 3
