#!/usr/bin/env bash
# Checks that the publishable crates are ready for crates.io and docs.rs:
#   * `cargo package` builds each crate from its packaged files (what crates.io would get);
#   * `cargo doc --no-deps --all-features` is clean with `-D warnings` (what docs.rs builds).
#
# Usage: scripts/check-crates.sh [CRATE...]   (default: segflake)
#
# A crate that depends on another crate of this workspace (segflake-tokio and
# segflake-backends depend on segflake) is packaged together with it in one
# `cargo package -p A -p B` call: cargo (1.90 and later) then resolves the workspace
# dependency from the packages it has just assembled, so nothing needs to be on
# crates.io first. The dependencies are added to the call automatically.
set -euo pipefail

cd "$(dirname "$0")/.."

crates=("$@")
if [ ${#crates[@]} -eq 0 ]; then
    crates=(segflake)
fi

# Workspace path dependencies of a crate (by name), from `cargo metadata`.
workspace_deps() {
    cargo metadata --format-version 1 --no-deps |
        python3 -c '
import json, sys
name = sys.argv[1]
meta = json.load(sys.stdin)
members = {p["name"]: p for p in meta["packages"]}
seen, todo = set(), [name]
while todo:
    pkg = members[todo.pop()]
    for dep in pkg["dependencies"]:
        if dep.get("path") and dep["kind"] in (None, "build") and dep["name"] not in seen:
            seen.add(dep["name"])
            todo.append(dep["name"])
print(" ".join(sorted(seen)))
' "$1"
}

# Every crate asked for plus the workspace crates they depend on, packaged in one call.
declare -A want=()
for crate in "${crates[@]}"; do
    want[$crate]=1
    for dep in $(workspace_deps "$crate"); do
        want[$dep]=1
    done
done
package_args=()
for crate in "${!want[@]}"; do
    package_args+=(-p "$crate")
done

# Cargo treats a registry crate as immutable: the packaged crates it unpacked and built in
# an earlier run (same name, same version) would be taken again, stale. So the packages are
# built in a target directory of their own, emptied first, and earlier unpackings of our
# crates from cargo's temporary registries are removed.
pkg_target="${CARGO_TARGET_DIR:-$PWD/target}/package-check"
rm -rf "$pkg_target"
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/segflake-*
echo "== cargo package ${package_args[*]} --allow-dirty"
CARGO_TARGET_DIR="$pkg_target" cargo package "${package_args[@]}" --allow-dirty
for crate in "${crates[@]}"; do
    echo "ok   package $crate (built from its packaged files)"
done

for crate in "${crates[@]}"; do
    echo "== cargo doc -p $crate --no-deps --all-features (-D warnings)"
    RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings" cargo doc -p "$crate" --no-deps --all-features
    echo "ok   doc $crate"
done
