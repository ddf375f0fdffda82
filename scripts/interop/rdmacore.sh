#!/usr/bin/env bash
# rdmacore.sh - the rdma-core provider (`--provider rdma-core`) on the Linux
# kernel's soft RDMA devices in the QEMU guest of ../shared/interop
# (issue 10, item 3). Two guest boots, `run-guest.sh exec` running
# rdmacore-guest.sh with our binary (built with the rdma-core feature):
#
#   both: the verbs tour (crates/rdmacore/examples/verbs_tour.rs): Send,
#     RDMA Write through every gather path, RDMA Read, Send with Invalidate,
#     each checked, over the device's loopback;
#   rxe (RoCE v2, inside the guest):
#     - rpcrdma demo --provider rdma-core: all 8 operations verified;
#     - rpcrdma serve and rpcrdma call as two processes (NULL, ECHO, READ and
#       WRITE of 1 MiB, 20 READs, probe);
#     - our client against the kernel nfsd of the same guest: NFSv3 NULL
#       with Version One, NFSv3 and NFSv4 NULL with our Version Two probe
#       drawing ERR_VERS and the Version One fallback, probe (text, JSON);
#     - perftest (ib_write_bw, ib_read_bw, ib_send_lat) beside
#       `rpcrdma bench verbs --provider rdma-core` on rxe0 in the same boot,
#       3 paired rounds, reported as median ratios (the guest is emulated:
#       only ratios mean anything; the check is that both produced figures,
#       never their values); the figures go to bench-ratios.json.
#   siw (iWARP): our rdma-core provider in the guest against our software
#     iWARP provider on the host, both directions:
#     - guest -> host: rdma-core `call`/`probe`/`rping -c` against the host's
#       softiwarp `serve` and `rping -s`;
#     - host -> guest: the host's softiwarp `call`/`probe`/`rping -c` against
#       the guest's rdma-core `serve` and `rping -s`;
#     - the kernel nfsd checks above, over siw0.
#
# Usage: scripts/interop/rdmacore.sh   (root or sudo for apt on the first
#                                       run; Debian 12 x86_64)
# Environment: IOP_RDMACORE_PORT (default 20149; the script uses it and the
# four ports above it on 127.0.0.1), RPCRDMA_RDMACORE_BIN (a binary built
# with `--features rdma-core`; default: build one), and common.sh's.
# Exit status 0 only if every check passed. About 4 minutes under TCG once
# the guest is built.
set -uo pipefail
IOP_NAME=rdmacore
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PORT=${IOP_RDMACORE_PORT:-20149}
P1=$((PORT + 1)) P3=$((PORT + 3)) P4=$((PORT + 4))
GUEST_SCRIPT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/rdmacore-guest.sh

iop_setup_work
echo "== $IOP_NAME: the rdma-core provider on rxe and siw in the QEMU guest (logs: $IOP_WORK)"

# The binary: built with the rdma-core feature (needs libibverbs-dev and
# librdmacm-dev), stripped so the guest's initramfs stays small.
build_rdmacore() {
    iop_build_rdmacore || return 1
    BIN=$RC_BIN
    iop_log "building the verbs tour example"
    (cd "$IOP_ROOT" && cargo build -q -p rpcrdma-rdmacore --features rdma-core --example verbs_tour) || return 1
    TOUR=$IOP_WORK/bin/verbs_tour
    strip -o "$TOUR" "$(iop_target_dir)/debug/examples/verbs_tour" 2>/dev/null ||
        cp "$(iop_target_dir)/debug/examples/verbs_tour" "$TOUR"
}

build_rdmacore || { iop_result "build rpcrdma --features rdma-core" 1; iop_summary; exit 1; }
iop_prepare_guest || { iop_result "prepare the guest" 1; iop_summary; exit 1; }

