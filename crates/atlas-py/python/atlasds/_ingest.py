"""Ingest: `atlasds.ingest(sources, destination, client=...)`, NetCDF files into
a collection set, one member per task, on dask.distributed or local threads.

The sorted file list is cut into chunks of at most `datasets_per_member`
files. Each chunk is one task: the Rust ingest `atlas create` runs (GIL
released) writes it as one *uncommitted* member of the set. When every task
has succeeded, the caller commits all the members in one manifest update.

Member ids are fixed before the first task runs (one run prefix, the chunk
index in the last digits), so a task that dask runs a second time (its
worker was lost) rewrites the same member from scratch instead of adding a
copy, and each id is committed once. If any task fails, nothing is committed
and every member of the run is removed.
"""

from __future__ import annotations

import concurrent.futures
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence, Union

from . import _native
from ._collection import _location, _storage
from ._errors import InvalidArgument

if TYPE_CHECKING:
    import distributed

__all__ = ["IngestResult", "ingest"]

Source = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class IngestResult:
    """What `ingest` did."""

    written: list[str]
    """The files that became datasets, in sorted path order."""
    skipped: list[tuple[str, str]]
    """`(file, reason)` of each file left out (only with `skip_errors=True`)."""
    members: list[str]
    """Ids of the members committed, in commit (chunk) order."""
    datasets: int
    """Datasets committed."""
    bytes: int
    """Bytes of the members' containers."""
    input_bytes: int
    """Bytes of the NetCDF files written."""
    seconds: float
    """Wall time, from listing the files to the commit."""
    generation: int | None
    """The set manifest's generation after the commit (None: nothing to commit)."""
    undecoded: list[tuple[str, str, str]] = field(default_factory=list)
    """`(dataset, variable, reason)` of each time variable stored undecoded."""
    notes: list[str] = field(default_factory=list)
    """Choices the mapping made that you should know (`dataset: message`)."""

    @property
    def files_per_second(self) -> float:
        return len(self.written) / self.seconds if self.seconds > 0 else 0.0


def _files(
    sources: Iterable[Source] | Source, storage: list[tuple[str, str]], anonymous: bool
) -> list[str]:
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    paths: list[str] = []
    for source in sources:
        text = os.fspath(source)
        # URLs (s3://, gs://, az://, http(s)://) are listed by the Rust side
        # with the storage options; file:// and plain paths are local.
        if "://" in text and not text.startswith("file://"):
            paths.append(text)
        else:
            paths.append(os.path.abspath(text.removeprefix("file://")))
    if not paths:
        raise InvalidArgument("no sources given")
    return _native.discover(paths, True, storage, anonymous)


def _chunks(files: list[str], per_member: int) -> list[list[str]]:
    chunks = [files[i : i + per_member] for i in range(0, len(files), per_member)]
    # Within a member the ingest refuses (or skips) two files of one name; in
    # two members the later would silently replace the earlier.
    seen: dict[str, tuple[int, str]] = {}
    for index, chunk in enumerate(chunks):
        for path in chunk:
            name = Path(path).name
            first = seen.setdefault(name, (index, path))
            if first[0] != index:
                raise InvalidArgument(
                    f"nothing written: {first[1]} and {path} both give dataset name "
                    f"{name!r} and would go to different members"
                )
    return chunks


def _run_on_client(
    client: distributed.Client,
    chunks: list[list[str]],
    location: str,
    ids: list[str],
    prefix: str,
    options: dict[str, Any],
) -> list[dict[str, Any]]:
    import distributed

    keys = [f"atlas-ingest-{i}-{prefix}" for i in range(len(chunks))]
    # One task: a chunk's files into its uncommitted member (an earlier
    # attempt at the same id is replaced).
    futures = client.map(
        _native.ingest_member,
        chunks,
        [location] * len(chunks),
        ids,
        key=keys,
        pure=False,
        **options,
    )
    # Every task settles before anything is decided: a task still running
    # after a failure would write its member after the cleanup.
    distributed.wait(futures)
    failed = [f for f in futures if f.status != "finished"]
    if failed:
        try:
            failed[0].result()
        finally:
            client.cancel(futures)
        raise RuntimeError(f"ingest task {failed[0].key} ended as {failed[0].status}")
    return client.gather(futures)


def _run_on_threads(
    chunks: list[list[str]],
    location: str,
    ids: list[str],
    options: dict[str, Any],
    workers: int,
) -> list[dict[str, Any]]:
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(_native.ingest_member, chunk, location, member, **options)
            for chunk, member in zip(chunks, ids)
        ]
        # Every task settles before anything is decided (see above).
        concurrent.futures.wait(futures)
    return [f.result() for f in futures]


