"""The example of docs/python.md: examples/python/profile_map.py draws a map
and a temperature section of the demo profiles a box and season select."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import atlasds
from conftest import ROOT

pytest.importorskip("matplotlib")

SCRIPT = ROOT / "examples" / "python" / "profile_map.py"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _script():
    spec = importlib.util.spec_from_file_location("profile_map", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _is_png(data: bytes) -> bool:
    # The signature, then the IHDR chunk first (length 13), as every PNG starts.
    return data[:8] == PNG_SIGNATURE and data[8:16] == b"\x00\x00\x00\x0dIHDR"


def test_the_profile_map_example_draws_a_map_and_a_section_of_the_selection(demo, tmp_path, capsys):
    # A box around the first float's first twenty positions and the window of
    # those cycles: the selection is known to hold them.
    meta = atlasds.open_dataset(demo, ["LATITUDE", "LONGITUDE", "JULD"], layout="ragged").load()
    lat, lon, juld = (meta[v].values[:20] for v in ("LATITUDE", "LONGITUDE", "JULD"))
    box = [lat.min() - 0.5, lat.max() + 0.5, lon.min() - 0.5, lon.max() + 0.5]
    start = np.datetime_as_string(juld.min(), unit="D")
    end = np.datetime_as_string(juld.max() + np.timedelta64(1, "D"), unit="D")
    script = _script()
    out = tmp_path / "pictures"
    args = [str(demo), "--out", str(out), "--box", *map(str, box), "--start", start, "--end", end]
    assert script.main(args) == 0
    printed = capsys.readouterr().out.splitlines()
    profiles = int(printed[2].split()[0])
    assert profiles >= 20, printed
    expected = atlasds.Collection.open(demo).select(script.where(tuple(box), start, end))
    assert profiles == len(expected)
    for name in (script.MAP_FILE, script.SECTION_FILE):
        data = (out / name).read_bytes()
        assert _is_png(data), name
        assert len(data) > 10_000, f"{name} holds a picture, not an empty canvas ({len(data)} bytes)"


def test_the_profile_map_example_refuses_an_empty_selection(demo, tmp_path):
    script = _script()
    args = [str(demo), "--out", str(tmp_path), "--box", "80", "85", "0", "1"]
    with pytest.raises(SystemExit, match="no profile"):
        script.main(args)
    assert not list(tmp_path.iterdir()), "nothing drawn"
