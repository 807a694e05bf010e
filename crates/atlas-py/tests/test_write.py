"""Writing: `atlasds.write(..., decode="cf")` (and `"raw"`) builds what
`atlas create` builds from the same NetCDF files, in-memory datasets
round-trip, and bad input is refused typed."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import atlasds
from conftest import ROOT, _command

NETCDF = ROOT / "crates" / "atlas-netcdf" / "tests" / "data"
GOOD = sorted((NETCDF / "good").iterdir())
RAW = dict(decode_cf=False, mask_and_scale=False, decode_times=False)


def _canonical(value):
    """Values comparable with ==: NaN as a marker, arrays as lists."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "M":
            value = value.view(np.int64)
        return [_canonical(v) for v in value.reshape(-1).tolist()] + [("shape", value.shape)]
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def describe(location: Path) -> list:
    """Everything a reader sees of a collection: names in ordinal order,
    attributes with their stored dtypes, and per array its layout, attributes,
    values and statistics."""
    c = atlasds.Collection.open(location)
    out = []
    for name in c:
        ds = c[name]
        arrays = []
        for array in ds.arrays:
            layout = c._native.layout(name, array)
            stats = ds.stats(array)
            arrays.append(
                (
                    array,
                    {k: _canonical(v) for k, v in layout.items()},
                    _canonical(c._native.array_attrs(name, array)),
                    _canonical(ds.read(array, strings="object")),
                    None if stats is None else _canonical(list(vars(stats).values())),
                )
            )
        out.append((name, c[name].ordinal, _canonical(c._native.attrs(name)), arrays))
    return out


def unordered(described: list) -> list:
    """The same, with arrays and the coordinate list as sets. xarray keeps
    the file's order of data variables and of index coordinates but puts the
    index coordinates after the rest, so a file whose non-index coordinate
    comes before an index one lists them in another order. Attributes keep
    their order: both readers list them in the file's creation order."""

    def attr(a: list) -> list:
        key, dtype, value = a
        if key == "_pyatlas_coords":
            value = sorted(json.loads(value))
        return [key, dtype, value]

    def array(a: tuple) -> tuple:
        name, layout, attrs, values, stats = a
        return name, layout, attrs, values, stats

    return [
        (name, ordinal, [attr(a) for a in attrs], {a[0]: array(a) for a in arrays})
        for name, ordinal, attrs, arrays in described
    ]


def without_groups(described: list, groups: tuple[str, ...]) -> list:
    """Drops what comes from NetCDF sub-groups (names `group.…`), which
    `xarray.open_dataset` does not open."""

    def inside(key: str) -> bool:
        return any(key.startswith(f"{g}.") for g in groups)

    def attr(a: list) -> list:
        key, dtype, value = a
        if key == "_pyatlas_coords":
            value = json.dumps([c for c in json.loads(value) if not inside(c)])
        return [key, dtype, value]

    out = []
    for name, ordinal, attrs, arrays in described:
        attrs = [attr(a) for a in attrs if not inside(a[0])]
        arrays = [a for a in arrays if not inside(a[0])]
        out.append((name, ordinal, attrs, arrays))
    return out


