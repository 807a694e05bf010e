"""The exceptions atlasds raises; each carries the Rust library's message.

The class is the Rust library's classification of the failure
(``atlas::ErrorClass``), the same one the ``atlas`` command's exit status
comes from; the message names each cause once.
"""

from __future__ import annotations

__all__ = [
    "AtlasError",
    "CorruptCollection",
    "InvalidArgument",
    "NotAnAtlasCollection",
    "NotFound",
    "StorageError",
]


class AtlasError(Exception):
    """Base class of every error atlasds raises."""


class NotAnAtlasCollection(AtlasError):
    """The location holds something that is not a readable Atlas container."""


class CorruptCollection(AtlasError):
    """The container, one of its segments or the deletion mask is damaged."""


class NotFound(AtlasError, KeyError, FileNotFoundError):
    """No such collection, set member, dataset or array.

    Also a ``FileNotFoundError``, so a missing collection is caught as xarray
    and fsspec users expect, and a ``KeyError``, so ``collection[name]`` reads
    naturally.
    """

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class StorageError(AtlasError, OSError):
    """The storage backend failed; ``retryable`` says whether trying again later
    can help (storage unreachable or busy through every retry, or a set commit
    that lost every race to other writers)."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    def __reduce__(self):  # keep `retryable` across pickling (dask ships errors back)
        return (_storage_error, (str(self), self.retryable))


def _storage_error(message: str, retryable: bool) -> StorageError:
    return StorageError(message, retryable=retryable)


class InvalidArgument(AtlasError, ValueError):
    """A request the collection or the API cannot serve: a bad region, an unsupported option."""
