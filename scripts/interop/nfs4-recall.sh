#!/usr/bin/env bash
# nfs4-recall.sh - a delegation recalled over the backchannel of the Linux
# kernel's NFSv4.1 client, on its own RPC-over-RDMA connection (RFC 8167;
# issue 34 item 6):
#
#   1. the guest mounts `rpcrdma nfs serve` with vers=4.1,proto=rdma, opens
#      recall/data for reading and keeps it open (the server grants a read
#      delegation: its backchannel answered the CB_NULL probe);
#   2. on the host, our NFSv3 client (`rpcrdma nfs put --transport tcp`)
#      writes the file: the server answers NFS3ERR_JUKEBOX and sends
#      CB_RECALL to the guest as a reverse-direction RPC-over-RDMA call; the
#      kernel hands back its open (OPEN with CLAIM_DELEG_CUR_FH) and returns
#      the delegation (DELEGRETURN); the put's retry then succeeds, well
#      within the lease (no revocation);
#   3. the guest closes the file, drops its caches and reads the new
#      contents;
#   4. a process in the guest opens recall/held, writes it and takes a
#      write lock (nfs-locktest hold); the server is restarted under it
#      (SIGTERM, the same state directory): the kernel reclaims the open
#      and the lock in the grace period (CLAIM_PREVIOUS, LOCK reclaim) and
#      ends it with RECLAIM_COMPLETE; the process, on the same
#      descriptor, finds its lock still held against another process and
#      writes again; the host reads both writes;
#   5. the capture holds the CB_RECALL call (ours) and its reply (the
#      kernel's) on the guest's connection, and the guest's DELEGRETURN;
#      tshark finds every frame well-formed (after fpdu-align.py; the
#      known short-READ round-up of tshark excepted, spec note N11).
#
# Environment: IOP_NFS_RDMA_PORT (20049), IOP_NFS_MOUNT_PORT (20048),
# IOP_NFS_TCP_PORT (2049), IOP_NFS_LEASE (30), plus those of common.sh.
# Usage: scripts/interop/nfs4-recall.sh   (root; Debian 12 x86_64)
set -uo pipefail
IOP_NAME=nfs4-recall
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
RP=${IOP_NFS_RDMA_PORT:-20049}
MP=${IOP_NFS_MOUNT_PORT:-20048}
TP=${IOP_NFS_TCP_PORT:-2049}
LEASE=${IOP_NFS_LEASE:-30}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

iop_setup_work
echo "== $IOP_NAME: a delegation recalled through the kernel client's RDMA backchannel (logs: $IOP_WORK)"
iop_need tshark tshark || { iop_result "install tshark" 1; iop_summary; exit 1; }
iop_build || { iop_result "build rpcrdma" 1; iop_summary; exit 1; }
(cd "$IOP_ROOT" && cargo build -q -p rpcrdma-nfs-locktest) ||
    { iop_result "build nfs-locktest" 1; iop_summary; exit 1; }
mkdir -p "$IOP_WORK/bin"
strip -o "$IOP_WORK/bin/nfs-locktest" "$(iop_target_dir)/debug/nfs-locktest" 2>/dev/null ||
    cp "$(iop_target_dir)/debug/nfs-locktest" "$IOP_WORK/bin/nfs-locktest"
iop_prepare_guest || { iop_result "prepare the guest" 1; iop_summary; exit 1; }

EXPORT=$IOP_WORK/export
mkdir -p "$EXPORT/recall" "$IOP_WORK/state"
chmod 0777 "$EXPORT" "$EXPORT/recall"
echo "version 1" >"$EXPORT/recall/data"
chmod 0666 "$EXPORT/recall/data"
echo "version 2" >"$IOP_WORK/v2"

# start_server: (again) with the same state directory; its log appended.
start_server() {
    local before
    touch "$IOP_WORK/server.log"
    before=$(grep -c '^serving' "$IOP_WORK/server.log")
    "$BIN" nfs serve "$EXPORT" --listen "127.0.0.1:$RP" --mount-port "$MP" --tcp "127.0.0.1:$TP" \
        --state-dir "$IOP_WORK/state" --no-root-squash --lease "$LEASE" --mulpdu 1448 \
        --log info >>"$IOP_WORK/server.log" 2>&1 &
    SERVER_PID=$!
    IOP_PIDS+=("$SERVER_PID")
    for _ in $(seq 1 100); do
        [ "$(grep -c '^serving' "$IOP_WORK/server.log")" -gt "$before" ] && return 0
        sleep 0.2
    done
    return 1
}
start_server
iop_result "server started" $? "$(grep -m1 '^serving' "$IOP_WORK/server.log")"