# checks_from NAME: the guest's INTEROP-CHECK lines as results.
checks_from() {
    local log=$IOP_WORK/$1.log n=0 rc name
    while read -r rc name; do
        iop_result "$name" "$rc"
        n=$((n + 1))
    done < <(sed -n 's/\r$//; s/^INTEROP-CHECK \([0-9]*\) \(.*\)$/\1 \2/p' "$log")
    [ "$n" -gt 0 ] || iop_result "$1: the guest reported no checks" 1 "see $log"
}

# ---------------------------------------------------------------- rxe
iop_log "rxe: booting the guest (demo, serve/call, nfsd, perftest + bench verbs)"
iop_guest_start rxe exec --rdma rxe --port "$PORT" --add "$BIN" --add "$TOUR" --script "$GUEST_SCRIPT" \
    --out "$IOP_WORK/rxe-out" --timeout 900
iop_guest_finish rxe 960
rc=$?
grep -q '^INTEROP-EXEC-RC 0' "$IOP_WORK/rxe.log"
iop_result "rxe: guest script ran to the end" $? "run-guest.sh exit $rc"
checks_from rxe

# Ratios against perftest, from the same boot.
python3 - "$IOP_WORK/rxe-out" "$IOP_WORK/bench-ratios.json" <<'PY'
import json, math, os, statistics, sys
d, dest = sys.argv[1], sys.argv[2]
nan = math.nan

def perftest(name, col):
    # The result line starts with the message size; col is the column.
    try:
        for line in open(os.path.join(d, name + ".txt")):
            f = line.split()
            if len(f) > col and f[0] in ("1048576", "64") and f[1].isdigit():
                return float(f[col])
    except (OSError, ValueError):
        pass
    return nan

def ours(name, key):
    try:
        x = json.load(open(os.path.join(d, name + ".json"))).get(key)
        return float(x) if x is not None else nan
    except (OSError, ValueError):
        return nan

wall = {}
try:
    for line in open(os.path.join(d, "pt-lat-wall.txt")):
        r, a, b = line.split()
        wall[int(r)] = (int(a), int(b))
except (OSError, ValueError):
    pass

def div(a, b):
    return a / b if math.isfinite(a) and math.isfinite(b) and b > 0 else nan

rounds = []
for r in (1, 2, 3):
    # perftest's MB/sec is 2^20 octets per second; its BW average is column 3.
    w, rr = perftest("pt-write-%d" % r, 3), perftest("pt-read-%d" % r, 3)
    a, b = wall.get(r, (0, 0))
    rtt = (b - a) / 2800 / 1000 if b > a > 0 else nan
    own = perftest("pt-lat3000-%d" % r, 5)
    # ib_send_lat's t_avg is one way, by its own CPU clock (inf, or
    # warned about, when it cannot calibrate it under TCG): twice it is a
    # second estimate of its round trip, a cross-check of the wall clock's
    # (which is off when the two runs' connection set-up times differ).
    own_rtt = 2 * own if math.isfinite(own) and own > 0 else nan
    # A wall-clock estimate that could not be made (the 3000-iteration run
    # ended sooner than the 200-iteration one: its set-up took longer) is
    # replaced by the own-clock one; the round says which it used.
    src = "wall_clock" if math.isfinite(rtt) else "own_clock"
    ref = rtt if math.isfinite(rtt) else own_rtt
    ow, orr = ours("ours-write-%d" % r, "write_1mib_mib_per_s"), ours("ours-read-%d" % r, "read_1mib_mib_per_s")
    op, opp = ours("ours-ping-%d" % r, "send64_pingpong_rtt_us"), ours("ours-pingpoll-%d" % r, "send64_pingpong_rtt_us")
    rounds.append({
        "ib_write_bw_mib_per_s": w, "ib_read_bw_mib_per_s": rr,
        "ib_send_lat_rtt_us_wall_clock": rtt, "ib_send_lat_t_avg_us_own_clock": own,
        "ours_write_1mib_mib_per_s": ow, "ours_read_1mib_mib_per_s": orr,
        "ours_send64_rtt_us": op, "ours_send64_rtt_us_poll_cq": opp,
        "write_vs_ib_write_bw": div(ow, w), "read_vs_ib_read_bw": div(orr, rr),
        "send64_rtt_vs_ib_send_lat": div(op, ref), "send64_rtt_poll_cq_vs_ib_send_lat": div(opp, ref),
        "ib_send_lat_rtt_source": src,
        "ib_send_lat_rtt_us_own_clock": own_rtt, "send64_rtt_vs_ib_send_lat_own_clock": div(op, own_rtt),
    })

