#!/usr/bin/env bash
# Builds the wheel, installs it into a fresh venv (no Rust needed there) and runs the
# pytest suite against the installed package. Before that, the sdist: pip builds it in
# another fresh venv (maturin from PyPI, the local Rust), and a smoke test and the shared
# vectors run against that install. Ends with pytest's summary line.
#   SEGFLAKE_PYTHON=python3.9 scripts/test-python.sh   runs the suite on another CPython
#   (the wheel is abi3: one build serves 3.9 and later).
. "$(dirname "$0")/ensure.sh"
# test_redis_ha.py starts its own redis-server processes (a replica, a Sentinel set).
ensure_apt redis-server

work="$(mktemp -d "${TMPDIR:-/tmp}/segflake-python.XXXXXX")"
trap 'rm -rf "$work"' EXIT
wheel="$(bash "$ROOT/scripts/build-python.sh" --copy "$work")"
log "testing $(basename "$wheel")"
interp="${SEGFLAKE_PYTHON:-python3}"
if ! "$interp" -m venv "$work/venv" >/dev/null 2>&1; then
  # Debian's system Python ships venv separately.
  ensure_apt python3-venv
  rm -rf "$work/venv"
  "$interp" -m venv "$work/venv"
fi
py="$work/venv/bin/python"
log "pip install the wheel and the test tools into a fresh venv"
"$py" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
"$py" -m pip install --quiet --disable-pip-version-check "$wheel" \
  "pytest>=8" "pytest-timeout>=2" "mypy>=1.10" "typing_extensions>=4.6" "numpy>=1.26" "psycopg[binary]>=3.1,<4" "pymysql>=1.1,<2" "aiomysql>=0.2" "redis>=5,<9" >&2

log "sdist: pip install it into a fresh venv (compiled here), then a smoke test and the vectors"
sdist="$(bash "$ROOT/scripts/build-python.sh" --sdist | tail -1)"
"$interp" -m venv "$work/sdist-venv"
spy="$work/sdist-venv/bin/python"
# pip compiles the sdist's crates in target/python, beside the wheel's build (its dependencies
# are compiled once). The sdist's files carry maturin's fixed 2006 timestamp, so cargo would
# take an earlier build of the project's own crates as fresh: their fingerprints go first.
rm -rf "$ROOT"/target/python/release/.fingerprint/segflake-*
CARGO_TARGET_DIR="$ROOT/target/python" "$spy" -m pip install --quiet --disable-pip-version-check "$sdist" "pytest>=8" "pytest-timeout>=2" >&2
(cd "$work" && WANT_VERSION="$(basename "$sdist" .tar.gz | sed 's/^segflake-//')" "$spy" - <<'PY'
import os, pathlib, segflake
# The installed package is the one built from the sdist (not a wheel, not the source tree).
path = pathlib.Path(segflake.__file__)
assert "sdist-venv" in str(path), path
assert (path.parent / "py.typed").exists() and (path.parent / "_native.pyi").exists()
gen = segflake.Snowflake(worker_id=7)
ids = [gen.next_id() for _ in range(1000)]
assert ids == sorted(ids) and len(set(ids)) == 1000
assert gen.decode(ids[0]).worker_id == 7
assert segflake.__version__ == os.environ["WANT_VERSION"], segflake.__version__
print("sdist install:", path.parent, segflake.__version__)
PY
)
(cd "$work" && SEGFLAKE_VECTORS="$ROOT/tests/vectors" "$spy" -m pytest -q \
  -c "$ROOT/python/pyproject.toml" --rootdir "$ROOT/python" -p no:cacheprovider "$ROOT/python/tests/test_vectors.py" >&2)

# Run from an empty directory so `import segflake` can only find the installed wheel.
cd "$work"
only=()
[ -z "${TEST_NAME:-}" ] || only=(-k "$TEST_NAME")
SEGFLAKE_VECTORS="$ROOT/tests/vectors" "$py" -m pytest \
  -c "$ROOT/python/pyproject.toml" --rootdir "$ROOT/python" -p no:cacheprovider \
  -ra "${only[@]}" "$ROOT/python/tests"
