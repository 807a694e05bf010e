"""`Collection` is a `collections.abc.Mapping` of live dataset names to `Dataset` handles."""

from __future__ import annotations

from collections.abc import ItemsView, KeysView, Mapping, ValuesView

import pytest

import atlasds
from conftest import fixture

NAMES = ["jan_2024", "feb_2024", "mar_2024"]


@pytest.fixture
def small():
    return atlasds.Collection.open(fixture("small"))


def test_a_collection_is_a_mapping(small):
    assert isinstance(small, Mapping)
    assert issubclass(atlasds.Collection, Mapping)


def test_len_iteration_and_keys_follow_ordinal_order(small):
    assert len(small) == 3
    assert list(small) == NAMES
    keys = small.keys()
    assert isinstance(keys, KeysView)
    assert list(keys) == NAMES
    assert "feb_2024" in keys and "apr_2024" not in keys


def test_values_and_items_are_dataset_handles_of_each_name(small):
    values = small.values()
    assert isinstance(values, ValuesView)
    assert [d.name for d in values] == NAMES
    assert all(isinstance(d, atlasds.Dataset) and d.collection is small for d in values)
    items = small.items()
    assert isinstance(items, ItemsView)
    assert [(k, v.name) for k, v in items] == [(n, n) for n in NAMES]
    assert ("jan_2024", small["jan_2024"]) in items


def test_membership_is_by_live_name_and_any_other_key_is_absent(small):
    assert "mar_2024" in small
    assert "apr_2024" not in small
    assert 0 not in small and None not in small


def test_get_returns_the_handle_or_the_default(small):
    assert small.get("jan_2024") == small["jan_2024"]
    assert small.get("apr_2024") is None
    sentinel = object()
    assert small.get("apr_2024", sentinel) is sentinel
    assert small.get(3, sentinel) is sentinel, "a key that is no string is missing, not a TypeError"


def test_a_missing_name_raises_key_error_and_not_found(small):
    with pytest.raises(KeyError):
        small["apr_2024"]
    with pytest.raises(atlasds.NotFound, match="apr_2024"):
        small["apr_2024"]
    with pytest.raises(atlasds.NotFound):
        small[1]


def test_deleted_datasets_are_not_keys():
    c = atlasds.Collection.open(fixture("deleted"))
    assert len(c) == len(list(c.keys())) == 7
    assert "d02" not in c and c.get("d02") is None


def test_a_collection_equals_only_itself_and_stays_hashable(small):
    again = atlasds.Collection.open(fixture("small"))
    assert small == small and small != again
    assert len({small, again, small}) == 2
    assert small["jan_2024"] == small["jan_2024"]
    assert small["jan_2024"] != again["jan_2024"], "handles of two collections differ"
    assert small["jan_2024"] != small["feb_2024"]
    assert hash(small["jan_2024"]) == hash(small["jan_2024"])


def test_dict_of_a_collection_maps_every_name_to_its_handle(small):
    as_dict = dict(small)
    assert list(as_dict) == NAMES
    assert as_dict["feb_2024"] == small["feb_2024"]