def med(key):
    v = [x[key] for x in rounds if math.isfinite(x[key])]
    return statistics.median(v) if v else nan

keys = ["write_vs_ib_write_bw", "read_vs_ib_read_bw", "send64_rtt_vs_ib_send_lat", "send64_rtt_poll_cq_vs_ib_send_lat"]
ratios = {k: med(k) for k in keys}
# Not part of the check (t_avg may be inf under TCG): the round-trip ratio
# against perftest's own clock, and the rounds whose two perftest round
# trips disagree by more than 2x (their wall-clock ratio is not a finding).
cross = "send64_rtt_vs_ib_send_lat_own_clock"
disagree = [i + 1 for i, x in enumerate(rounds)
            if not 0.5 <= div(x["ib_send_lat_rtt_us_wall_clock"], x["ib_send_lat_rtt_us_own_clock"]) <= 2]
out = {
    "device": "rxe0 (RoCE v2, QEMU TCG guest)",
    "method": "3 paired rounds, perftest and rpcrdma bench verbs back to back in each; ratios are medians of per-round ratios (bandwidth: ours / perftest, > 1 is faster; round trip: ours / perftest, < 1 is faster); perftest busy-polls, bench verbs sleeps on the completion channel unless --poll-cq; ib_send_lat's round trip from the wall clock (difference of a 3000 and a 200 iteration run), or from twice its own t_avg in a round where the wall clock gives none (ib_send_lat_rtt_source); cross_check: the same ratio against twice ib_send_lat's own t_avg, and the rounds where the two perftest round trips differ by more than 2x",
    "ratios": ratios,
    "cross_check": {cross: med(cross), "rounds_where_wall_and_own_clock_differ_2x": disagree},
    "medians": {k: med(k) for k in rounds[0] if k not in keys and k != cross and k != "ib_send_lat_rtt_source"},
    "rounds": rounds,
}
json.dump(out, open(dest, "w"), indent=1, default=str)
m = out["medians"]
print("    | medians of 3 paired rounds on rxe0 (TCG guest: only ratios mean anything)")
print("    |   perftest: ib_write_bw %.1f MiB/s, ib_read_bw %.1f MiB/s, ib_send_lat round trip %.1f us" % (m["ib_write_bw_mib_per_s"], m["ib_read_bw_mib_per_s"], m["ib_send_lat_rtt_us_wall_clock"]))
print("    |   rpcrdma bench verbs: RDMA Write 1 MiB %.1f MiB/s, RDMA Read 1 MiB %.1f MiB/s, Send/Recv 64 B round trip %.1f us (%.1f us with --poll-cq)" % (m["ours_write_1mib_mib_per_s"], m["ours_read_1mib_mib_per_s"], m["ours_send64_rtt_us"], m["ours_send64_rtt_us_poll_cq"]))
for k in keys + [cross]:
    print("    |   ratio %-36s %.3f   (rounds: %s)" % (k, med(k), ", ".join("%.3f" % x[k] for x in rounds)))
if disagree:
    print("    |   rounds %s: ib_send_lat's wall-clock and own-clock round trips differ by more than 2x (set-up times varied): their round-trip ratios are noise" % disagree)
