"""The suite runs against the installed wheel, not the source tree."""

import os
import subprocess
import sys
from pathlib import Path

import segflake
from segflake import _native


def test_imported_from_site_packages() -> None:
    location = Path(segflake.__file__).resolve()
    assert "site-packages" in location.parts, location
    source_tree = Path(__file__).resolve().parents[1] / "segflake"
    assert source_tree not in location.parents


def test_native_module_is_abi3_extension() -> None:
    assert Path(_native.__file__).name.endswith(".abi3.so"), _native.__file__


def test_wheel_ships_stubs_and_marker() -> None:
    package = Path(segflake.__file__).parent
    assert (package / "py.typed").is_file()
    stub = (package / "_native.pyi").read_text()
    assert "class Snowflake" in stub and "def next_id(self) -> int" in stub


def test_version() -> None:
    assert segflake.__version__ == segflake.CORE_VERSION
    assert segflake.__version__.count(".") == 2


def test_no_rust_toolchain_needed_at_import() -> None:
    # The wheel is self-contained: nothing under the repository is on sys.path.
    repo_python = str(Path(__file__).resolve().parents[1])
    assert repo_python not in [os.path.abspath(p) for p in sys.path if p]


def test_signatures_show_the_real_defaults() -> None:
    import inspect

    assert "max_drift_ms=2000" in str(inspect.signature(segflake.Snowflake))
    assert "layout='twitter'" in str(inspect.signature(segflake.Snowflake))
    assert "wait_timeout_ms=1000" in str(inspect.signature(segflake.SegmentGenerator))
    assert "sequence_digits=4" in str(inspect.signature(segflake.SerialGenerator))


def test_import_leaves_asyncio_and_http_for_first_use() -> None:
    # `import segflake` for snowflake IDs costs no asyncio, ssl or http.client (about 45 ms
    # of a fresh interpreter's start); the names that need them load on first access.
    code = (
        "import sys, segflake\n"
        "segflake.Snowflake(worker_id=1).next_id()\n"
        "heavy = ['asyncio', 'ssl', 'http.client', 'segflake._aio', 'segflake.registries']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
        "assert segflake.AsyncSegmentGenerator.__module__ == 'segflake._aio'\n"
        "assert segflake.Registry.__module__ == 'segflake.registries'\n"
        "assert callable(segflake.close_async) and callable(segflake.from_registry_async)\n"
        "assert 'asyncio' in sys.modules and 'close_async' in dir(segflake)\n"
        "try:\n"
        "    segflake.NoSuchName\n"
        "except AttributeError as e:\n"
        "    assert \"'NoSuchName'\" in str(e)\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
        "from segflake import *\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"imported at `import segflake`: {done.stdout.strip()}"
