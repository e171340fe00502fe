#!/usr/bin/env bash
# Builds the wheel, installs it into a fresh venv (no Rust needed there) and runs the
# pytest suite against the installed package. Ends with pytest's summary line.
#   SEGFLAKE_PYTHON=python3.9 scripts/test-python.sh   runs the suite on another CPython
#   (the wheel is abi3: one build serves 3.9 and later).
. "$(dirname "$0")/ensure.sh"

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
  "pytest>=8" "pytest-timeout>=2" "mypy>=1.10" "typing_extensions>=4.6" "numpy>=1.26" >&2

# Run from an empty directory so `import segflake` can only find the installed wheel.
cd "$work"
SEGFLAKE_VECTORS="$ROOT/tests/vectors" "$py" -m pytest \
  -c "$ROOT/python/pyproject.toml" --rootdir "$ROOT/python" -p no:cacheprovider \
  -ra "$ROOT/python/tests"