own_used = [i + 1 for i, x in enumerate(rounds) if x["ib_send_lat_rtt_source"] == "own_clock"]
if own_used:
    print("    |   rounds %s: no wall-clock round trip (the long run ended sooner than the short one); the round-trip ratios use ib_send_lat's own clock" % own_used)
# The check is that every figure was produced, never its value.
sys.exit(0 if all(math.isfinite(v) and v > 0 for v in ratios.values()) else 1)
PY
iop_result "rxe: perftest and bench verbs figures from the same boot, as median ratios of paired rounds" $? \
    "$(python3 -c 'import json,sys; print(", ".join("%s %.3f" % kv for kv in json.load(open(sys.argv[1]))["ratios"].items()))' "$IOP_WORK/bench-ratios.json" 2>/dev/null)"

# ---------------------------------------------------------------- siw
iop_log "siw: host software iWARP serve on 127.0.0.1:$PORT and rping -s on :$P3"
timeout 900 "$BIN" serve --listen "127.0.0.1:$PORT" --duration 880 >"$IOP_WORK/host-serve.txt" 2>&1 &
IOP_PIDS+=("$!")
timeout 900 "$BIN" rping -s -a 127.0.0.1 -p "$P3" -C 3 -S 64 -v --accept-timeout 880 --timeout 60 \
    >"$IOP_WORK/host-rping-server.txt" 2>&1 &
RPING_S=$!
IOP_PIDS+=("$RPING_S")
iop_log "siw: booting the guest (both directions, nfsd)"
iop_guest_start siw exec --rdma siw --port "$PORT" --fwd "$P3" --hostfwd "$P1" --hostfwd "$P4" \
    --add "$BIN" --add "$TOUR" --script "$GUEST_SCRIPT" --out "$IOP_WORK/siw-out" --timeout 900
if iop_guest_wait_line siw '^INTEROP-GUEST-SERVE-READY' 600; then
    G=127.0.0.1:$P1
    host_check() {
        local name=$1 re=$2 out
        shift 2
        out=$IOP_WORK/host-$(echo "$name" | tr -c 'a-zA-Z0-9\n' '-').txt
        timeout 120 "$BIN" "$@" >"$out" 2>&1
        local rc=$?
        sed 's/^/    | /' "$out"
        if [ "$rc" = 0 ] && grep -qE "$re" "$out"; then iop_result "$name" 0; else iop_result "$name" 1 "exit $rc; see $out"; fi
    }
    host_check "siw: host -> guest: NULL" 'NULL ok' call "$G" demo null
    host_check "siw: host -> guest: ECHO 1 KiB" 'ECHO of 1024 bytes verified' call "$G" demo echo
    host_check "siw: host -> guest: READ 1 MiB (Write chunk)" 'READ of 1048576 bytes verified' \
        call "$G" demo read --size 1048576
    host_check "siw: host -> guest: WRITE 1 MiB (Read chunk)" 'WRITE of 1048576 bytes verified' \
        call "$G" demo write --size 1048576
    host_check "siw: host -> guest: probe (the guest's R = 0)" 'RFC 8797: .*remote invalidation no' \
        probe "$G" --prog 0x2052444d --vers 1
    host_check "siw: host -> guest: rping -c (software iWARP) vs rping -s (rdma-core)" 'rping client: PASS' \
        rping -c -a 127.0.0.1 -p "$P4" -C 3 -S 64 -v --connect-wait 60 --timeout 30
else
    iop_result "siw: the guest's rdma-core server came up" 1 "see $IOP_WORK/siw.log"
fi
iop_guest_finish siw 600
rc=$?
grep -q '^INTEROP-EXEC-RC 0' "$IOP_WORK/siw.log"
iop_result "siw: guest script ran to the end" $? "run-guest.sh exit $rc"
checks_from siw
iop_wait_pid "$RPING_S" 20
iop_result "siw: guest -> host: the host's rping -s served the rdma-core client" $? \
    "$(tail -1 "$IOP_WORK/host-rping-server.txt")"

iop_summary