def ingest(
    sources: Iterable[Source] | Source,
    destination: str | os.PathLike[str],
    *,
    client: distributed.Client | None = None,
    datasets_per_member: int = 1000,
    decode: Literal["cf", "raw"] = "cf",
    jobs: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    skip_errors: bool = False,
    sort_by: str | Sequence[str] | None = None,
) -> IngestResult:
    """Ingests NetCDF files into the collection set at `destination` (created
    if absent; an existing set gets new members), one member per
    `datasets_per_member` files, with the mapping `atlas create` applies.

    `sources` are files, globs (`*`, `?` in the last component) or
    directories (scanned for NetCDF suffixes): local paths every worker can
    read, or URLs (`s3://`, `gs://`, `az://`, `http(s)://`; an HTTP server
    cannot be listed, so give it file URLs) that each task fetches itself
    with `storage_options`, each file retried on its own. With a `dask.distributed` `client`, each member is one task (keys
    `atlas-ingest-<i>-<run>`) on the cluster, `jobs` files decoding at once
    inside each task (default 1); without one, `jobs` members (default: the
    CPU count) are written at once on local threads. Either way the members
    are committed together by one manifest update once every task has
    succeeded.

    All or nothing: if a task fails (without `skip_errors`), nothing is
    committed, the members written are removed, and the task's error is
    raised. A task dask retries after losing its worker rewrites its own
    member, so every dataset is committed once. With `skip_errors`, files
    that fail are left out and listed in `IngestResult.skipped`.

    With `sort_by` (keys as `atlas create --sort-by` takes them: a variable
    holding one value per file such as `"JULD"`, or `"hilbert"` /
    `"hilbert:LAT:LON[:TIME]"`; several sort in turn), the files are first
    put in key order by one pass over their key variables, here on the
    client, and the members cut in that order, so that each holds a narrow
    range of the keys. A key no file holds, or one holding several values in
    a file, raises `InvalidArgument` before anything is written.
    """
    if datasets_per_member < 1:
        raise InvalidArgument(f"datasets_per_member must be at least 1, got {datasets_per_member}")
    if decode not in ("cf", "raw"):
        raise InvalidArgument(f"decode must be 'cf' or 'raw', not {decode!r}")
    if jobs is not None and jobs < 1:
        raise InvalidArgument(f"jobs must be at least 1, got {jobs}")
    started = time.perf_counter()
    location = _location(destination)
    sources = [sources] if isinstance(sources, (str, os.PathLike)) else list(sources)
    storage, anonymous = _storage(
        dict(storage_options) if storage_options else None,
        location,
        *[os.fspath(s) for s in sources],
    )
    files = _files(sources, storage, anonymous)
    if sort_by is not None:
        keys = sort_by if isinstance(sort_by, str) else ",".join(sort_by)
        files = _native.order_files(
            files,
            keys,
            decode=decode,
            skip_errors=skip_errors,
            storage=storage,
            anonymous=anonymous,
            jobs=jobs or os.cpu_count() or 1,
        )
    chunks = _chunks(files, datasets_per_member)
    prefix, ids = _native.run_member_ids(len(chunks))

    options: dict[str, Any] = dict(
        decode=decode,
        skip_errors=skip_errors,
        storage=storage,
        anonymous=anonymous,
    )
    try:
        if client is not None:
            reports = _run_on_client(
                client, chunks, location, ids, prefix, {**options, "jobs": jobs or 1}
            )
        else:
            workers = jobs or os.cpu_count() or 1
            reports = _run_on_threads(chunks, location, ids, {**options, "jobs": 1}, workers)
        committed = [r["member"] for r in reports if r["datasets"] > 0]
        generation = (
            _native.commit_members(location, committed, storage, anonymous) if committed else None
        )
    except BaseException:
        # Nothing is committed: remove every member the run wrote (committed
        # members are never removed, whatever the prefix names).
        try:
            _native.remove_members(location, prefix=prefix, storage=storage, anonymous=anonymous)
        except Exception:  # the task's error is the one to raise
            pass
        raise
    # Members left out of the commit (every file skipped).
    _native.remove_members(location, prefix=prefix, storage=storage, anonymous=anonymous)

    return IngestResult(
        written=[path for r in reports for path, _ in r["written"]],
        skipped=[tuple(s) for r in reports for s in r["skipped"]],
        members=committed,
        datasets=sum(r["datasets"] for r in reports if r["member"] in committed),
        bytes=sum(r["bytes"] for r in reports if r["member"] in committed),
        input_bytes=sum(r["input_bytes"] for r in reports),
        seconds=time.perf_counter() - started,
        generation=generation,
        undecoded=[tuple(u) for r in reports for u in r["undecoded"]],
        notes=[n for r in reports for n in r["notes"]],
    )
