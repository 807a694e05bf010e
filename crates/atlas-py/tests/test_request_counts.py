"""What the collection-wide views ask storage for, counted by the handle's
counting layer (`Collection.open(count_requests=True)`, `request_stats`):
opening a ragged view reads segment footers only, and a box-and-window
`where=` reads the blocks of the profiles it selects, not the others'."""

from __future__ import annotations

import pickle
import subprocess
from pathlib import Path

import numpy as np
import pytest

import atlasds
from conftest import _command, atlas_json

ARRAYS = ["TEMP", "PSAL", "PRES"]
PER_PROFILE = ["JULD", "LATITUDE", "LONGITUDE"]
BLOCK_BYTES = 512
"""Target size of a compressed block of the rewritten collection: a few profiles each
(the default, 512 KiB, would hold all of them)."""


PREFETCH = 1024
"""A segment's first read: its last KiB (then the rest of its footer), so that
no data block comes along with a footer, however small the segment."""


PROBE = 64 * 1024
"""The container's last bytes, which opening the collection reads: a segment
lying in them needs no read of its footer's end."""


def _segments(path: Path) -> tuple[list[tuple[int, int]], int]:
    """Each segment of the collection's container as (start, end), and where
    the open's probe of the container's end begins (`atlas info`)."""
    info = atlas_json("info", str(path))
    segments = [(v["offset"], v["offset"] + v["len"]) for v in info["variables"]]
    return segments, info["container_bytes"] - PROBE


def _open(path: Path) -> atlasds.Collection:
    """A counting handle on the footer path (the index path is test_index.py's)."""
    return atlasds.Collection.open(
        path, count_requests=True, segment_prefetch_bytes=PREFETCH, dataset_index=False
    )


def _ranges(stats: dict) -> list[tuple[int, int]]:
    out = []
    for _, offset, length in stats["read_log"]:
        assert offset is not None and length is not None, "a ranged read"
        out.append((offset, offset + length))
    return out


def _footers(stats: dict, layout: tuple[list[tuple[int, int]], int]) -> dict[int, int]:
    """Checks that every read lies in a segment and that the reads of each
    segment join into one range ending at its end (its footer and trailer:
    a segment's data comes first), or where the bytes the open held begin;
    returns where that range starts, by segment end."""
    segments, held = layout
    touched: dict[int, list[tuple[int, int]]] = {}
    for start, end in _ranges(stats):
        owner = [s for s in segments if s[0] <= start and end <= s[1]]
        assert len(owner) == 1, f"read {start}..{end} lies inside one segment"
        touched.setdefault(owner[0][1], []).append((start, end))
    footers = {}
    for seg_end, reads in touched.items():
        reads.sort()
        low, high = reads[0]
        for start, end in reads[1:]:
            assert start <= high, f"the reads of the segment ending at {seg_end} leave a gap: {reads}"
            high = max(high, end)
        assert high == seg_end or high >= held, f"the reads of the segment ending at {seg_end} stop short: {reads}"
        footers[seg_end] = low
    return footers


def _before_footers(
    stats: dict, footers: dict[int, int], layout: tuple[list[tuple[int, int]], int]
) -> list[tuple[int, int]]:
    """The reads, each checked to lie in a segment before the footer range
    read before (a block, not a footer)."""
    segments, _ = layout
    reads = _ranges(stats)
    for start, end in reads:
        seg_end = next(e for s, e in segments if s <= start < e)
        assert end <= footers[seg_end], f"read {start}..{end} reaches the footer read at {footers[seg_end]}"
    return reads


