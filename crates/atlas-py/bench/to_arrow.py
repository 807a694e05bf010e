"""Time and memory of `Collection.to_arrow` (not a test).

    python crates/atlas-py/bench/to_arrow.py COLLECTION [--vars TEMP,PSAL,PRES] [--where EXPR]

COLLECTION is typically `atlas demo DIR --count 30000` (built with --release,
the extension built in release too). Opens the collection, then builds the
long table of the variables over every dataset (or those `--where` selects)
and prints, for a fresh handle: the time of `to_arrow`, the decoded size of the variables (their
element counts times the element size: what numpy reads would hold), the
table's Arrow size, and the process's peak RSS growth during the call
(peak RSS after, minus RSS before; Linux `VmHWM`/`VmRSS`).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import atlasds


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("collection")
    parser.add_argument("--vars", default="TEMP,PSAL,PRES")
    parser.add_argument("--where")
    args = parser.parse_args()
    variables = args.vars.split(",")
    c = atlasds.Collection.open(args.collection)
    decoded = 0
    for v in variables:
        stats = c.stats(v)
        decoded += stats.count * np.dtype(c[c.names()[0]].layout(v).dtype).itemsize
    import pyarrow  # noqa: F401  (loaded before the baseline)

    # A fresh handle, so the segment footers the sizes above read count in
    # the call's memory as they would for a user's first `to_arrow`.
    del c
    atlasds._native.clear_cache()
    c = atlasds.Collection.open(args.collection)

    try:  # reset the high-water mark to the current RSS (Linux 4.0+)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    before = _status("VmRSS")
    started = time.perf_counter()
    table = c.to_arrow(variables, where=args.where)
    elapsed = time.perf_counter() - started
    peak = _status("VmHWM")
    print(f"to_arrow({variables}) of {len(c)} datasets: {elapsed:.3f} s, {table.num_rows} rows")
    print(f"  decoded data {decoded / 1e6:.1f} MB, Arrow table {table.nbytes / 1e6:.1f} MB")
    print(
        f"  peak RSS growth {(peak - before) / 1e6:.1f} MB "
        f"({(peak - before) / decoded:.2f}x the decoded data)"
    )


if __name__ == "__main__":
    main()
