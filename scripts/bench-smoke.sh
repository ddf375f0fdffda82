#!/usr/bin/env bash
# The bench modes run end to end, briefly: `--sweep --plot`, `--clients`,
# `--small` (small calls at several depths),
# `--pin` (and the read window `auto` picks there), `--only read`,
# `--only write` (with the CPU cost per MiB and `--read-window`),
# `bench verbs --pin`, `bench loop` (every op and path),
# scripts/bench-vs-tirpc.sh and scripts/bench-goals.sh.
# Only the shape of the output is checked (every series named, a wake-up
# state reported, an SVG written); no figure is, since time on a shared
# machine is noise.
#
# Usage: scripts/bench-smoke.sh
# Environment: RPCRDMA (default target/release/rpcrdma, built first unless
# NO_BUILD=1), PORT (the libtirpc server's port, default 27411).
set -euo pipefail

cd "$(dirname "$0")/.."
RPCRDMA=${RPCRDMA:-target/release/rpcrdma}
if [ "${NO_BUILD:-0}" != 1 ]; then
    cargo build --release -q -p rpcrdma-cli
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "bench-smoke: $*" >&2; exit 1; }
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2'"; }

echo "bench-smoke: --sweep --plot"
"$RPCRDMA" bench --sweep --sweep-secs 0.05 --round-trips 200 \
    --plot "$work/sweep.svg" --json >"$work/sweep.json" 2>/dev/null
has "$work/sweep.json" '"bench":"sweep"'
has "$work/sweep.json" '"wake_state":{'
for name in "RPC-over-RDMA READ" "RPC-over-RDMA WRITE" "ONC RPC/TCP READ" \
    "ONC RPC/TCP WRITE" "raw TCP stream" "RPC-over-RDMA NULL" "raw TCP 64 B"; do
    has "$work/sweep.json" "\"$name\""
    has "$work/sweep.svg" "$name"
done

echo "bench-smoke: --clients 1,2"
"$RPCRDMA" bench --clients 1,2 --scale-secs 0.2 >"$work/clients.txt" 2>/dev/null
has "$work/clients.txt" "  2 WRITE 1 MiB"
has "$work/clients.txt" "wake-up state:"

echo "bench-smoke: --small (NULL and ECHO, two depths, one and two connections)"
"$RPCRDMA" bench --small --small-depths 1,4 --small-connections 2 --small-secs 0.05 \
    --small-rounds 1 --small-echo-size 4096 --json >"$work/small.json" 2>/dev/null
# Parsed, not grepped: the order of a JSON object's keys is serde_json's
# to choose (it sorts them unless a crate in the build turns on its
# `preserve_order`).
python3 - "$work/small.json" <<'PY' || fail "bench --small: $work/small.json lacks a measure or a ratio"
import json, sys
v = json.load(open(sys.argv[1]))
assert v["bench"] == "small", v["bench"]
assert isinstance(v["wake_state"], dict), "no wake_state"
got = {(m["op"], m["connections"], m["depth"]): m for m in v["measures"]}
for key in [("null", 2, 4), ("echo", 1, 1)]:
    assert key in got, f"no measure {key}: {sorted(got)}"
for m in got.values():
    for ratio in ["rpcrdma_vs_raw_tcp", "rpcrdma_vs_oncrpc_tcp"]:
        assert isinstance(m[ratio], (int, float)), f"{ratio} of {m['op']} missing"
PY

echo "bench-smoke: --pin"
"$RPCRDMA" bench --pin --only null --rounds 1 --round-trips 200 --json \
    >"$work/pin.json" 2>/dev/null
grep -qE '"pinned_cpu":[0-9]+' "$work/pin.json" || fail "bench --pin: no pinned_cpu"
grep -qE '"state":"(fast|slow|mixed)"' "$work/pin.json" || fail "bench --pin: no wake-up state"
grep -q '"tcp_congestion_control":' "$work/pin.json" || fail "bench --pin: no tcp_congestion_control"
# --read-window auto: one call's worth (1 MiB) on one CPU.
has "$work/pin.json" '"read_window":1048576'
has "$work/pin.json" '"read_window_setting":"auto"'
"$RPCRDMA" bench verbs --pin --only pingpong --rounds 1 --round-trips 200 --json \
    >"$work/verbs.json" 2>/dev/null
grep -qE '"pinned_cpu":[0-9]+' "$work/verbs.json" || fail "bench verbs --pin: no pinned_cpu"

echo "bench-smoke: --only read (both raw TCP streams)"
"$RPCRDMA" bench --only read --rounds 1 --mib 4 --outstanding 2 --json \
    >"$work/read.json" 2>/dev/null
