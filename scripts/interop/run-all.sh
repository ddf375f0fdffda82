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
#   nfs-rxe.sh     the kernel NFS client and rpcrdma nfs serve --provider
#                  rdma-core both in the guest over rxe (issue 12 item 4)
#   nfs-kernel-client.sh  the kernel NFS client mounts rpcrdma nfs serve over
#                  proto=rdma (siw) and proto=tcp and runs the data-integrity
#                  workload (issue 12 item 4), then a short run for tshark; about 30
#                  minutes under TCG
#
# Builds rpcrdma once (cargo build -p rpcrdma-cli) and the guest
# (build-guest.sh installs its host packages with apt and downloads the
# Debian kernel on the first run: root or sudo needed). Prints each script's
# PASS/FAIL lines, then a summary with the time used against the budget
# (IOP_BUDGET seconds, default 4500). Exit status 0 only if every script
# passed within the budget (IOP_SCRIPTS picks a subset); a script that overruns its share is stopped.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 2
HERE=$(pwd)
BUDGET=${IOP_BUDGET:-4500}
T0=$SECONDS
WORK=${IOP_WORK_ROOT:-$(mktemp -d /tmp/rpcrdma-interop.XXXXXX)}
mkdir -p "$WORK"

SCRIPTS=${IOP_SCRIPTS:-siw-rping nfsd-null rdmacore nfsd-client nfs-rxe nfs-kernel-client}
export IOP_NAME=run-all
# shellcheck source=common.sh
. "$HERE/common.sh"
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
echo "== interop summary (logs and captures in $WORK)"
for s in $SCRIPTS; do
    if [ "${RC[$s]}" = 0 ]; then r=PASS; else r="FAIL (exit ${RC[$s]})"; fail=1; fi
    printf '   %-18s %-16s %4ss\n' "$s" "$r" "${SECS[$s]}"
done
printf '   total: %ss of a %ss budget\n' "$total" "$BUDGET"
if [ "$total" -gt "$BUDGET" ]; then
    echo "   over budget"
    fail=1
fi
if [ "$fail" = 0 ]; then
    echo "== interop: PASS"
else
    echo "== interop: FAIL"
fi
exit "$fail"