script=$IOP_WORK/guest.sh
cat >"$script" <<'EOF'
M=/mnt/nfs
D=$M/recall
mkdir -p $M /opt/add/out
drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
if ! mount -t nfs -o "vers=4.1,proto=rdma,port=$PORT" "$SERVER:/" $M; then
    echo "RC-FAIL mount"
    exit 1
fi
echo "RC-PASS mount vers=4.1 proto=rdma"
exec 3<"$D/data"
read -r first <&3
echo "RC-INFO first read: $first"
[ "$first" = "version 1" ] && echo "RC-PASS read version 1 through the open file" || echo "RC-FAIL first read ($first)"
: >"$D/guest-ready"
i=0
while [ $i -lt 180 ]; do
    drop
    ls "$D" | grep -q host-done && break
    sleep 1
    i=$((i + 1))
done
[ $i -lt 180 ] && echo "RC-PASS the host wrote the file while it was open here" || echo "RC-FAIL no word from the host"
exec 3<&-
drop
second=$(cat "$D/data")
echo "RC-INFO second read: $second"
[ "$second" = "version 2" ] && echo "RC-PASS the guest reads the new contents" || echo "RC-FAIL second read ($second)"
# An open and a lock held across a restart of the server.
nfs-locktest hold "$D/held" >/tmp/hold.txt 2>&1 &
holder=$!
i=0
while [ $i -lt 300 ]; do
    drop
    ls "$D" | grep -q '^restarted$' && break
    sleep 1
    i=$((i + 1))
done
: >"$D/held.go"
wait $holder
sed 's/^/RC-INFO /' /tmp/hold.txt
grep -q '^HOLD-OK' /tmp/hold.txt && echo "RC-PASS an open and a lock held across the server's restart" || echo "RC-FAIL held across the restart"
cd /
umount $M && echo "RC-PASS unmount" || echo "RC-FAIL unmount"
EOF

iop_log "guest: mount vers=4.1 proto=rdma, hold recall/data open"
iop_guest_start client exec --port "$RP" --add "$IOP_WORK/bin/nfs-locktest" --script "$script" \
    --out "$IOP_WORK/out" --timeout 900
ready=1
for _ in $(seq 1 300); do
    [ -e "$EXPORT/recall/guest-ready" ] && { ready=0; break; }
    kill -0 "$GUEST_PID" 2>/dev/null || break
    sleep 1
done
iop_result "the guest holds recall/data open" $ready
t0=$(date +%s.%N)
timeout 120 "$BIN" nfs put "$IOP_WORK/v2" "127.0.0.1:/recall/data" --transport tcp \
    --port "$TP" --mount-port "$MP" --mode 666 >"$IOP_WORK/put.log" 2>&1
rc=$?
secs=$(echo "$(date +%s.%N) - $t0" | bc)
iop_result "our NFSv3 client's write, held while the delegation was recalled, then done" $rc \
    "$(tail -1 "$IOP_WORK/put.log" | cut -c1-160); ${secs} s"
awk -v s="$secs" -v l="$LEASE" 'BEGIN { exit !(s < l) }'
iop_result "the delegation came back before the lease ($LEASE s) ran out: returned, not revoked" $? "${secs} s"
touch "$EXPORT/recall/host-done"
held=1
for _ in $(seq 1 300); do
    [ -e "$EXPORT/recall/held.ready" ] && { held=0; break; }
    kill -0 "$GUEST_PID" 2>/dev/null || break
    sleep 1