@pytest.fixture(scope="module")
def created(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`atlas create --decode cf` on the committed NetCDF inputs."""
    path = tmp_path_factory.mktemp("cli") / "collection"
    subprocess.run(
        [*_command("ATLAS_BIN", "atlas-cli"), "-q", "create", "--decode", "cf", str(NETCDF / "good"), str(path)],
        check=True,
    )
    return path


def test_datatrees_of_the_netcdf_inputs_write_what_atlas_create_builds(tmp_path, created):
    trees = {f.name: xr.open_datatree(f, **RAW) for f in GOOD}
    # decode="cf": datasets as the files hold them, mapped as `atlas create` maps files.
    result = atlasds.write(tmp_path / "py", trees, decode="cf")
    assert result.datasets == [f.name for f in GOOD]
    assert unordered(describe(tmp_path / "py")) == unordered(describe(created))


def test_datasets_opened_without_decoding_write_what_atlas_create_builds(tmp_path, created):
    datasets = {f.name: xr.open_dataset(f, **RAW) for f in GOOD}
    atlasds.write(tmp_path / "py", datasets, decode="cf")
    # open_dataset does not open sub-groups, so only those may differ.
    ours = without_groups(describe(tmp_path / "py"), ("profile",))
    assert unordered(ours) == unordered(without_groups(describe(created), ("profile",)))


def test_raw_decoding_keeps_what_the_files_store(tmp_path):
    trees = {f.name: xr.open_datatree(f, **RAW) for f in GOOD}
    atlasds.write(tmp_path / "py", trees, decode="raw")
    cli = tmp_path / "cli"
    subprocess.run(
        [*_command("ATLAS_BIN", "atlas-cli"), "-q", "create", "--decode", "raw", str(NETCDF / "good"), str(cli)],
        check=True,
    )
    assert unordered(describe(tmp_path / "py")) == unordered(describe(cli))


def in_memory() -> xr.Dataset:
    levels = 4
    return xr.Dataset(
        {
            "TEMP": ("N_LEVELS", np.array([10.5, np.nan, 12.25, 13.0], dtype=np.float32), {"units": "degC"}),
            "COUNT": ("N_LEVELS", np.arange(levels, dtype=np.int32)),
            "LABEL": ("N_LEVELS", np.array(["a", "é ü", "", "d"], dtype=object)),
        },
        coords={
            "PRES": ("N_LEVELS", np.linspace(0, 30, levels), {"long_name": "pressure"}),
            "TIME": ("N_LEVELS", np.array(["2024-01-01T00:00", "NaT", "1969-12-31T23:59", "2262-01-01"], dtype="datetime64[ns]")),
            "LATITUDE": ((), 45.5),
        },
        attrs={"title": "in memory", "platform": 6901, "ratio": 0.25},
    )


def test_an_in_memory_dataset_round_trips_through_open_and_the_xarray_backend(tmp_path):
    ds = in_memory()
    atlasds.write(tmp_path / "c", {"p1": ds, "p2": ds.isel(N_LEVELS=slice(0, 2))})
    c = atlasds.Collection.open(tmp_path / "c")
    assert list(c) == ["p1", "p2"]
    np.testing.assert_array_equal(c["p1"].read("TEMP"), ds["TEMP"].values)
    assert c["p1"].read("LABEL", strings="object").tolist() == ["a", "é ü", "", "d"]
    assert c["p1"].attrs["platform"] == 6901 and c["p1"].attrs["title"] == "in memory"
    back = xr.open_dataset(tmp_path / "c", engine="atlas", group="p1").load()
    xr.testing.assert_identical(back, ds)
    assert set(back.coords) == {"PRES", "TIME", "LATITUDE"}
    tree = xr.open_datatree(tmp_path / "c", engine="atlas")
    xr.testing.assert_identical(tree["p2"].to_dataset().load(), ds.isel(N_LEVELS=slice(0, 2)))


def test_the_file_mapping_stores_booleans_as_uint8_with_a_note(tmp_path):
    ds = xr.Dataset({"FLAG": ("n", np.array([True, False, True]))})
    result = atlasds.write(tmp_path / "c", [("b", ds)], decode="cf")
    values = atlasds.Collection.open(tmp_path / "c")["b"].read("FLAG")
    assert values.dtype == np.uint8 and values.tolist() == [1, 0, 1]
    assert any("bool" in n for n in result.notes)


def test_chunks_codec_and_jobs_reach_the_writer(tmp_path):
    ds = in_memory()
    datasets = {f"p{i}": ds for i in range(5)}
    atlasds.write(tmp_path / "c", datasets, codec="lz4", chunks={"TEMP": [2]}, jobs=3)
    c = atlasds.Collection.open(tmp_path / "c")
    assert list(c) == [f"p{i}" for i in range(5)]
    assert c["p3"].layout("TEMP").chunk_shape == (2,)
    assert c["p3"].layout("COUNT").chunk_shape == (4,)


def test_a_file_url_and_storage_options_are_accepted(tmp_path):
    atlasds.write(f"file://{tmp_path / 'c'}", {"p": in_memory()}, storage_options={"anonymous": False})
    assert list(atlasds.Collection.open(tmp_path / "c")) == ["p"]


def nothing_written(path: Path) -> bool:
    return not (path / "data.atlas").exists()


def test_a_variable_of_an_unsupported_type_is_an_invalid_argument_unless_skipped(tmp_path):
    ds = xr.Dataset({"Z": ("n", np.array([1 + 2j, 3j])), "T": ("n", np.array([1.0, 2.0]))})
    with pytest.raises(atlasds.InvalidArgument, match="complex128"):
        atlasds.write(tmp_path / "a", {"d": ds})
    assert nothing_written(tmp_path / "a")
    result = atlasds.write(tmp_path / "b", {"d": ds}, skip_unsupported=True)
    assert result.skipped == [("d", "Z", "complex128")]
    assert atlasds.Collection.open(tmp_path / "b")["d"].arrays == ["T"]


@pytest.mark.parametrize(
    "datasets",
    [
        {"d": {"not": "a dataset"}},
        [("d",)],
        [(1, xr.Dataset())],
        [("d", xr.Dataset()), ("d", xr.Dataset())],
        {"_hidden": xr.Dataset()},
        {"d": xr.Dataset(attrs={"bad": {"nested": 1}})},
        {"d": xr.Dataset({"_x": ("n", [1.0])})},
        "not a mapping",
    ],
    ids=["not-a-dataset", "not-a-pair", "name-not-str", "duplicate-name", "invalid-name",
         "unstorable-attribute", "invalid-array-name", "a-string"],
)
def test_bad_input_is_an_invalid_argument_and_writes_nothing(tmp_path, datasets):
    with pytest.raises(atlasds.InvalidArgument):
        atlasds.write(tmp_path / "c", datasets)
    assert nothing_written(tmp_path / "c")


@pytest.mark.parametrize(
    "options",
    [{"decode": "cf-ish"}, {"codec": "gzip"}, {"jobs": 0}, {"chunks": {"T": [0]}}, {"zstd_level": 99}],
)
def test_bad_options_are_invalid_arguments(tmp_path, options):
    with pytest.raises(atlasds.InvalidArgument):
        atlasds.write(tmp_path / "c", {"d": in_memory()}, **options)
    assert nothing_written(tmp_path / "c")


def test_an_existing_collection_is_never_overwritten(tmp_path):
    atlasds.write(tmp_path / "c", {"d": in_memory()})
    with pytest.raises(atlasds.InvalidArgument, match="already exists"):
        atlasds.write(tmp_path / "c", {"e": in_memory()})
    assert list(atlasds.Collection.open(tmp_path / "c")) == ["d"]


def test_a_time_variable_without_a_nanosecond_form_is_written_undecoded_and_reported(tmp_path):
    # `time` reaches 2508 (days since 1961) and `t360` is on the 360_day
    # calendar: neither has a datetime64[ns] form, so the CF mapping keeps
    # their numbers with units/calendar and says so; `decodes` is decoded.
    source = NETCDF / "conventions" / "undecodable_time.nc"
    result = atlasds.write(tmp_path / "c", {"u.nc": xr.open_dataset(source, **RAW)}, decode="cf")
    assert sorted((d, v) for d, v, _ in result.undecoded) == [("u.nc", "t360"), ("u.nc", "time")]
    assert all(reason for _, _, reason in result.undecoded)
    ds = atlasds.Collection.open(tmp_path / "c")["u.nc"]
    assert ds.read("time").dtype == np.int32
    assert ds.array_attrs("time")["units"] == "days since 1961-01-01"
    assert ds.read("decodes").dtype.kind == "M"
