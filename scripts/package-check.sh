#!/usr/bin/env bash
# Every publishable crate packages and builds from its package alone
# (issue 39): `cargo package --workspace` packages them in dependency
# order and verifies each against the others as packaged (a local
# registry overlay: an internal dependency is taken from the package just
# made, not from crates.io, and needs a version, which the workspace's
# `[workspace.dependencies]` give). Crates with `publish = false` (test
# support, the NFS guest tools, the example) are left out. Then the
# documentation: `cargo doc --workspace --no-deps` with every rustdoc
# warning an error, broken intra-doc links included.
#
# Usage: scripts/package-check.sh [--no-doc] [--no-verify]
# Third-party crates come from crates.io (or cargo's cache); the packages
# go to target/package/ ($CARGO_TARGET_DIR/package/).
set -euo pipefail
cd "$(dirname "$0")/.."

doc=1
verify=()
for a in "$@"; do
    case "$a" in
        --no-doc) doc=0 ;;
        --no-verify) verify=(--no-verify) ;;
        *) echo "usage: $0 [--no-doc] [--no-verify]" >&2; exit 2 ;;
    esac
done

mapfile -t unpublished < <(cargo metadata --no-deps --format-version 1 |
    python3 -c 'import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["publish"] == []:
        print(p["name"])')
excludes=()
for p in "${unpublished[@]}"; do excludes+=(--exclude "$p"); done
echo "package-check: packaging every crate but ${unpublished[*]} (publish = false)"
# Verification builds each package against the others through a local
# registry whose sources cargo unpacks once per name and version under
# $CARGO_HOME/registry/src/-<hash>/ and never refreshes: on a machine that
# packaged this version before, a crate would build against its old
# neighbours. Those unpacked copies of our own crates go first (the
# directories of local registries start with '-'; crates.io's are left).
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/rpcrdma-* \
    "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/-*/rpcrdma-*

# --allow-dirty: what is checked is that each crate packages and builds,
# not that the tree is committed (CI's earlier steps leave files behind).
# A target directory of its own, emptied first: cargo takes a registry
# crate's compiled artifacts as final for its name and version, so a
# verification would otherwise reuse what an earlier packaging of 0.1.0
# built from older sources.
target_dir="${CARGO_TARGET_DIR:-target}/package-check"
rm -rf "$target_dir"
CARGO_TARGET_DIR="$target_dir" cargo package --workspace "${excludes[@]}" --allow-dirty "${verify[@]}"

packages="$target_dir/package"
ls "$packages"/*.crate | sed 's/^/package-check: /'

if [ "$doc" = 1 ]; then
    echo "package-check: cargo doc --workspace --no-deps, warnings denied"
    RUSTDOCFLAGS="-D warnings -D rustdoc::broken_intra_doc_links" \
        cargo doc --workspace --no-deps --quiet
fi
echo "package-check: ok"