@pytest.fixture(scope="module")
def small_blocks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """400 demo profiles (8 floats of 50 cycles) rewritten in 512-byte blocks,
    so a profile's arrays share a block with a few neighbours only."""
    base = tmp_path_factory.mktemp("blocks")
    demo, small = base / "demo", base / "small"
    atlas = _command("ATLAS_BIN", "atlas-cli")
    subprocess.run([*atlas, "-q", "demo", str(demo), "--count", "400"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(
        [*atlas, "-q", "rewrite", str(demo), str(small), "--block-size", str(BLOCK_BYTES)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return small


def test_a_handle_opened_without_counting_has_no_request_stats(demo):
    assert atlasds.Collection.open(demo).request_stats() is None


def test_request_stats_count_reads_and_reset(demo):
    c = atlasds.Collection.open(demo, count_requests=True)
    opened = c.request_stats(reset=True)
    assert opened["reads"] >= 1 and opened["bytes_read"] > 0, "the open read the container's tail"
    assert len(opened["read_log"]) == opened["reads"]
    assert c.request_stats()["reads"] == 0
    c[c.names()[0]].read("TEMP")
    after = c.request_stats()
    assert after["reads"] >= 1
    assert after["bytes_read"] == sum(length for _, _, length in after["read_log"])
    again = pickle.loads(pickle.dumps(c))
    assert again.request_stats() is not None, "a counting handle unpickles as one"


def test_opening_the_ragged_view_reads_segment_footers_only(demo):
    segments = _segments(demo)
    c = _open(demo)
    c.request_stats(reset=True)
    ds = atlasds.open_dataset(c, [*ARRAYS, *PER_PROFILE], layout="ragged", attrs=["platform_number"])
    opened = c.request_stats(reset=True)
    assert ds.sizes["profile"] == len(c)
    assert opened["stats"] == opened["lists"] == 0
    footers = _footers(opened, segments)
    # The variables' segments (and `platform_number`'s `_datasets`), less
    # those lying wholly in the bytes the collection's open already holds.
    held = sum(1 for start, _ in segments[0] if start >= segments[1])
    assert len(footers) >= len(ARRAYS) + len(PER_PROFILE) + 1 - held, footers
    ds.load()
    loaded = _before_footers(c.request_stats(), footers, segments)
    assert loaded, "loading reads the blocks the open left alone"


def _box_and_window(c: atlasds.Collection) -> tuple[str, list[str]]:
    """A box-and-window expression, and the names it must select computed with numpy
    from the per-profile values."""
    meta = atlasds.open_dataset(c, PER_PROFILE, layout="ragged").load()
    juld, lat, lon = (meta[v].values for v in PER_PROFILE)
    names = np.asarray(meta["dataset"].values)
    # A nine-day window (floats surface every ten days: one cycle of each
    # float at most) in the middle of the record, and the western half of
    # the demo's latitude band.
    start = np.sort(juld)[len(juld) // 2]
    end = start + np.timedelta64(9, "D")
    box = (-60.0, 60.0, -180.0, 0.0)
    inside = (lat >= box[0]) & (lat <= box[1]) & (lon >= box[2]) & (lon <= box[3])
    inside &= (juld >= start) & (juld <= end)

    def day(t: np.datetime64) -> str:
        return np.datetime_as_string(t, unit="s") + "Z"

    where = (
        f"LATITUDE between {box[0]} {box[1]} and LONGITUDE between {box[2]} {box[3]} "
        f"and JULD between {day(start)} {day(end)}"
    )
    return where, names[inside].tolist()


def test_a_box_and_window_where_reads_only_the_selected_profiles_blocks(small_blocks):
    segments = _segments(small_blocks)
    where, expected = _box_and_window(atlasds.Collection.open(small_blocks))
    assert 1 <= len(expected) <= 8, f"the window holds one cycle per float at most: {expected}"
    variables = [*ARRAYS, *PER_PROFILE]

    def load(ds) -> None:
        # The profile arrays only: the selected profiles lie 50 apart, never
        # in neighbouring blocks (which the segment reader would read ahead of).
        for v in ARRAYS:
            ds[v].variable.load()

    everything = _open(small_blocks)
    everything.request_stats(reset=True)
    atlasds.open_dataset(everything, variables, layout="ragged")
    footers = _footers(everything.request_stats(reset=True), segments)
    load(atlasds.open_dataset(everything, variables, layout="ragged"))
    all_bytes = sum(e - s for s, e in _before_footers(everything.request_stats(), footers, segments))

    c = _open(small_blocks)
    c.request_stats(reset=True)
    ds = atlasds.open_dataset(c, variables, where=where, layout="ragged")
    assert ds["dataset"].values.tolist() == expected
    footers = _footers(c.request_stats(reset=True), segments)
    load(ds)
    reads = _before_footers(c.request_stats(), footers, segments)
    read_bytes = sum(e - s for s, e in reads)
    # One block per selected profile and array, each about the target size
    # (a block closes once past it, or holds one chunk: allow four times).
    assert 1 <= len(reads) <= len(expected) * len(ARRAYS), reads
    assert read_bytes <= len(expected) * len(ARRAYS) * 4 * BLOCK_BYTES, (read_bytes, reads)
    assert read_bytes * 10 < all_bytes, (read_bytes, all_bytes)