has "$work/read.json" '"raw_tcp_stream_into_outstanding_buffers_mib_per_s":'
has "$work/read.json" '"read_1mib_vs_tcp_into_outstanding_buffers":'
grep -qE '"read_1mib_vs_tcp":[0-9]' "$work/read.json" || fail "bench --only read: no READ ratio"
echo "bench-smoke: --only write (with and without the demo's checksum; --read-window 2M)"
"$RPCRDMA" bench --only write --rounds 1 --mib 4 --outstanding 2 --read-window 2M --json \
    >"$work/write.json" 2>/dev/null
has "$work/write.json" '"read_window":2097152'
has "$work/write.json" '"read_window_setting":"2 MiB"'
for key in write_1mib_vs_tcp write_1mib_no_checksum_vs_tcp write_1mib_no_checksum_vs_oncrpc_tcp \
    rpcrdma_write_1mib_no_checksum_mib_per_s oncrpc_tcp_write_1mib_no_checksum_mib_per_s; do
    grep -qE "\"$key\":[0-9]" "$work/write.json" || fail "bench --only write: no $key figure"
done
echo "bench-smoke: CPU per MiB and CPUs busy of every WRITE measure"
for key in raw_tcp_stream rpcrdma_write_1mib rpcrdma_write_1mib_no_checksum \
    oncrpc_tcp_write_1mib oncrpc_tcp_write_1mib_no_checksum write_1mib_cpu_per_mib_vs_tcp; do
    grep -qE "\"$key\":[0-9]" "$work/write.json" || fail "bench --only write: no CPU figure $key"
done
has "$work/write.json" '"cpus_busy":{"'
has "$work/write.json" '"cpu_note":'
# A figure where the kernel's softirq threads are visible, null where not
# (a container's own PID namespace): the key is there either way.
has "$work/write.json" '"softirq_thread_ms_per_mib":{"'
echo "bench-smoke: bench loop, every op on every path, with its CPU time"
for path in rdma oncrpc-tcp raw-tcp; do
    for op in null read write bare-write; do
        "$RPCRDMA" bench loop --path "$path" --op "$op" --round-trips 20 --warm-up 5 \
            >"$work/loop.txt" 2>/dev/null || fail "bench loop --path $path --op $op failed"
        grep -qE "(us of CPU each|ms of CPU per MiB), [0-9.]+ CPUs busy" "$work/loop.txt" ||
            fail "bench loop --path $path --op $op: no CPU figures"
    done
    "$RPCRDMA" bench loop --path "$path" --op null --outstanding 8 --round-trips 40 --warm-up 8 \
        >"$work/loop.txt" 2>/dev/null || fail "bench loop --path $path --outstanding 8 failed"
    has "$work/loop.txt" "8 outstanding:"
done
pgo=$(grep -oE '"pgo_build":(true|false)' "$work/read.json") ||
    fail "bench: does not say whether the build has the PGO profile"
echo "bench-smoke: $pgo (scripts/rustc-pgo)"

echo "bench-smoke: scripts/bench-vs-tirpc.sh"
ROUNDS=1 ROUND_TRIPS=200 MIB=4 NO_BUILD=1 RPCRDMA="$RPCRDMA" \
    bash scripts/bench-vs-tirpc.sh >"$work/tirpc.txt" 2>/dev/null
has "$work/tirpc.txt" '"bench": "vs-libtirpc"'
has "$work/tirpc.txt" "rpcrdma_null_rtt_vs_libtirpc"

echo "bench-smoke: scripts/bench-goals.sh (issue 13's check: both states, every goal)"
ARGS="--rounds 1 --round-trips 200 --mib 4 --outstanding 2" OUT="$work/goals" NO_BUILD=1 \
    RPCRDMA="$RPCRDMA" bash scripts/bench-goals.sh 1 >"$work/goals.txt" 2>/dev/null
for state in as-it-comes pinned; do
    has "$work/goals.txt" "$state: 1 runs, raw TCP round trip"
done
for key in null_rtt_vs_tcp null_rtt_vs_oncrpc_tcp read_1mib_vs_tcp read_1mib_vs_oncrpc_tcp \
    write_1mib_vs_tcp write_1mib_vs_oncrpc_tcp; do
    [ "$(grep -cE "^  $key +goal .* met [01] of 1: " "$work/goals.txt")" = 2 ] ||
        fail "bench-goals.sh: no line for $key in both states"
done

echo "bench-smoke: all bench modes ran"
