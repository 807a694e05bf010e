"""Checks a Parquet file written by `atlas catalogue --format parquet` against
the NDJSON export of the same catalogue: same columns in the same order, the
expected pyarrow types, and the same rows.

    check_catalogue_parquet.py FILE.parquet FILE.ndjson TYPES.json

TYPES.json maps column names to pyarrow type strings (str(pa.DataType)).
Exits 1 with a message on the first difference.
"""

import datetime
import json
import math
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def fail(message):
    print(f"check_catalogue_parquet: {message}", file=sys.stderr)
    sys.exit(1)


def iso(ns):
    seconds, frac = divmod(ns, 10**9)
    when = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if frac:
        text += "." + f"{frac:09d}".rstrip("0")
    return text + "Z"


def same(dtype, got, want):
    """Whether the Parquet cell `got` is the NDJSON cell `want` for a column of `dtype`."""
    if got is None or want is None:
        return got is None and want is None
    if pa.types.is_timestamp(dtype):
        return iso(got) == want
    if pa.types.is_binary(dtype):
        return list(got) == want
    if pa.types.is_floating(dtype):
        if isinstance(want, str):
            return {"NaN": math.isnan(got), "inf": got == math.inf, "-inf": got == -math.inf}[want]
        if pa.types.is_float32(dtype):
            return pa.scalar(got, pa.float32()) == pa.scalar(want, pa.float32())
        return got == want
    if pa.types.is_list(dtype):
        return len(got) == len(want) and all(
            same(dtype.value_type, g, w) for g, w in zip(got, want)
        )
    return got == want


def main(parquet_path, ndjson_path, types_path):
    table = pq.read_table(parquet_path)
    with open(types_path) as f:
        want_types = json.load(f)
    with open(ndjson_path) as f:
        want_rows = [json.loads(line) for line in f if line.strip()]
    names = table.schema.names
    if want_rows and names != list(want_rows[0].keys()):
        fail(f"columns {names} != NDJSON keys {list(want_rows[0].keys())}")
    for name, want in want_types.items():
        if name not in names:
            fail(f"no column {name!r}")
        got = str(table.schema.field(name).type)
        if got != want:
            fail(f"column {name!r} is {got}, expected {want}")
    if table.num_rows != len(want_rows):
        fail(f"{table.num_rows} rows, NDJSON has {len(want_rows)}")
    # Timestamps as int64 nanoseconds: Python datetimes would drop them.
    columns = {}
    for i, name in enumerate(names):
        column = table.column(i)
        dtype = column.type
        if pa.types.is_timestamp(dtype):
            column = column.cast(pa.int64())
        columns[name] = (dtype, column.to_pylist())
    for row, want in enumerate(want_rows):
        for name, (dtype, values) in columns.items():
            if not same(dtype, values[row], want[name]):
                fail(f"row {row} column {name!r}: {values[row]!r} != {want[name]!r}")
    print(f"ok: {table.num_rows} rows, {len(names)} columns")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        fail(__doc__)
    main(*sys.argv[1:])
