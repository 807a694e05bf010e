"""`atlasds.sync`: a collection set kept in step with an archive's index (Argo
GDAC format), as `atlas sync` does. Inputs: the Argo-like profiles of
`crates/atlas-netcdf/tests/data/argo` (scripts/make-argo-profiles.py) laid
out as a GDAC tree, one tree and index per day."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import atlasds
from conftest import ROOT, _command

ARGO = ROOT / "crates" / "atlas-netcdf" / "tests" / "data" / "argo"
FLOAT = "coriolis/6900000/profiles"
HEADER = "file,date,latitude,longitude,ocean,profiler_type,institution,date_update"


def _day(path: Path, entries: list[tuple[str, int, str]]) -> Path:
    folder = path / "dac" / FLOAT
    folder.mkdir(parents=True)
    lines = ["# Title : Profile directory file of the Argo GDAC", HEADER]
    for name, source, date_update in entries:
        shutil.copy(ARGO / f"R6900000_{source:03d}.nc", folder / name)
        lines.append(f"{FLOAT}/{name},20240101120000,12.5,-30.25,A,846,IF,{date_update}")
    index = path / "ar_index_global_prof.txt"
    index.write_text("\n".join(lines) + "\n")
    return index


@pytest.fixture
def days(tmp_path: Path) -> tuple[Path, Path]:
    day1 = _day(
        tmp_path / "day1",
        [
            ("R6900000_001.nc", 1, "20240101000000"),
            ("R6900000_002.nc", 2, "20240101000000"),
            ("D6900000_003.nc", 3, "20240101000000"),
            ("R6900000_004.nc", 4, "20240101000000"),
        ],
    )
    day2 = _day(
        tmp_path / "day2",
        [
            ("R6900000_001.nc", 1, "20240101000000"),
            ("D6900000_002.nc", 4, "20240102000000"),
            ("D6900000_003.nc", 2, "20240102000000"),
            ("R6900000_005.nc", 3, "20240102000000"),
        ],
    )
    return day1, day2


def test_two_days_of_sync_equal_create_of_the_second_day_and_a_rerun_commits_nothing(
    days: tuple[Path, Path], tmp_path: Path
) -> None:
    day1, day2 = days
    target = tmp_path / "set"
    first = atlasds.sync(target, day1)
    assert [a[0] for a in first.added] == [
        "D6900000_003.nc",
        "R6900000_001.nc",
        "R6900000_002.nc",
        "R6900000_004.nc",
    ]
    assert first.generation == 1

    plan = atlasds.sync(target, day2, dry_run=True)
    assert plan.members == [] and plan.generation is None
    assert atlasds.Collection.open(target).generation == 1

    second = atlasds.sync(target, day2, jobs=2, max_datasets=2)
    assert [a[0] for a in second.added] == ["R6900000_005.nc"]
    assert [(r[0], r[1], r[5]) for r in second.replaced] == [
        ("R6900000_002.nc", "D6900000_002.nc", "delayed_mode"),
        ("D6900000_003.nc", "D6900000_003.nc", "revised"),
    ]
    assert [r[0] for r in second.removed] == ["R6900000_004.nc"]
    assert second.unchanged == 1 and second.generation == 2
    assert len(second.members) == 2  # three files, two a member
    assert plan.added == second.added and plan.replaced == second.replaced

    reference = tmp_path / "reference"
    subprocess.run(
        [*_command("ATLAS_BIN", "atlas-cli"), "-q", "create", str(day2.parent / "dac"), str(reference)],
        check=True,
    )
    synced = atlasds.Collection.open(target)
    created = atlasds.Collection.open(reference)
    assert sorted(synced.names()) == sorted(created.names())
    for name in created.names():
        a, b = synced[name], created[name]
        attrs = {k: v for k, v in a.attrs.items() if not k.startswith("_atlas_")}
        assert attrs == b.attrs
        assert a.attrs["_atlas_source"] == f"{FLOAT}/{name}"
        assert a.arrays == b.arrays
        for array in b.arrays:
            assert a.array_attrs(array) == b.array_attrs(array)
        for array in b.arrays:
            x, y = a.read(array), b.read(array)
            assert x.dtype == y.dtype and x.shape == y.shape
            assert np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"), (name, array)

    rerun = atlasds.sync(target, day2)
    assert (rerun.added, rerun.replaced, rerun.removed) == ([], [], [])
    assert rerun.unchanged == 4 and rerun.members == [] and rerun.generation is None
    assert atlasds.Collection.open(target).generation == 2


def test_a_malformed_index_raises_naming_its_line_and_commits_nothing(
    days: tuple[Path, Path], tmp_path: Path
) -> None:
    day1, _ = days
    target = tmp_path / "set"
    atlasds.sync(target, day1)
    bad = tmp_path / "bad.txt"
    bad.write_text(
        f"{HEADER}\n{FLOAT}/R6900000_001.nc,,,,A,846,IF,20240101000000\n"
        f"{FLOAT}/R6900000_009.nc,,91.x,,A,846,IF,20240101000000\n"
    )
    with pytest.raises(atlasds.InvalidArgument, match="line 3: field latitude"):
        atlasds.sync(target, bad, root=day1.parent / "dac")
    assert atlasds.Collection.open(target).generation == 1
    assert len(list((target / "members").iterdir())) == 1