done
iop_result "a process in the guest holds recall/held open and write-locked" $held
iop_log "restarting the server under the held open and lock"
kill -TERM "$SERVER_PID" 2>/dev/null
iop_wait_pid "$SERVER_PID" 30
iop_result "server stopped (SIGTERM)" $?
sleep 2
start_server
iop_result "server restarted (same state directory): a grace period" $? "$(grep -c 'grace period' "$IOP_WORK/server.log") grace lines"
touch "$EXPORT/recall/restarted"
iop_guest_finish client 950
rc=$?
log=$IOP_WORK/client.log
grep -E '^RC-' "$log" | tr -d '\r' | sed 's/^/    | /'
fails=$(grep -c '^RC-FAIL' "$log")
[ "$rc" = 0 ] && [ "$fails" = 0 ] && [ "$(grep -c '^RC-PASS' "$log")" = 6 ]
iop_result "guest: read, held, re-read the new contents" $? "$fails failed, guest exit $rc"
! grep -q 'was not returned: revoked' "$IOP_WORK/server.log"
iop_result "no delegation revoked" $?
[ "$(cat "$EXPORT/recall/held" 2>/dev/null)" = "$(printf 'before\nafter')" ]
iop_result "recall/held holds what the process wrote before and after the restart" $? \
    "$(tr '\n' ' ' <"$EXPORT/recall/held" 2>/dev/null)"
g=$(sed 's/\x1b\[[0-9;]*m//g' "$IOP_WORK/server.log" | grep -o 'NFSv4 grace period over: [^=]*locks' | tail -1)
n=$(echo "$g" | sed -n 's/.*reclaimed \([0-9]*\) opens.*/\1/p')
echo "$g" | grep -q ': 1 of 1 previous clients' && [ "${n:-0}" -ge 2 ]
iop_result "the kernel reclaimed the open and the lock in the grace period and completed" $? "${g:-no grace period over}"

pcap=$IOP_WORK/client.pcap
aligned=${pcap%.pcap}.aligned.pcap
if python3 "$HERE/fpdu-align.py" "$pcap" "$aligned" "$RP" from >"${aligned%.pcap}.txt" 2>&1; then
    # CB_COMPOUND (program 0x40000000, procedure 1) from our server with
    # CB_RECALL (callback operation 4) in it, the kernel's reply, and the
    # kernel's DELEGRETURN (operation 8).
    recalls=$(tshark -r "$aligned" -Y "tcp.srcport == $RP && rpc.program == 1073741824 && rpc.msgtyp == 0 && nfs.cb.operation == 4" 2>/dev/null | wc -l)
    answers=$(tshark -r "$aligned" -Y "tcp.dstport == $RP && rpc.program == 1073741824 && rpc.msgtyp == 1 && rpc.procedure == 1" 2>/dev/null | wc -l)
    returns=$(tshark -r "$aligned" -Y "tcp.dstport == $RP && rpc.msgtyp == 0 && nfs.opcode == 8" 2>/dev/null | wc -l)
    probes=$(tshark -r "$aligned" -Y "tcp.srcport == $RP && rpc.program == 1073741824 && rpc.procedure == 0 && rpc.msgtyp == 0" 2>/dev/null | wc -l)
    [ "$recalls" -ge 1 ] && [ "$answers" -ge 1 ] && [ "$returns" -ge 1 ] && [ "$probes" -ge 1 ]
    iop_result "capture: CB_NULL probe and CB_RECALL as reverse-direction RPC-over-RDMA calls, the kernel's replies, its DELEGRETURN" $? \
        "CB_NULL calls $probes, CB_RECALL calls $recalls, CB_COMPOUND replies $answers, DELEGRETURN $returns"
    out=${aligned%.pcap}.wire-check.txt
    timeout 600 "$IOP_WIRE_CHECK" "$aligned" --port "$RP" >"$out" 2>&1
    wrc=$?
    # The only failures allowed: tshark's short READ round-up (N11): a READ
    # reply of an odd count shorter than the Write chunk offered.
    other=$(grep ' FAIL ' "$out" | grep -cv 'writes=1 reply=0 rpc=reply prog=100003.*Malformed Packet: NFS')
    [ "$wrc" -le 1 ] && [ "$other" = 0 ] && grep -q '^wire-check: [1-9]' "$out"
    iop_result "tshark finds every frame well-formed, the reverse-direction ones included" $? \
        "$(iop_wire_verdict "$out" "$wrc"); $other failures other than N11's"
else
    iop_result "fpdu-align the capture" 1 "$(tail -1 "${aligned%.pcap}.txt")"
fi

kill -TERM "$SERVER_PID" 2>/dev/null
iop_wait_pid "$SERVER_PID" 30
rc=$?
! grep -qiE 'panicked' "$IOP_WORK/server.log"
[ "$rc" = 0 ] && [ $? = 0 ]
iop_result "server: clean shutdown, no panic" $? "exit $rc"
iop_summary
