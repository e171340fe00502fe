"""The shipped stubs type-check a real program under `mypy --strict`, and catch misuse."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "typed_example.py"


def mypy(path: Path, cwd: Path) -> "subprocess.CompletedProcess[str]":
    pytest.importorskip("mypy")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(cwd / ".mypy"), str(path)],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )


def test_typed_example_passes_mypy_strict(tmp_path: Path) -> None:
    target = tmp_path / "typed_example.py"
    shutil.copy(EXAMPLE, target)
    result = mypy(target, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_typed_example_runs() -> None:
    result = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("PARSE_ERROR ") for line in lines), result.stdout
    assert lines[-1] == "10", result.stdout


def test_package_itself_passes_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"),
         "-p", "segflake"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_stubs_reject_misuse(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import segflake\n"
        "g = segflake.Snowflake(1)\n"
        "s: str = g.next_id()\n"                      # int, not str
        "segflake.Snowflake(1, layout='twitterr')\n"  # not a preset name... but str is allowed
        "segflake.encode(1, 'base64')\n"              # not a format
        "g.next_ids('3')\n"                           # not an int
        "segflake.Snowflake(worker=1)\n"              # no such keyword
    )
    result = mypy(bad, tmp_path)
    out = result.stdout
    assert result.returncode == 1, out
    assert "bad.py:3: error" in out
    assert "bad.py:5: error" in out
    assert "bad.py:6: error" in out
    assert "bad.py:7: error" in out
