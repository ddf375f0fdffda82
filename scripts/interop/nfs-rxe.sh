#!/usr/bin/env bash
# nfs-rxe.sh - the kernel NFS client and `rpcrdma nfs serve --provider
# rdma-core` both in the QEMU guest over rxe (soft RoCE v2), issue 12 item
# 4's last part: our server (built with the rdma-core feature) exports a
# tmpfs in the guest on rxe0, the kernel client of the same guest mounts it
# with vers=3,proto=rdma and runs the data-integrity workload of
# nfs-workload.sh; the guest compares the big file's SHA-256 with the
# exported copy's.
#
# With IOP_NFS_RXE_VERS (default "3 4.1") it does so for each version in
# turn: NFSv4.1 adds fcntl and flock locks between two processes
# (nfs-locktest) to the workload.
#
# Environment: IOP_NFS_RXE_BIG_MIB (default 64, the full workload's),
# IOP_NFS_RXE_SIZES (the other
# workload sizes; default "NSMALL=100 NDIR=1000 NRANDOM=100", empty for
# the full workload), plus common.sh's
# (RPCRDMA_RDMACORE_BIN: a binary built with --features rdma-core).
# Exit status 0 only if every check passed.
set -uo pipefail
IOP_NAME=nfs-rxe
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIG=${IOP_NFS_RXE_BIG_MIB:-64}
SIZES=${IOP_NFS_RXE_SIZES-NSMALL=100 NDIR=1000 NRANDOM=100}
VERSIONS=${IOP_NFS_RXE_VERS:-3 4.1}

iop_setup_work
echo "== $IOP_NAME: the kernel NFS client and rpcrdma nfs serve --provider rdma-core in the guest over rxe (logs: $IOP_WORK)"
iop_build_rdmacore || { iop_result "build rpcrdma --features rdma-core" 1; iop_summary; exit 1; }
iop_prepare_guest || { iop_result "prepare the guest" 1; iop_summary; exit 1; }
LOCKTEST=
case " $VERSIONS " in
*" 4."*)
    (cd "$IOP_ROOT" && cargo build -q -p rpcrdma-nfs-locktest) ||
        { iop_result "build nfs-locktest" 1; iop_summary; exit 1; }
    mkdir -p "$IOP_WORK/bin"
    strip -o "$IOP_WORK/bin/nfs-locktest" "$(iop_target_dir)/debug/nfs-locktest" 2>/dev/null ||
        cp "$(iop_target_dir)/debug/nfs-locktest" "$IOP_WORK/bin/nfs-locktest"
    LOCKTEST=$IOP_WORK/bin/nfs-locktest
    ;;
esac

for VERS in $VERSIONS; do
RUN=rxe
[ "$VERS" = 3 ] || RUN=rxe-v$VERS
cat >"$IOP_WORK/guest-$RUN.sh" <<EOF
ME=10.0.2.15
mkdir -p /export /tmp/state
mount -t tmpfs -o size=400m tmpfs /export
chmod 0777 /export
ulimit -l unlimited 2>/dev/null
./rpcrdma nfs serve /export --provider rdma-core --device rxe0 --listen \$ME:20049 \\
    --mount-port 20048 --state-dir /tmp/state --no-root-squash >/tmp/server.log 2>&1 &
SPID=\$!
i=0
while ! grep -q '^serving' /tmp/server.log && [ \$i -lt 150 ]; do sleep 0.2; i=\$((i + 1)); done
cat /tmp/server.log | sed 's/^/NFS-RXE-SERVER /'
grep -q '^serving' /tmp/server.log || { echo "WL-FAIL server did not start"; exit 1; }
SERVER=\$ME NFS_PORT=20049 MNT_PORT=20048 PROTO=rdma RUN=$RUN VERS=$VERS BIG_MIB=$BIG $SIZES sh ./nfs-workload.sh
rc=\$?
sum=\$(grep '^WL-BIG-SHA256' /opt/add/out/results.txt | cut -d' ' -f2)
exported=\$(sha256sum /export/wl-$RUN/big | cut -d' ' -f1)
if [ -n "\$sum" ] && [ "\$sum" = "\$exported" ]; then
    echo "NFS-RXE-SAME \$exported"
else
    echo "NFS-RXE-DIFFERENT client \$sum server \$exported"
    rc=1
fi
kill -TERM \$SPID
i=0
while kill -0 \$SPID 2>/dev/null && [ \$i -lt 100 ]; do sleep 0.2; i=\$((i + 1)); done
kill -0 \$SPID 2>/dev/null && { echo "NFS-RXE-SERVER did not stop"; rc=1; }
grep -iE 'panicked' /tmp/server.log && rc=1
exit \$rc
EOF

iop_log "booting the guest (rxe): server and kernel client in the guest, NFS version $VERS"
t=$SECONDS
iop_guest_start "$RUN" exec --rdma rxe --add "$RC_BIN" --add "$HERE/nfs-workload.sh" \
    ${LOCKTEST:+--add "$LOCKTEST"} \
    --script "$IOP_WORK/guest-$RUN.sh" --out "$IOP_WORK/out-$RUN" --timeout 1500
iop_guest_finish "$RUN" 1700
rc=$?
log=$IOP_WORK/$RUN.log
grep -aE '^(WL-|NFS-RXE-)' "$log" | tr -d '\r' | sed 's/^/    | /'
fails=$(grep -ac '^WL-FAIL' "$log")
passes=$(grep -ac '^WL-PASS' "$log")
[ "$rc" = 0 ] && [ "$fails" = 0 ] && [ "$passes" -ge 20 ] && grep -aq '^WL-DONE 0 failed' "$log"
iop_result "$RUN: kernel client workload (vers=$VERS) against rpcrdma nfs serve --provider rdma-core" $? \
    "$passes checks passed, $fails failed, guest exit $rc, $((SECONDS - t)) s"
grep -aq '^NFS-RXE-SAME' "$log"
iop_result "$RUN: the $BIG MiB file the client wrote is the one the server stored (SHA-256)" $?
done
iop_summary
