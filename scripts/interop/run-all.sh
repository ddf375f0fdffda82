#!/usr/bin/env bash
# run-all.sh - the kernel interop checks for CI: our stack against the Linux
# kernel (siw, rping, nfsd/svcrdma) in the QEMU guest of ../shared/interop.
#
#   siw-rping.sh   software iWARP vs siw + rping, both roles (issue 3 item 6)
#   nfsd-null.sh   rpcrdma call/probe vs the kernel NFS server, Version One
#                  and Version Two negotiation with fallback (issue 5 item 10,
#                  issue 6 item 5)
#   rdmacore.sh    the rdma-core provider in the guest over rxe and siw:
#                  demo, serve/call, the kernel nfsd, perftest ratios, and
#                  our software iWARP on the host in both directions (issue
#                  10 item 3); builds its own binary with --features
#                  rdma-core (needs libibverbs-dev librdmacm-dev)
#   nfsd-client.sh rpcrdma nfs get/put/ls vs the kernel NFS server over siw
#                  (issue 12 item 5)
#   nfsd-client4.sh the same with our NFSv4.1 client, over siw and (rdma-core
#                  provider) rxe: nfsd's CB_RECALL answered on our RDMA
#                  connection, the delegation returned, the backchannel
#                  never CB_PATH_DOWN (nfsd sends 4.1 clients no CB_NULL)
#                  (issue 38 item 4); about 3 to 4 minutes
#   nfs-rxe.sh     the kernel NFS client and rpcrdma nfs serve --provider
#                  rdma-core both in the guest over rxe, NFSv3 and NFSv4.1
#                  (issue 12 item 4, issue 34 item 6)
#   nfs-kernel-client.sh  the kernel NFS client mounts rpcrdma nfs serve over
#                  proto=rdma (siw) and proto=tcp and runs the data-integrity
#                  workload (issue 12 item 4), then a short run for tshark; about 30
#                  minutes under TCG
#   nfs4-kernel-client.sh  the same with vers=4.1 (short runs over RDMA and
#                  TCP, nfs-fsx with a restart) and vers=4.2 (short, RDMA)
#                  (issue 34 item 6; IOP_NFS4_FULL=1 for the full runs)
#   nfs4-recall.sh a delegation recalled through the kernel client's RDMA
#                  backchannel, and an open and a lock reclaimed after a
#                  restart (issue 34 item 6)
#
# Builds rpcrdma once (cargo build -p rpcrdma-cli) and the guest
# (build-guest.sh installs its host packages with apt and downloads the
# Debian kernel on the first run: root or sudo needed). Prints each script's
# PASS/FAIL lines, then a summary with the time used against the budget
# (IOP_BUDGET seconds, default 4500). Exit status 0 only if every script
# passed within the budget (IOP_SCRIPTS picks a subset); a script that overruns its share is stopped.
#
# Logs and captures go to IOP_WORK_ROOT (default: a new /tmp/rpcrdma-interop.*
# directory). A run writes about 1 GB there and tshark's decode of the
# largest capture about 2.6 GB more in TMPDIR, so the run refuses to start
# with less than IOP_MIN_FREE_GB (default 4) free in either. When every
# script passed, the default directory is removed (IOP_KEEP=1 keeps it);
# after a failure it stays for the post-mortem.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 2
HERE=$(pwd)
BUDGET=${IOP_BUDGET:-4500}
T0=$SECONDS
MIN_FREE_GB=${IOP_MIN_FREE_GB:-4}
WORK_MADE=0
if [ -z "${IOP_WORK_ROOT:-}" ]; then
    WORK=$(mktemp -d /tmp/rpcrdma-interop.XXXXXX) || exit 2
    WORK_MADE=1
else
    WORK=$IOP_WORK_ROOT
fi
mkdir -p "$WORK"
SCRIPTS=${IOP_SCRIPTS:-siw-rping nfsd-null rdmacore nfsd-client nfsd-client4 nfs-rxe nfs-kernel-client nfs4-kernel-client nfs4-recall}
export IOP_NAME=run-all
# shellcheck source=common.sh
. "$HERE/common.sh"
for d in "$WORK" "${TMPDIR:-/tmp}"; do
    free_kb=$(iop_free_kb "$d")
    if [ "${free_kb:-0}" -lt $((MIN_FREE_GB * 1048576)) ]; then
        echo "run-all: only $(iop_free_gb "$d") free in $d; the interop checks need ${MIN_FREE_GB} GB there (captures, and tshark's decode of them)."
        echo "run-all: free some space (old /tmp/rpcrdma-interop.* directories of failed runs, cargo's target/debug/incremental), or point IOP_WORK_ROOT and TMPDIR elsewhere."
        [ "$WORK_MADE" = 1 ] && rmdir "$WORK" 2>/dev/null
        exit 1
    fi
done
if ! iop_build; then
    echo "run-all: building rpcrdma failed"
    exit 1
fi
export RPCRDMA_BIN=$BIN

declare -A RC SECS
for s in $SCRIPTS; do
    left=$((BUDGET - (SECONDS - T0)))
    if [ "$left" -le 30 ]; then
        echo "run-all: no time left for $s (budget ${BUDGET}s)"
        RC[$s]=124
        SECS[$s]=0
        continue
    fi
    t=$SECONDS
    IOP_WORK=$WORK/$s timeout --signal=TERM --kill-after=30 "$left" "$HERE/$s.sh"
    RC[$s]=$?
    SECS[$s]=$((SECONDS - t))
    echo
done

total=$((SECONDS - T0))
fail=0
for s in $SCRIPTS; do
    [ "${RC[$s]}" = 0 ] || fail=1
done
[ "$total" -le "$BUDGET" ] || fail=1
if [ "$WORK_MADE" = 1 ] && [ "${IOP_KEEP:-0}" != 1 ] && [ "$fail" = 0 ]; then
    rm -rf "$WORK"
    echo "== interop summary (every script passed: $WORK removed; IOP_KEEP=1 keeps the logs and captures)"
else
    echo "== interop summary (logs and captures in $WORK)"
fi
for s in $SCRIPTS; do
    if [ "${RC[$s]}" = 0 ]; then r=PASS; else r="FAIL (exit ${RC[$s]})"; fi
    printf '   %-18s %-16s %4ss\n' "$s" "$r" "${SECS[$s]}"
done
printf '   total: %ss of a %ss budget\n' "$total" "$BUDGET"
if [ "$total" -gt "$BUDGET" ]; then
    echo "   over budget"
fi
if [ "$fail" = 0 ]; then
    echo "== interop: PASS"
else
    echo "== interop: FAIL"
fi
exit "$fail"
