"""`Collection.read_many`: one array of many datasets, batch by batch, each
value what `Dataset.read` gives."""

from __future__ import annotations

import numpy as np
import pytest

import atlasds
from atlasds import InvalidArgument, NotFound
from conftest import fixture

FIXTURES = ["small", "mixed", "deleted"]


def _equal(got: np.ndarray, want: np.ndarray) -> bool:
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype.kind in "fcM":
        return bool(np.array_equal(got, want, equal_nan=True))
    return got.tolist() == want.tolist()


@pytest.mark.parametrize("which", [*FIXTURES, "kinds", "demo"])
def test_read_many_gives_what_read_gives_for_every_array_of_every_fixture(which, kinds, demo):
    path = {"kinds": kinds, "demo": demo}.get(which) or fixture(which)
    c = atlasds.Collection.open(path)
    checked = 0
    for array in c.arrays:
        names = [n for n in c if array in c[n].arrays]
        got = list(c.read_many(array, names, batch=3))
        assert [n for n, _ in got] == names
        for name, values in got:
            want = c[name].read(array)
            assert _equal(values, want), (which, array, name, values, want)
            checked += 1
    assert checked > 0


def test_read_many_follows_the_order_given_and_defaults_to_every_live_dataset(demo):
    c = atlasds.Collection.open(demo)
    every = [n for n, _ in c.read_many("TEMP")]
    assert every == c.names()
    backwards = list(reversed(every))[:50]
    got = list(c.read_many("TEMP", backwards, batch=7))
    assert [n for n, _ in got] == backwards
    for name, values in got:
        assert _equal(values, c[name].read("TEMP"))


def test_strings_come_as_asked(kinds):
    c = atlasds.Collection.open(kinds)
    names = [n for n in c if "label" in c[n].arrays]
    assert names, "the kinds fixture holds a string array"
    for strings in ("object", "auto"):
        for name, values in c.read_many("label", names, strings=strings):
            assert values.dtype == c[name].read("label", strings=strings).dtype


def test_a_deleted_dataset_raises_not_found_like_read():
    c = atlasds.Collection.open(fixture("deleted"))
    with pytest.raises(NotFound):
        c["d02"]
    with pytest.raises(NotFound, match="d02"):
        list(c.read_many(c.arrays[0], ["d00", "d02"]))


def test_an_array_a_dataset_lacks_raises_what_read_raises(demo):
    c = atlasds.Collection.open(demo)
    name = c.names()[0]
    with pytest.raises(NotFound) as from_read:
        c[name].read("NO_SUCH_ARRAY")
    with pytest.raises(type(from_read.value)):
        list(c.read_many("NO_SUCH_ARRAY", [name]))


@pytest.mark.parametrize("batch", [0, -1, True, 1.5])
def test_a_batch_that_is_not_a_positive_integer_is_refused_at_the_call(demo, batch):
    c = atlasds.Collection.open(demo)
    with pytest.raises(InvalidArgument, match="batch"):
        c.read_many("TEMP", batch=batch)


def test_one_string_for_names_is_refused(demo):
    c = atlasds.Collection.open(demo)
    with pytest.raises(InvalidArgument, match="list of dataset names"):
        c.read_many("TEMP", c.names()[0])
