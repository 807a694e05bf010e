"""Bad input raises the documented exception class with the library's message."""

from __future__ import annotations

import contextlib
import http.server
import pickle
import re
import threading
from pathlib import Path

import pytest

import atlasds
from conftest import ROOT, atlas_json, fixture

ARGO = ROOT / "crates" / "atlas-netcdf" / "tests" / "data" / "argo"


def test_a_missing_path_is_not_found(tmp_path: Path):
    with pytest.raises(atlasds.NotFound) as e:
        atlasds.Collection.open(tmp_path / "nowhere")
    assert "nowhere" in str(e.value)


def test_a_missing_collection_is_a_file_not_found_error(tmp_path: Path):
    # What xarray and fsspec raise for a missing file; atlasds.NotFound still catches it.
    with pytest.raises(FileNotFoundError) as e:
        atlasds.Collection.open(tmp_path / "nowhere")
    assert isinstance(e.value, atlasds.NotFound)


def test_a_directory_without_a_container_is_not_found(tmp_path: Path):
    with pytest.raises(atlasds.NotFound):
        atlasds.Collection.open(tmp_path)


def test_random_bytes_are_not_an_atlas_collection(tmp_path: Path):
    (tmp_path / "data.atlas").write_bytes(bytes(range(256)) * 64)
    with pytest.raises(atlasds.NotAnAtlasCollection):
        atlasds.Collection.open(tmp_path)


def test_a_truncated_container_is_rejected(tmp_path: Path):
    data = (fixture("small") / "data.atlas").read_bytes()
    (tmp_path / "data.atlas").write_bytes(data[: len(data) // 2])
    with pytest.raises((atlasds.NotAnAtlasCollection, atlasds.CorruptCollection)):
        atlasds.Collection.open(tmp_path)


def test_a_file_instead_of_a_directory_is_an_invalid_argument():
    with pytest.raises(atlasds.InvalidArgument):
        atlasds.Collection.open(fixture("small") / "manifest.json")


def test_a_path_naming_the_container_file_opens_its_directory():
    # main's location rules: `DIR/data.atlas` means the collection in DIR.
    c = atlasds.Collection.open(fixture("small") / "data.atlas")
    assert list(c) == ["jan_2024", "feb_2024", "mar_2024"]


def test_an_unknown_dataset_is_not_found_and_a_key_error():
    c = atlasds.Collection.open(fixture("small"))
    with pytest.raises(atlasds.NotFound, match="apr_2024"):
        c["apr_2024"]
    with pytest.raises(KeyError):
        c["apr_2024"]


def test_an_unknown_array_is_not_found():
    ds = atlasds.Collection.open(fixture("small"))["jan_2024"]
    with pytest.raises(atlasds.NotFound, match="salinity"):
        ds.read("salinity")
    with pytest.raises(atlasds.NotFound):
        atlasds.Collection.open(fixture("small")).stats("salinity")


def test_a_deleted_dataset_is_not_found():
    c = atlasds.Collection.open(fixture("deleted"))
    with pytest.raises(atlasds.NotFound):
        c["d02"]


def test_a_url_of_an_unknown_scheme_is_an_invalid_argument():
    with pytest.raises(atlasds.InvalidArgument):
        atlasds.Collection.open("ftp://host/collection")


def test_a_file_url_opens_the_directory_it_names():
    c = atlasds.Collection.open(f"file://{fixture('small')}")
    assert list(c) == ["jan_2024", "feb_2024", "mar_2024"]


def test_errors_share_one_base_class_and_storage_errors_keep_retryable():
    for cls in (
        atlasds.NotAnAtlasCollection,
        atlasds.CorruptCollection,
        atlasds.NotFound,
        atlasds.StorageError,
        atlasds.InvalidArgument,
    ):
        assert issubclass(cls, atlasds.AtlasError)
    e = pickle.loads(pickle.dumps(atlasds.StorageError("timed out", retryable=True)))
    assert e.retryable is True and str(e) == "timed out"


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves a directory with byte ranges; answers 503 under any path containing `busy`."""

    busy = "/members/"

    def log_message(self, *args):  # keep pytest's output clean
        pass

    def _file(self) -> bytes | None:
        if self.busy in self.path:
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return path.read_bytes()

    def do_HEAD(self):
        data = self._file()
        if data is not None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()

    def do_GET(self):
        data = self._file()
        if data is None:
            return
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
        if not m:
            self.send_response(200)
            body = data
        else:
            first, last = m.groups()
            if first:
                start, end = int(first), min(int(last) + 1 if last else len(data), len(data))
            else:
                start, end = max(len(data) - int(last), 0), len(data)
            body = data[start:end]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def _serve(root: Path):
    handler = lambda *a, **k: _Handler(*a, directory=str(root), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_set_whose_members_answer_503_raises_a_retryable_storage_error_naming_the_object(
    tmp_path: Path,
):
    atlas_json("create", str(ARGO / "R6900000_001.nc"), str(ARGO / "R6900000_002.nc"),
               str(tmp_path / "set"), "--append")
    with _serve(tmp_path) as base:
        with pytest.raises(atlasds.StorageError) as e:
            c = atlasds.Collection.open(f"{base}/set")
            for name in c:
                c[name].read("TEMP")
    assert e.value.retryable is True
    message = str(e.value)
    assert "503" in message and "members/" in message and "data.atlas" in message, message
    assert "headers" not in message and len(message) < 300, message
