#!/usr/bin/env bash
# User-space instructions per NULL round trip, both ends together, counted
# by valgrind's callgrind (deterministic where wall-clock time is not).
#
# `rpcrdma bench loop` runs a fixed number of sequential NULL round
# trips over one path (client and server threads, one current-thread tokio
# runtime each, as in `rpcrdma bench`). It is run twice per path, with
# $LOW and $HIGH round trips; start-up and tear-down cost the same in both,
# so (Ir(HIGH) - Ir(LOW)) / (HIGH - LOW) is the cost of one round trip.
#
# Usage: scripts/callgrind-null.sh [PATH...]
#   PATH: rdma, oncrpc-tcp, raw-tcp (default: all three)
# Environment:
#   RPCRDMA      the binary (default: target/release/rpcrdma, built first
#                with `cargo build --release -p rpcrdma-cli` unless
#                NO_BUILD=1; that build uses the PGO profile where the
#                toolchain can, scripts/rustc-pgo: build one with
#                RPCRDMA_PGO=off and a CARGO_TARGET_DIR of its own, and
#                pass it here, to count without)
#   LOW, HIGH    round-trip counts (default 1000 and 3000)
#   OUTSTANDING  NULL calls kept outstanding (default 1: sequential round
#                trips; with K > 1, `bench loop --outstanding K` runs K
#                client tasks that each call in turn, raw TCP keeps K
#                messages in flight, and the figure is per call)
#   KEEP=DIR     keep the callgrind output files in DIR (for
#                callgrind_annotate; the HIGH run minus the LOW run is the
#                per-round-trip profile)
#   EXTRA_ARGS   more options for `rpcrdma bench loop` (e.g.
#                `--rdma-version 1`, or `--client-task`: the client loop
#                as a spawned task rather than the `block_on` future)
#   CACHE=1      also simulate the caches (callgrind --cache-sim=yes, the
#                first-level caches as this machine's: 32 KiB each) and
#                report first-level instruction and data cache misses per
#                round trip: both threads share the one simulated cache,
#                as when pinned to one CPU
# Output: one line per path, and a JSON line with every figure.
set -euo pipefail

cd "$(dirname "$0")/.."
LOW=${LOW:-1000}
HIGH=${HIGH:-3000}
RPCRDMA=${RPCRDMA:-target/release/rpcrdma}
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(rdma oncrpc-tcp raw-tcp)

command -v valgrind >/dev/null || {
    echo "callgrind-null: valgrind is not installed (Debian: apt-get install valgrind)" >&2
    exit 2
}
if [ "${NO_BUILD:-0}" != 1 ] && [ "$RPCRDMA" = target/release/rpcrdma ]; then
    cargo build --release -q -p rpcrdma-cli
fi
[ -x "$RPCRDMA" ] || {
    echo "callgrind-null: $RPCRDMA is not an executable (build it, or set RPCRDMA)" >&2
    exit 2
}
if [ "$HIGH" -le "$LOW" ]; then
    echo "callgrind-null: HIGH ($HIGH) must be larger than LOW ($LOW)" >&2
    exit 2
fi

out=${KEEP:-$(mktemp -d)}
mkdir -p "$out"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$out"' EXIT

cache_args=()
[ "${CACHE:-0}" = 1 ] && cache_args=(--cache-sim=yes)

# Totals of one run (the "events:" and "totals:" lines callgrind writes):
# Ir, or with CACHE=1 "Ir I1mr D1mr+D1mw".
count() {
    local path=$1 n=$2 file="$out/callgrind.$1.$2"
    # shellcheck disable=SC2086
    valgrind --tool=callgrind "${cache_args[@]}" --callgrind-out-file="$file" -q \
        "$RPCRDMA" bench loop --path "$path" --round-trips "$n" \
        --outstanding "${OUTSTANDING:-1}" ${EXTRA_ARGS:-} >/dev/null
    awk '/^events:/ { for (i = 2; i <= NF; i++) col[$i] = i }
         /^totals:/ {
             if ("I1mr" in col) print $col["Ir"], $col["I1mr"], $col["D1mr"] + $col["D1mw"]
             else print $2
         }' "$file"
}

json="{"
sep=""
for p in "${paths[@]}"; do
    read -r lo lo_i1 lo_d1 <<<"$(count "$p" "$LOW")"
    read -r hi hi_i1 hi_d1 <<<"$(count "$p" "$HIGH")"
    per=$(( (hi - lo) / (HIGH - LOW) ))
    printf '%-11s %8d instructions per round trip (Ir %d at %d, %d at %d)\n' \
        "$p" "$per" "$lo" "$LOW" "$hi" "$HIGH"
    json+="$sep\"$p\": $per"
    sep=", "
    if [ "${CACHE:-0}" = 1 ]; then
        i1=$(( (hi_i1 - lo_i1) / (HIGH - LOW) ))
        d1=$(( (hi_d1 - lo_d1) / (HIGH - LOW) ))
        printf '%-11s %8d first-level instruction cache misses, %d data cache misses per round trip\n' \
            "" "$i1" "$d1"
        json+=", \"$p-i1-misses\": $i1, \"$p-d1-misses\": $d1"
    fi
done
echo "$json, \"low\": $LOW, \"high\": $HIGH, \"outstanding\": ${OUTSTANDING:-1}}"
