#!/usr/bin/env bash
# The Python package's test suite.
#
#   scripts/py-test.sh [pytest args...]
#
# Creates target/pyenv (scripts/pyenv.sh), builds the extension module, the
# `atlas` command and the xtask fixture writer the tests call, installs
# crates/atlas-py into the venv in development mode and runs pytest on
# crates/atlas-py/tests. Fails when pytest fails or collects no test (pytest exit code 5).
#
# The extension is built by cargo, not maturin: `cargo build --workspace
# --all-targets` resolves the same features as `cargo test --workspace`, so after
# the Rust suite only atlas-py itself compiles (maturin builds `-p atlas-py` alone,
# whose smaller feature set recompiled tokio, opendal and the rest a second time).
# The install is what `maturin develop` writes: a .pth naming python/, the
# dist-info with the xarray entry point, and the module linked beside the sources.
# `maturin build` still makes the wheels (pyproject.toml).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
python="$(scripts/pyenv.sh)"

cargo build --quiet --workspace --all-targets
meta="$(cargo metadata --format-version 1 --no-deps)"
target_dir="$("$python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])' <<<"$meta")"
version="$("$python" -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "atlas-py"))' <<<"$meta")"
ln -sfn "$target_dir/debug/lib_native.so" crates/atlas-py/python/atlasds/_native.abi3.so
"$python" - "$root/crates/atlas-py" "$version" <<'PY'
import pathlib, shutil, sys, sysconfig, tomllib

pkg, version = pathlib.Path(sys.argv[1]), sys.argv[2]
project = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]
site = pathlib.Path(sysconfig.get_paths()["purelib"])
for old in site.glob("atlasds-*.dist-info"):
    shutil.rmtree(old)
info = site / f"atlasds-{version}.dist-info"
info.mkdir()
lines = ["Metadata-Version: 2.1", "Name: atlasds", f"Version: {version}"]
lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
(info / "METADATA").write_text("\n".join(lines) + "\n")
groups = project.get("entry-points", {})
(info / "entry_points.txt").write_text(
    "".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for g, eps in groups.items())
)
(info / "INSTALLER").write_text("scripts/py-test.sh\n")
(site / "atlasds.pth").unlink(missing_ok=True)  # never write through a hard link
(site / "atlasds.pth").write_text(f"{pkg / 'python'}\n")
(info / "RECORD").write_text(
    "".join(f"{p.relative_to(site)},,\n" for p in [site / "atlasds.pth", *sorted(info.iterdir())])
    + f"{(info / 'RECORD').relative_to(site)},,\n"
)
PY

export ATLAS_BIN="$target_dir/debug/atlas"
export ATLAS_XTASK="$target_dir/debug/xtask"
exec "$python" -m pytest -p no:cacheprovider crates/atlas-py/tests "$@"
