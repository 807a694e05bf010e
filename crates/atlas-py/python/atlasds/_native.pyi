"""Type stubs of the extension module; use the `atlasds` package API instead."""

from typing import Any

import numpy as np

Attrs = list[tuple[str, str, Any]]
StatsTuple = tuple[int, int, Any, Any]

class _Collection:
    def names(self) -> list[str]: ...
    def __len__(self) -> int: ...
    def contains(self, name: str) -> bool: ...
    def array_names(self) -> list[str]: ...
    def ordinal(self, dataset: str) -> int: ...
    def arrays(self, dataset: str) -> list[str]: ...
    def attrs(self, dataset: str) -> Attrs: ...
    def array_attrs(self, dataset: str, array: str) -> Attrs: ...
    def layout(self, dataset: str, array: str) -> dict[str, Any]: ...
    def describe(
        self, dataset: str
    ) -> tuple[Attrs, list[tuple[str, dict[str, Any], Attrs]]]: ...
    def describe_many(
        self, datasets: list[str]
    ) -> list[tuple[Attrs, list[tuple[str, dict[str, Any], Attrs]]]]: ...
    def read(self, dataset: str, array: str, key: Any = None) -> np.ndarray: ...
    def stats(self, array: str, dataset: str | None = None) -> StatsTuple | None: ...
    def stats_by_dataset(
        self, array: str
    ) -> list[tuple[str, int, int, int, Any, Any]]: ...
    def attrs_by_dataset(
        self, key: str, array: str | None = None
    ) -> list[tuple[str, str, Any]]: ...
    def delete(self, names: list[str]) -> tuple[int, str]: ...
    def write_index(self) -> tuple[int, int]: ...
    def verify(
        self, deep: bool = False
    ) -> tuple[bool, list[str], list[str], dict[str, int]]: ...
    def catalogue(
        self,
        attributes: list[str] | None = None,
        arrays: list[str] | None = None,
        predicate: str | None = None,
    ) -> _ArrowStream: ...
    def table(
        self,
        arrays: list[str],
        attributes: list[str] = ...,
        predicate: str | None = None,
        rows_per_batch: int | None = None,
        read_all: bool = True,
        names: list[str] | None = None,
    ) -> _TableStream: ...
    def request_stats(self, reset: bool = False) -> dict[str, Any] | None: ...

class _TableStream:
    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any: ...

class _ArrowStream:
    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any: ...
    def __len__(self) -> int: ...

def open(
    location: str,
    cached: bool = False,
    storage: list[tuple[str, str]] = ...,
    anonymous: bool = False,
    block_cache_bytes: int | None = None,
    segment_prefetch_bytes: int | None = None,
    count_requests: bool = False,
    dataset_index: bool = True,
) -> _Collection: ...
class _Writer:
    def add(self, name: str, groups: list[tuple[list[str], list[Any], list[Any]]]) -> None: ...
    def finish(
        self,
    ) -> tuple[
        list[str],
        int,
        list[tuple[str, str, str]],
        list[str],
        str | None,
        int | None,
        list[tuple[str, str, str]],
    ]: ...
    def abort(self) -> None: ...

def create(
    location: str,
    storage: list[tuple[str, str]] = ...,
    anonymous: bool = False,
    decode: str = "cf",
    codec: str = "zstd",
    zstd_level: int | None = None,
    chunks: dict[str, list[int]] = ...,
    jobs: int = 1,
    skip_unsupported: bool = False,
    append: bool = False,
) -> _Writer: ...
def open_count() -> int: ...
def clear_cache() -> None: ...
def shapes(
    collection: _Collection, arrays: list[str], names: list[str]
) -> dict[str, dict[str, Any]]: ...  # per array: dtype, fill, dims, chunk_shape, ranks, shape
def read_concat(
    collection: _Collection, array: str, names: list[str]
) -> tuple[np.ndarray | None, np.ndarray, list[tuple[int, ...] | None], Any]: ...
def read_many(collection: _Collection, array: str, names: list[str]) -> list[np.ndarray]: ...

# Distributed ingest (atlasds.ingest).
def run_member_ids(count: int) -> tuple[str, list[str]]: ...
def discover(
    sources: list[str],
    recursive: bool = True,
    storage: list[tuple[str, str]] = ...,
    anonymous: bool = False,
) -> list[str]: ...
def ingest_member(
    files: list[str],
    location: str,
    member_id: str,
    decode: str = "cf",
    skip_errors: bool = False,
    storage: list[tuple[str, str]] = ...,
    anonymous: bool = False,
    jobs: int = 1,
) -> dict[str, Any]: ...
def order_files(
    files: list[str],
    sort_by: str,
    decode: str = "cf",
    skip_errors: bool = False,
    storage: list[tuple[str, str]] = ...,
    anonymous: bool = False,
    jobs: int = 1,
) -> list[str]: ...
def commit_members(
    location: str,
    ids: list[str],
    storage: list[tuple[str, str]] = ...,
    anonymous: bool = False,
) -> int: ...
def remove_members(
    location: str,
    ids: list[str] = ...,
    prefix: str | None = None,
    storage: list[tuple[str, str]] = ...,
    anonymous: bool = False,
) -> list[str]: ...
def sync(
    set: str,
    index: str,
    root: str | None = None,
    dry_run: bool = False,
    decode: str = "cf",
    skip_errors: bool = False,
    storage: list[tuple[str, str]] = ...,
    anonymous: bool = False,
    jobs: int = 1,
    max_datasets: int | None = None,
) -> dict[str, Any]: ...
def partitions(
    collection: _Collection,
    arrays: list[str],
    names: list[str],
    target_datasets: int | None = None,
) -> list[tuple[int, int]]: ...
