"""Shared inputs: the v8 conformance fixtures, and collections our Rust writer makes.

`ATLAS_BIN` (the `atlas` command) and `ATLAS_XTASK` (the xtask binary) are set
by scripts/py-test.sh; without them the tests fall back to `cargo run`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "testdata" / "v8"


def _command(env: str, package: str) -> list[str]:
    binary = os.environ.get(env)
    if binary:
        return [binary]
    return ["cargo", "run", "--quiet", "--manifest-path", str(ROOT / "Cargo.toml"), "-p", package, "--"]


def atlas_json(*args: str) -> object:
    """What `atlas --json ARGS...` prints, parsed."""
    done = subprocess.run(
        [*_command("ATLAS_BIN", "atlas-cli"), "--json", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout)


def fixture(name: str) -> Path:
    return FIXTURES / name


def manifest(name: str) -> dict:
    return json.loads((FIXTURES / name / "manifest.json").read_text())


@pytest.fixture(scope="session")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`cargo xtask py-fixture`: every dtype, fills, NaN/NaT, coordinates, two schemas."""
    path = tmp_path_factory.mktemp("kinds") / "collection"
    subprocess.run([*_command("ATLAS_XTASK", "xtask"), "py-fixture", str(path)], check=True)
    return path


DEMO_PROFILES = 200


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`atlas demo`: Argo-like profiles of 20 to 120 levels, some values missing."""
    path = tmp_path_factory.mktemp("demo") / "argo"
    subprocess.run(
        [*_command("ATLAS_BIN", "atlas-cli"), "-q", "demo", str(path), "--count", str(DEMO_PROFILES)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return path


@pytest.fixture
def copy_of(tmp_path: Path):
    """A private copy of a collection, for tests that delete."""

    def copy(source: Path) -> Path:
        target = tmp_path / source.name
        shutil.copytree(source, target)
        return target

    return copy
