#!/usr/bin/env bash
# Regenerates the profile-guided optimization profile that optimized
# builds use (scripts/rustc-pgo, .cargo/config.toml):
# pgo/x86_64-unknown-linux-gnu.profdata and pgo/llvm-major.
#
# 1. builds `rpcrdma` instrumented (-Cprofile-generate, RPCRDMA_PGO=off so
#    the old profile is not applied), in target/pgo-gen;
# 2. runs the training workload: `rpcrdma demo`, `bench loop` NULL (one
#    and 32 outstanding), READ
#    and WRITE over RPC-over-RDMA (Version Two and Version One) and ONC
#    RPC/TCP, two rounds of `rpcrdma bench`, and `rpcrdma nfs bench`
#    against `rpcrdma nfs serve` (NFSv3 over both);
# 3. merges the counts with llvm-profdata (`--sparse`: functions the
#    workload never ran are left out, so the compiler treats them as
#    unprofiled rather than cold).
#
# Run it after changing code on the measured paths; a stale profile only
# loses its effect on the functions that changed (see docs/performance.md,
# "Profile-guided optimization"). Takes about 6 minutes. Cargo does not
# track the profile file (the wrapper adds it), so the script removes the
# optimized builds at the end; after a `git pull` that brings a new
# profile, run `cargo clean --release` too.
#
# Needs llvm-profdata of rustc's LLVM major version (Debian:
# apt-get install llvm-NN, NN as `rustc -vV` says).
set -euo pipefail
cd "$(dirname "$0")/.."

major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
profdata=
for c in "llvm-profdata-$major" "/usr/lib/llvm-$major/bin/llvm-profdata"; do
    if command -v "$c" >/dev/null 2>&1; then
        profdata=$c
        break
    fi
done
if [ -z "$profdata" ]; then
    echo "pgo-profile: no llvm-profdata for LLVM $major (rustc's); install it: apt-get install llvm-$major" >&2
    exit 2
fi

raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
echo "pgo-profile: building the instrumented binary (target/pgo-gen)" >&2
RPCRDMA_PGO=off RUSTFLAGS="-Cprofile-generate=$raw" CARGO_TARGET_DIR=target/pgo-gen \
    cargo build --release -q -p rpcrdma-cli
bin=target/pgo-gen/release/rpcrdma

echo "pgo-profile: running the training workload" >&2
"$bin" demo >/dev/null
for path in rdma oncrpc-tcp; do
    "$bin" bench loop --path "$path" --round-trips 20000 >/dev/null
    "$bin" bench loop --path "$path" --outstanding 32 --round-trips 60000 >/dev/null
    "$bin" bench loop --path "$path" --op write --round-trips 300 >/dev/null
    "$bin" bench loop --path "$path" --op read --round-trips 300 >/dev/null
done
"$bin" bench loop --path rdma --rdma-version 1 --round-trips 5000 >/dev/null
"$bin" bench --rounds 2 >/dev/null 2>&1

# NFSv3 over RPC-over-RDMA and over TCP: our server exporting a scratch
# directory, our client's `nfs bench` against it (needs no root: the
# server runs with --no-root-squash on files this user owns).
export_dir=$(mktemp -d)
state_dir=$(mktemp -d)
trap 'rm -rf "$raw" "$export_dir" "$state_dir"' EXIT
"$bin" nfs serve "$export_dir" --listen 127.0.0.1:21049 --mount-port 21048 \
    --tcp 127.0.0.1:21050 --state-dir "$state_dir" --no-root-squash >/dev/null 2>&1 &
server=$!
for _ in $(seq 1 50); do
    if "$bin" nfs bench 127.0.0.1:/ --port 21049 --mount-port 21048 --tcp-port 21050 \
        --size 16 --rounds 1 --getattrs 200 >/dev/null 2>&1; then
        break
    fi
    sleep 0.2
done
kill -INT "$server"
wait "$server" || true

"$profdata" merge --sparse -o pgo/x86_64-unknown-linux-gnu.profdata "$raw"/*.profraw
echo "$major" >pgo/llvm-major
# Cargo does not see the flag the wrapper adds, so it would not rebuild
# what the old profile optimized: remove the optimized builds.
cargo clean -q --release
cargo clean -q --profile cg 2>/dev/null || true
echo "pgo-profile: wrote pgo/x86_64-unknown-linux-gnu.profdata ($(wc -c <pgo/x86_64-unknown-linux-gnu.profdata) octets, LLVM $major) and removed target/release; rebuild with cargo build --release" >&2
