"""Reads: every dtype as itself, fills, NaN and NaT, and numpy basic-indexing regions."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import atlasds

INTS = {
    "i8": (np.int8, [-128, -1, 7, 127]),
    "i16": (np.int16, [-32768, -1, 7, -999]),
    "i32": (np.int32, [-(2**31), -1, 7, -999]),
    "i64": (np.int64, [-(2**63), -1, 9_000_000_000, -999]),
    "u8": (np.uint8, [0, 1, 200, 255]),
    "u16": (np.uint16, [0, 1, 60_000, 65_535]),
    "u32": (np.uint32, [0, 1, 4_000_000_000, 7]),
    "u64": (np.uint64, [0, 1, 2**64 - 2, 2**64 - 1]),
}


@pytest.fixture(scope="module")
def every(kinds):
    return atlasds.Collection.open(kinds)["every_dtype"]


@pytest.mark.parametrize("array", sorted(INTS))
def test_every_integer_dtype_reads_as_itself_with_the_fill_where_unwritten(every, array):
    dtype, want = INTS[array]
    values = every.read(array)
    assert values.dtype == dtype
    assert values.tolist() == want
    assert every.layout(array).fill == want[-1]


def test_floats_keep_nan_and_read_the_fill_where_unwritten(every):
    f32 = every.read("f32")
    assert f32.dtype == np.float32
    assert f32[0] == -1.5 and np.isnan(f32[1]) and f32[2] == 3.25 and f32[3] == 99999.0
    f64 = every.read("f64")
    assert f64.dtype == np.float64
    assert f64.tolist() == [-1.5, 0.1, 1e300, -9999.0]


def test_timestamps_are_datetime64_ns_with_nat_for_the_fill(every):
    t = every.read("time")
    assert t.dtype == np.dtype("datetime64[ns]")
    assert t[0] == np.datetime64("2024-01-01T00:00:00", "ns")
    assert t[1] == np.datetime64(-1, "ns"), "a written value before the epoch is not NaT"
    assert t[2] - t[0] == np.timedelta64(1, "ns")
    assert np.isnat(t[3])


def test_strings_read_as_stringdtype_on_numpy_2_and_binary_as_object_arrays(every):
    assert atlasds.HAS_STRINGDTYPE == (np.lib.NumpyVersion(np.__version__) >= "2.0.0")
    labels = every.read("label")
    want = np.dtypes.StringDType() if atlasds.HAS_STRINGDTYPE else np.dtype(object)
    assert labels.dtype == want and labels.tolist() == ["a", "é ü", ""]
    blobs = every.read("blob")
    assert blobs.dtype == object and blobs.tolist() == [b"\x00\xff", b"", b"\x07"]
    assert every.read("blob", strings="stringdtype").dtype == object, "binary is never text"


def test_strings_can_be_asked_for_as_object_or_stringdtype(every):
    objects = every.read("label", strings="object")
    assert objects.dtype == object and objects.tolist() == ["a", "é ü", ""]
    assert all(type(s) is str for s in objects)
    if atlasds.HAS_STRINGDTYPE:
        typed = every.read("label", slice(1, 3), strings="stringdtype")
        assert typed.dtype == np.dtypes.StringDType() and typed.tolist() == ["é ü", ""]
    # An empty region has no element to tell strings from bytes: the layout does.
    want = np.dtypes.StringDType() if atlasds.HAS_STRINGDTYPE else np.dtype(object)
    assert every.read("label", slice(0, 0)).dtype == want
    assert every.read("blob", slice(0, 0)).dtype == object


def test_an_unknown_strings_choice_is_an_invalid_argument(every):
    with pytest.raises(atlasds.InvalidArgument):
        every.read("label", strings="bytes")


def test_a_numeric_read_is_a_writeable_c_contiguous_array(every):
    grid = every.read("grid")
    assert grid.flags.c_contiguous and grid.flags.writeable
    grid[0, 0] = 42.0  # the caller owns it
    assert every.read("grid")[0, 0] == 0.0


GRID = np.array([[10.0 * r + c for c in range(10)] for r in range(5)] + [[-1.0] * 10])


@pytest.mark.parametrize(
    "region",
    [
        (slice(1, 4), slice(2, 9)),
        (2,),
        2,
        (2, 3),
        (-1, slice(None)),
        (-6, -10),
        (Ellipsis, 5),
        (Ellipsis, -1),
        (slice(None), Ellipsis),
        (1, Ellipsis, 2),
        (slice(3, 3),),
        (slice(5, 2),),
        (slice(5, 100), slice(-3, None)),
        (slice(-100, 2), slice(-3, -1)),
        (np.int64(1), slice(0, 2)),
        (slice(np.int32(1), np.uint8(3)),),
        (slice(0, 6, 2),),
        (slice(None, None, 3), slice(1, None, 4)),
        (slice(None, None, -1),),
        (slice(4, 0, -2), slice(None, None, -3)),
        (slice(-1, -7, -1), 0),
        (slice(2, 2, -1),),
        (slice(0, 10**30), slice(-(10**30), None)),
        (1, slice(9, None, -4)),
        (),
        Ellipsis,
    ],
    ids=repr,
)
def test_regions_follow_numpy_basic_indexing(every, region):
    got = every.read("grid", region)
    want = GRID[region]
    assert got.shape == want.shape
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, want)


def test_a_stepped_region_is_an_owned_c_contiguous_array(every):
    got = every.read("grid", (slice(None, None, -2), slice(1, None, 3)))
    assert got.flags.c_contiguous and got.flags.writeable
    np.testing.assert_array_equal(got, GRID[::-2, 1::3])


def test_regions_of_every_kind_of_array_step_the_same_way(every):
    assert every.read("label", slice(None, None, -1), strings="object").tolist() == ["", "é ü", "a"]
    assert every.read("blob", slice(0, 3, 2)).tolist() == [b"\x00\xff", b"\x07"]
    t = every.read("time")
    np.testing.assert_array_equal(every.read("time", slice(None, None, -2)), t[::-2])
    assert every.read("i8", -1) == INTS["i8"][1][-1]
    assert every.read("i8", slice(-1, 0, -2)).tolist() == INTS["i8"][1][-1:0:-2]


@pytest.mark.parametrize(
    ("region", "why"),
    [
        ((6,), "outside"),
        ((-7,), "outside"),
        ((0, 10), "outside"),
        ((slice(None), -11), "outside"),
        ((10**30,), "outside"),
        ((0, 0, 0), "too many indices"),
        ((Ellipsis, 0, 0, 0), "too many indices"),
        ((Ellipsis, Ellipsis), "one ellipsis"),
        ((slice(None, None, 0),), "step cannot be zero"),
        (([0, 1],), "unsupported index"),
        ((np.array([0, 1]),), "unsupported index"),
        ((True,), "boolean"),
        ((np.True_,), "boolean"),
        ((None,), "new axis"),
        (("a",), "unsupported index"),
        ((1.0,), "unsupported index"),
        ((slice(0.5, None),), "unsupported index"),
    ],
    ids=repr,
)
def test_a_region_numpy_basic_indexing_cannot_express_is_invalid(every, region, why):
    with pytest.raises(atlasds.InvalidArgument, match=why):
        every.read("grid", region)


def test_the_same_bad_regions_numpy_refuses_with_an_index_or_value_error():
    # What the documented InvalidArgument stands for: numpy refuses these too.
    for region in [(6,), (-7,), (0, 0, 0), (Ellipsis, Ellipsis)]:
        with pytest.raises(IndexError):
            GRID[region]
    with pytest.raises(ValueError):
        GRID[::0]


def test_an_invalid_region_is_a_value_error_as_well(every):
    with pytest.raises(ValueError):
        every.read("grid", (6,))


def test_a_region_of_a_string_array_reads_only_those_elements(every):
    assert every.read("label", slice(1, 3)).tolist() == ["é ü", ""]
    assert every.read("label", 0).tolist() == "a"


def test_describe_gives_in_one_call_what_attrs_layout_and_array_attrs_give(kinds):
    c = atlasds.Collection.open(kinds)
    for name in c:
        ds = c[name]
        attrs, arrays = ds.describe()
        assert list(attrs.items()) == list(ds.attrs.items())
        assert list(arrays) == ds.arrays
        for array, (layout, array_attrs) in arrays.items():
            alone = ds.layout(array)
            assert dataclasses.replace(layout, fill=None) == dataclasses.replace(alone, fill=None)
            nan = isinstance(alone.fill, float) and np.isnan(alone.fill)
            assert (nan and np.isnan(layout.fill)) or layout.fill == alone.fill
            alone_attrs = ds.array_attrs(array)
            assert list(array_attrs) == list(alone_attrs)
            for key, value in array_attrs.items():
                np.testing.assert_array_equal(value, alone_attrs[key])
                assert type(value) is type(alone_attrs[key])
