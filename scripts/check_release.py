#!/usr/bin/env python3
"""Release hygiene checks (standard library only).

  check_release.py versions          one version everywhere: every crate of the Cargo
                                     workspace, every published npm package.json (its
                                     segflake-* dependency pins too), python/pyproject.toml
                                     and the C header's SEGFLAKE_VERSION_* macros
  check_release.py licenses FILE...  each artifact (.tgz/.tar.gz, .whl) holds LICENSE-MIT
                                     and LICENSE-APACHE, byte-equal to the repository's

Prints one line per finding and exits 1 if there is any.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LICENSES = ("LICENSE-MIT", "LICENSE-APACHE")


def versions() -> list[str]:
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    found: dict[str, str] = {}
    members = set(meta["workspace_members"])
    for pkg in meta["packages"]:
        # Benchmark harnesses and examples (`publish = false`) are not released; their
        # version is theirs.
        released = pkg.get("publish") != [] and not pkg["manifest_path"].startswith(str(ROOT / "bench"))
        if pkg["id"] in members and released:
            found[f"Cargo: {pkg['name']}"] = pkg["version"]

    for path in sorted((ROOT / "npm").glob("*/package.json")):
        pkg = json.loads(path.read_text())
        if pkg.get("private"):
            continue
        rel = path.relative_to(ROOT)
        found[f"{rel}: version"] = pkg["version"]
        for field in ("dependencies", "optionalDependencies"):
            for dep, pin in (pkg.get(field) or {}).items():
                if dep.startswith("segflake"):
                    found[f"{rel}: {field}.{dep}"] = pin

    pyproject = tomllib.loads((ROOT / "python" / "pyproject.toml").read_text())
    found["python/pyproject.toml"] = pyproject["project"]["version"]

    header = (ROOT / "include" / "segflake.h").read_text()
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"^#define SEGFLAKE_VERSION_{part} (\d+)$", header, re.M)
        parts.append(m.group(1) if m else "?")
    found["include/segflake.h: SEGFLAKE_VERSION_*"] = ".".join(parts)

    want = found["Cargo: segflake"]
    problems = [f"{where} is {v}, the workspace is {want}" for where, v in found.items() if v != want]
    if not problems:
        print(f"version {want} in {len(found)} places")
    return problems


def archive_members(path: Path) -> dict[str, bytes]:
    """Basename -> contents of the top-level LICENSE files (one directory deep at most,
    as npm's package/, sdists' NAME-VERSION/ and C tarballs' share/doc/segflake/)."""
    out: dict[str, bytes] = {}
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                base = name.rsplit("/", 1)[-1]
                if base in LICENSES:
                    out[base] = z.read(name)
    else:
        with tarfile.open(path) as t:
            for m in t.getmembers():
                base = m.name.rsplit("/", 1)[-1]
                if base in LICENSES and m.isfile():
                    f = t.extractfile(m)
                    assert f is not None
                    out[base] = f.read()
    return out


def licenses(files: list[str]) -> list[str]:
    problems = []
    for name in files:
        path = Path(name)
        got = archive_members(path)
        for lic in LICENSES:
            if lic not in got:
                problems.append(f"{path.name}: no {lic}")
            elif got[lic] != (ROOT / lic).read_bytes():
                problems.append(f"{path.name}: {lic} differs from the repository's")
    return problems


def main() -> int:
    if len(sys.argv) >= 2 and sys.argv[1] == "versions":
        problems = versions()
    elif len(sys.argv) >= 3 and sys.argv[1] == "licenses":
        problems = licenses(sys.argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
