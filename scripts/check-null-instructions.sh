#!/usr/bin/env bash
# Issue 13's instruction budget as a check: user-space instructions per
# NULL round trip over RPC-over-RDMA, both ends (scripts/callgrind-null.sh,
# deterministic: callgrind counts instructions, not time), must be at most
# LIMIT (default 12000).
#
# The budget holds for the build with the PGO profile (docs/performance.md,
# "Profile-guided optimization"); a binary built without it (a toolchain
# whose LLVM cannot read pgo/, or RPCRDMA_PGO=off) is counted and
# reported, not checked. If the check fails on a PGO build, the profile is
# probably stale: regenerate it with scripts/pgo-profile.sh.
#
# Usage: scripts/check-null-instructions.sh
# Environment: RPCRDMA (default target/release/rpcrdma, built first unless
# NO_BUILD=1), LIMIT.
set -euo pipefail
cd "$(dirname "$0")/.."
RPCRDMA=${RPCRDMA:-target/release/rpcrdma}
LIMIT=${LIMIT:-12000}
if [ "${NO_BUILD:-0}" != 1 ]; then
    cargo build --release -q -p rpcrdma-cli
fi

pgo=false
if "$RPCRDMA" bench --only null --rounds 1 --round-trips 100 --json 2>/dev/null |
    grep -q '"pgo_build":true'; then
    pgo=true
fi
line=$(NO_BUILD=1 RPCRDMA="$RPCRDMA" scripts/callgrind-null.sh rdma | tail -1)
count=$(sed -n 's/.*"rdma": *\([0-9]*\).*/\1/p' <<<"$line")
if [ -z "$count" ]; then
    echo "check-null-instructions: no count in the output of scripts/callgrind-null.sh: $line" >&2
    exit 2
fi
if [ "$pgo" != true ]; then
    echo "check-null-instructions: $count instructions per NULL round trip; not checked: $RPCRDMA was built without the PGO profile"
    exit 0
fi
if [ "$count" -gt "$LIMIT" ]; then
    echo "check-null-instructions: $count instructions per NULL round trip, above $LIMIT: the PGO profile may be stale (run scripts/pgo-profile.sh), or the path grew (docs/performance.md)" >&2
    exit 1
fi
echo "check-null-instructions: $count instructions per NULL round trip (PGO build), at most $LIMIT"
