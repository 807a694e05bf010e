"""Sync: `atlasds.sync(set, index)`, a collection set kept in step with an
archive's index (Argo GDAC format), as `atlas sync` does: added, replaced
(revised, or a real-time file's delayed-mode file) and removed datasets in one
commit. The work runs in Rust with the GIL released; see docs/sync.md."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Literal, Mapping, Optional

from . import _native
from ._collection import _location, _storage
from ._errors import InvalidArgument

__all__ = ["SyncResult", "sync"]


@dataclass(frozen=True)
class SyncResult:
    """What `sync` planned (`dry_run=True`) or did."""

    added: list[tuple[str, str, str]]
    """`(name, file, date_update)` of each file added."""
    replaced: list[tuple[str, str, str, str, Optional[str], str]]
    """`(old name, new name, file, date_update, old date_update, kind)`; kind is
    `"revised"` (same name, newer date) or `"delayed_mode"` (`R…` became `D…`)."""
    removed: list[tuple[str, str]]
    """`(name, file)` of each dataset whose file left the index."""
    skipped: list[tuple[str, Optional[str], str]]
    """`(name, file, reason)` of each name left as it is."""
    unchanged: int
    """Files the set already held as the index lists them."""
    planned_generation: int
    """The set's generation the plan was made from (0: no set yet)."""
    members: list[str]
    """The members committed, in commit order (empty: a dry run, or nothing to change)."""
    generation: Optional[int]
    """The generation committed, or None."""
    seconds: float
    """Wall time."""


def _text(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    return text if "://" in text else os.path.abspath(text)


def sync(
    set: str | os.PathLike[str],
    index: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    dry_run: bool = False,
    decode: Literal["cf", "raw"] = "cf",
    jobs: int = 1,
    skip_errors: bool = False,
    max_datasets: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> SyncResult:
    """Brings the collection set at `set` (created if absent) in step with the
    archive index `index` (`ar_index_global_prof.txt`, plain or gzip; a path or
    URL), reading each listed file from `root` (default: the folder `dac`
    beside the index), in one commit, exactly as `atlas sync` does.

    A malformed index raises `InvalidArgument` naming its line, and nothing is
    written. A sync with nothing to change commits nothing. A file that fails
    stops the sync (nothing committed) unless `skip_errors`, which lists it in
    `skipped` for the next sync to try again. With `max_datasets`, the new
    files go into members of at most that many datasets, committed together.
    If another writer commits while
    this one works, `StorageError` is raised (retryable) and nothing is
    committed: call it again. `storage_options` reach the set and an index at
    a URL."""
    if decode not in ("cf", "raw"):
        raise InvalidArgument(f"decode must be 'cf' or 'raw', not {decode!r}")
    if jobs < 1:
        raise InvalidArgument(f"jobs must be at least 1, got {jobs}")
    if max_datasets is not None and max_datasets < 1:
        raise InvalidArgument(f"max_datasets must be at least 1, got {max_datasets}")
    started = time.perf_counter()
    storage, anonymous = _storage(
        dict(storage_options) if storage_options else None,
        os.fspath(set),
        os.fspath(index),
        *([] if root is None else [os.fspath(root)]),
    )
    report = _native.sync(
        _location(set),
        _text(index),
        root=None if root is None else _text(root),
        dry_run=dry_run,
        decode=decode,
        skip_errors=skip_errors,
        storage=storage,
        anonymous=anonymous,
        jobs=jobs,
        max_datasets=max_datasets,
    )
    return SyncResult(
        added=[tuple(a) for a in report["added"]],
        replaced=[tuple(r) for r in report["replaced"]],
        removed=[tuple(r) for r in report["removed"]],
        skipped=[tuple(s) for s in report["skipped"]],
        unchanged=report["unchanged"],
        planned_generation=report["generation"],
        members=list(report["members"]),
        generation=report["committed_generation"],
        seconds=time.perf_counter() - started,
    )
