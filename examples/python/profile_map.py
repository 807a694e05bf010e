"""Where the profiles of a box and season are, and what temperature they saw.

    python examples/python/profile_map.py COLLECTION [--out DIR]
        [--box LAT_MIN LAT_MAX LON_MIN LON_MAX] [--start DATE] [--end DATE]

Opens COLLECTION (a path or URL; `atlas demo ./argo` writes an Argo-like one)
as one ragged xarray Dataset of the profiles that the box and the time window
select (`atlasds.open_dataset(..., where=...)`: only those profiles are read)
and saves two pictures in DIR:

- ``profile_map.png``: each profile's position, coloured by its date, inside
  the box;
- ``temperature_section.png``: temperature against pressure (depth), each
  profile a column at its latitude.

Needs matplotlib (drawn with the Agg backend: no display). Prints the two
paths and how many profiles and levels they show.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import atlasds  # noqa: E402

MAP_FILE = "profile_map.png"
SECTION_FILE = "temperature_section.png"


def where(box: tuple[float, float, float, float], start: str, end: str) -> str:
    """The `atlas --where` expression of a latitude/longitude box and a time window."""
    lat0, lat1, lon0, lon1 = box
    return (
        f"LATITUDE between {lat0} {lat1} and LONGITUDE between {lon0} {lon1} "
        f"and JULD between {start} {end}"
    )


def draw(
    collection: str | Path,
    out: str | Path,
    box: tuple[float, float, float, float],
    start: str,
    end: str,
) -> tuple[Path, Path, int, int]:
    """Draws both pictures into `out`; returns their paths, the profiles and the levels shown."""
    ds = atlasds.open_dataset(
        collection,
        ["TEMP", "PRES", "JULD", "LATITUDE", "LONGITUDE"],
        where=where(box, start, end),
        layout="ragged",
        attrs=["platform_number"],
    )
    if ds.sizes["profile"] == 0:
        raise SystemExit(f"no profile of {collection} lies in {box} between {start} and {end}")
    ds = ds.load()  # the selected profiles only: a few large reads
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    lat0, lat1, lon0, lon1 = box

    # (a) positions coloured by date.
    fig, ax = plt.subplots(figsize=(7, 5), layout="constrained")
    dates = mdates.date2num(ds["JULD"].values)
    points = ax.scatter(ds["LONGITUDE"], ds["LATITUDE"], c=dates, s=14, cmap="viridis")
    bar = fig.colorbar(points, ax=ax, label="date of the profile")
    bar.ax.yaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d"))
    ax.add_patch(
        plt.Rectangle((lon0, lat0), lon1 - lon0, lat1 - lat0, fill=False, ls="--", color="0.4")
    )
    pad_lon, pad_lat = 0.05 * (lon1 - lon0) + 0.5, 0.05 * (lat1 - lat0) + 0.5
    ax.set_xlim(lon0 - pad_lon, lon1 + pad_lon)
    ax.set_ylim(lat0 - pad_lat, lat1 + pad_lat)
    ax.set_xlabel("longitude (degrees east)")
    ax.set_ylabel("latitude (degrees north)")
    floats = len(np.unique(ds["platform_number"].values))
    ax.set_title(f"{ds.sizes['profile']} profiles of {floats} floats, {start} to {end}")
    ax.grid(True, lw=0.3)
    map_path = out / MAP_FILE
    fig.savefig(map_path, dpi=90)
    plt.close(fig)

    # (b) temperature against pressure, each profile at its latitude: the
    # ragged layout gives every level once, `row_size` says whose it is.
    lat_of_obs = np.repeat(ds["LATITUDE"].values, ds["row_size"].values)
    fig, ax = plt.subplots(figsize=(7, 5), layout="constrained")
    cells = ax.scatter(lat_of_obs, ds["PRES"], c=ds["TEMP"], s=4, cmap="RdYlBu_r")
    fig.colorbar(cells, ax=ax, label=f"temperature ({ds['TEMP'].attrs.get('units', '')})")
    ax.invert_yaxis()
    ax.set_xlabel("latitude (degrees north)")
    ax.set_ylabel(f"pressure ({ds['PRES'].attrs.get('units', '')}), deeper down")
    ax.set_title(f"temperature section, {ds.sizes['obs']} levels")
    section_path = out / SECTION_FILE
    fig.savefig(section_path, dpi=90)
    plt.close(fig)
    return map_path, section_path, int(ds.sizes["profile"]), int(ds.sizes["obs"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("collection", help="path or URL of the collection")
    parser.add_argument("--out", default=".", help="directory for the two PNG files")
    parser.add_argument(
        "--box",
        nargs=4,
        type=float,
        default=(-30.0, 30.0, -180.0, 180.0),
        metavar=("LAT_MIN", "LAT_MAX", "LON_MIN", "LON_MAX"),
        help="the box, degrees (default: the tropics and subtropics)",
    )
    parser.add_argument("--start", default="2020-03-01", help="first day (UTC), YYYY-MM-DD")
    parser.add_argument("--end", default="2020-09-01", help="last instant (UTC), YYYY-MM-DD")
    args = parser.parse_args(argv)
    map_path, section_path, profiles, levels = draw(
        args.collection, args.out, tuple(args.box), args.start, args.end
    )
    print(f"{map_path}\n{section_path}\n{profiles} profiles, {levels} levels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
