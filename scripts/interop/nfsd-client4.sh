#!/usr/bin/env bash
# nfsd-client4.sh - our NFSv4.1 client (`rpcrdma nfs --vers 4.1`) against the
# Linux kernel NFS server (nfsd + svcrdma) in the QEMU guest of
# ../shared/interop, answering nfsd's callbacks on its own RPC-over-RDMA
# connection (RFC 8167; issue 38 item 4). Two guest boots:
#
#   siw: nfsd on siw0, our client on the host over our software iWARP:
#     1. `nfs get` of an 8 MiB file the guest made from /dev/urandom:
#        byte-identical (SHA-256 printed by the guest);
#     2. `nfs put` of an 8 MiB file, `get` back: identical, and the
#        guest's own SHA-256 of what nfsd stored matches;
#     3. `nfs ls` of a 3000-entry directory: every name;
#     4. `nfs stat`, and a `get` over TCP (NFSv4.1 too) for comparison;
#     5. a delegation: `nfs get --hold-delegation` opens recall.bin for
#        reading and keeps the read delegation nfsd grants; a process in
#        the guest then appends to the file; nfsd recalls the delegation
#        with CB_RECALL on our RDMA connection, we return it
#        (DELEGRETURN), and the guest's write completes in well under the
#        10 s lease (nfsd would otherwise wait out the lease-break time);
#     6. the capture (after fpdu-align.py) holds nfsd's CB_RECALL (in a
#        CB_COMPOUND after CB_SEQUENCE) as a reverse-direction
#        RPC-over-RDMA call from nfsd's port, our reply, and our
#        DELEGRETURN; no SEQUENCE reply sets SEQ4_STATUS_CB_PATH_DOWN;
#        our client's report says the same;
#     7. tshark finds every frame well-formed;
#     8. nfsd's tracepoints (nfsd_cb_*, nfsd_deleg_*) for the recalled
#        client: backchannel set up with proto=rdma and up, the CB_RECALL
#        sent, the delegation returned (nfsd_cb_recall_done, if traced,
#        with status 0).
#   rxe: nfsd and our client built with the rdma-core provider, both in
#     the guest over rxe0 (soft RoCE): get and put of 8 MiB identical, the
#     directory listed, a delegation recalled by a write in the guest and
#     returned, the client's report and nfsd's tracepoints as above (no
#     capture: the traffic stays inside the guest).
#
# No CB_NULL: Linux nfsd never sends one to an NFSv4.1 client. Its probe
# (nfsd_cb_probe) sets up the backchannel client and, for minor version 1
# and later, marks it up without a call (nfsd4_run_cb_work(): "Don't send
# probe messages for 4.1 or later"; seen here with 6.1: nfsd_cb_probe,
# nfsd_cb_setup proto=rdma, nfsd_cb_state UP, and no CB_NULL in the
# capture). The checks count any CB_NULL and require each to be answered,
# but expect none; CB_NULL is answered in cargo test against our own
# server (crates/cli/tests/nfs4_client.rs).
#
# Environment: IOP_NFSD_RDMA_PORT (default 20049), IOP_NFSD_MOUNT_PORT
# (20048), IOP_NFSD_TCP_PORT (2049): ports on 127.0.0.1 forwarded to the
# same ports in the guest (another guest check using them: this waits);
# IOP_NFSD4_RXE=0 skips the rxe boot; RPCRDMA_RDMACORE_BIN; plus common.sh's.
# Exit status 0 only if every check passed. About 4 minutes under TCG
# once the guest and the binaries are built.
set -uo pipefail
IOP_NAME=nfsd-client4
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
RP=${IOP_NFSD_RDMA_PORT:-20049}
MP=${IOP_NFSD_MOUNT_PORT:-20048}
TP=${IOP_NFSD_TCP_PORT:-2049}
NDIR=3000
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

iop_setup_work
echo "== $IOP_NAME: rpcrdma nfs --vers 4.1 vs the Linux kernel NFS server, callbacks on our RDMA connection (logs: $IOP_WORK)"
iop_need tshark tshark || { iop_result "install tshark" 1; iop_summary; exit 1; }
iop_build || { iop_result "build rpcrdma" 1; iop_summary; exit 1; }
iop_prepare_guest || { iop_result "prepare the guest" 1; iop_summary; exit 1; }

# The forwarded ports may be in use by another guest check: wait for them.
for _ in $(seq 1 120); do
    busy=0
    for p in "$RP" "$MP" "$TP"; do
        ss -Htln "sport = :$p" 2>/dev/null | grep . >/dev/null && busy=1
    done
    [ "$busy" = 0 ] && break
    iop_log "ports $RP/$MP/$TP busy (another guest check?): waiting"
    sleep 5
done

# The guest's nfsd: lease and grace of 10 s (a fresh nfsd is in its grace
# period, where OPENs wait), NFSv4.1 on, an RDMA listener. lockd's grace
# period counts too: nfsd grants no delegation while locks_in_grace(), and
# lockd's default is 5 x nlm_timeout = 50 s (seen: no delegation 19 s
# after nfsd started), so it is set to 10 s as well. nfsd's callback and
# delegation tracepoints are on (NFSD-TRACE lines at the end).
nfsd_setup() { # $1: a line of setup run first
    cat <<EOF
$1
mkdir -p /export /var/lib/nfs/v4recovery
mount -t tmpfs -o size=200m tmpfs /export
dd if=/dev/urandom of=/export/from-guest.bin bs=1M count=8 2>/dev/null
echo "NFSD-SHA256 \$(sha256sum /export/from-guest.bin | cut -d' ' -f1)"
dd if=/dev/urandom of=/export/recall.bin bs=4096 count=1 2>/dev/null
mkdir /export/big-dir
seq 1 $NDIR | sed 's/^/name-/' | (cd /export/big-dir && xargs touch)
chmod 0777 /export
chmod 0666 /export/recall.bin
mount -t nfsd nfsd /proc/fs/nfsd
mkdir -p /var/lib/nfs/rpc_pipefs
mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs 2>/dev/null
echo "/export *(rw,insecure,no_root_squash,no_subtree_check,fsid=0)" > /etc/exports
rpcbind -w
exportfs -ra
rpc.mountd --port $MP
echo 10 > /proc/fs/nfsd/nfsv4leasetime
echo 10 > /proc/fs/nfsd/nfsv4gracetime
echo 10 > /proc/sys/fs/nfs/nlm_grace_period
echo "NFSD-GRACE nfsv4 \$(cat /proc/fs/nfsd/nfsv4gracetime) s, lockd \$(cat /proc/sys/fs/nfs/nlm_grace_period) s"
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
for e in /sys/kernel/tracing/events/nfsd/nfsd_cb_* /sys/kernel/tracing/events/nfsd/nfsd_deleg_*; do
    [ -e "\$e/enable" ] && echo 1 > "\$e/enable"
done
rpc.nfsd --port $TP 8
echo "rdma $RP" > /proc/fs/nfsd/portlist
echo "NFSD-PORTS \$(cat /proc/fs/nfsd/portlist | tr '\n' ' ')"
echo "NFSD-VERSIONS \$(cat /proc/fs/nfsd/versions)"
EOF
}

# A process in the guest writes recall.bin when told (go-write appears),
# timing the write; nfsd recalls the delegation our client holds first.
guest_writer() {
    cat <<'EOF'
write_when_told() {
    i=0
    while [ ! -e /export/go-write ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done
    t0=$(cut -d' ' -f1 /proc/uptime)
    echo "appended by a process in the guest" >>/export/recall.bin
    t1=$(cut -d' ' -f1 /proc/uptime)
    echo "GUEST-WRITE-SECS $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')"
}
nfsd_trace() { # the callback and delegation events of the client recalled
    t=/sys/kernel/tracing/trace
    c=$(grep -m1 'nfsd_cb_recall:' $t 2>/dev/null | sed 's/.* client \([0-9a-f:]*\).*/\1/')
    grep -E 'nfsd_(cb|deleg)' $t 2>/dev/null | grep -F "client ${c:-none} " | head -40 | sed 's/^ */NFSD-TRACE /'
}
EOF
}

# trace_check NAME: nfsd's own account (its tracepoints, NFSD-TRACE lines
# in NAME.log) of the recalled client's backchannel: set up over RDMA and
# marked up, the CB_RECALL sent (by the guest's writing process), the
# delegation returned. nfsd_cb_recall_done, when traced, must say status
# 0; it may be missing: nfsd's rpciod completes the callback some time
# after our reply arrives (after nfsd_deleg_return in every run), and in
# one run of seven it was never traced, presumably because the client had
# returned the delegation and destroyed its session 15 ms after the reply
# (the capture showed our reply sent 0.7 ms after the call with NFS4_OK,
# then DELEGRETURN, CLOSE, DESTROY_SESSION; nfsd traced deleg_return).
trace_check() {
    local name=$1 lines done_
    lines=$(grep -a '^NFSD-TRACE ' "$IOP_WORK/$name.log" | tr -d '\r' | sed 's/^NFSD-TRACE //')
    [ -n "$lines" ] && sed 's/^/    | trace: /' <<<"$lines" | cut -c1-200
    done_=$(grep -o 'nfsd_cb_recall_done: .*' <<<"$lines" | sed 's/.*status=/status=/')
    grep -q 'nfsd_cb_setup: .* proto=rdma' <<<"$lines" &&
        grep -q 'nfsd_cb_state: .* state=UP' <<<"$lines" &&
        grep -q 'nfsd_cb_recall: ' <<<"$lines" &&
        grep -q 'nfsd_deleg_return: ' <<<"$lines" &&
        { [ -z "$done_" ] || [ "$done_" = status=0 ]; }
    iop_result "$name: nfsd's tracepoints: backchannel set up over RDMA and up, CB_RECALL sent, delegation returned" $? \
        "$(grep -c . <<<"$lines") events of the recalled client; nfsd_cb_recall_done ${done_:-not traced}"
}

# drop_resent PCAP PORT: removes from PCAP (in place) every TCP segment
# sent from PORT whose octets were all captured before in the same
# direction: the guest's own retransmissions (seen once in four runs on a
# loaded host: the guest's TCP sent a segment again 0.26 s after the host
# had acknowledged it, and tshark, which does not decode a retransmission
# as MPA, failed that frame). The byte stream is unchanged; the count is
# printed. fpdu-align.py does the same for the direction it rewrites.
drop_resent() {
    python3 - "$1" "$2" <<'PY'
import struct, sys
path, port = sys.argv[1], int(sys.argv[2])
data = open(path, "rb").read()
out, i, dropped, seen = [data[:24]], 24, 0, {}
while i + 16 <= len(data):
    incl = struct.unpack("<I", data[i + 8:i + 12])[0]
    rec, frame = data[i:i + 16 + incl], data[i + 16:i + 16 + incl]
    i += 16 + incl
    if len(frame) >= 34 and frame[12:14] == b"\x08\x00" and frame[23] == 6:
        ihl = (frame[14] & 15) * 4
        tot = struct.unpack(">H", frame[16:18])[0]
        t = 14 + ihl
        sport, dport, seq = struct.unpack(">HHI", frame[t:t + 8])
        n = tot - ihl - (frame[t + 12] >> 4) * 4
        if sport == port and n > 0:
            key = (frame[26:30], sport, frame[30:34], dport)
            base, spans = seen.setdefault(key, (seq, []))
            a = (seq - base) & 0xFFFFFFFF
            if any(x <= a and a + n <= y for x, y in spans):
                dropped += 1
                continue
            spans.append((a, a + n))
            spans.sort()
            merged = [spans[0]]
            for x, y in spans[1:]:
                if x <= merged[-1][1]:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], y))
                else:
                    merged.append((x, y))
            spans[:] = merged
    out.append(rec)
open(path, "wb").write(b"".join(out))
print(f"drop_resent: {dropped} segment(s) from port {port} dropped, their octets captured before")
PY
}

# ---------------------------------------------------------------- siw
{
    nfsd_setup ""
    guest_writer
    cat <<'EOF'
echo NFSD-READY
write_when_told
i=0
while [ ! -e /export/done ] && [ $i -lt 1200 ]; do sleep 1; i=$((i + 1)); done
echo "NFSD-GOT-SHA256 $(sha256sum /export/from-host.bin 2>/dev/null | cut -d' ' -f1)"
nfsd_trace
echo NFSD-TRACE-END
EOF
} >"$IOP_WORK/guest.sh"

iop_log "siw: booting the guest (exec: nfsd + svcrdma on siw, ports $RP/$MP/$TP)"
iop_guest_start siw exec --script "$IOP_WORK/guest.sh" --hostfwd "$RP" --hostfwd "$MP" --hostfwd "$TP" --timeout 1500
if ! iop_guest_wait_line siw '^NFSD-READY' 300; then
    iop_result "siw: nfsd ready" 1 "see $IOP_WORK/siw.log"
    iop_summary
    exit 1
fi
iop_result "siw: nfsd ready" 0 "$(grep -a -m1 '^NFSD-VERSIONS' "$IOP_WORK/siw.log" | tr -d '\r')"

# Version One only: tshark 4.0 cannot decode our Version Two probe.
R=(--vers 4.1 --port "$RP" --rdma-version 1)
T=(--vers 4.1 --transport tcp --port "$TP")
run() { # NAME COMMAND...: runs rpcrdma, shows its output's end, records it
    local name=$1 out rc
    shift
    out=$IOP_WORK/$(echo "$name" | tr -c 'a-zA-Z0-9\n' '-').txt
    timeout 300 "$BIN" "$@" >"$out" 2>&1
    rc=$?
    sed 's/^/    | /' "$out" | tail -4
    return $rc
}

guest_sum=$(grep -a -m1 '^NFSD-SHA256' "$IOP_WORK/siw.log" | tr -d '\r' | cut -d' ' -f2)
run "get 8 MiB" nfs get "127.0.0.1:/export/from-guest.bin" "$IOP_WORK/from-guest.bin" "${R[@]}"
rc=$?
got=$(sha256sum "$IOP_WORK/from-guest.bin" 2>/dev/null | cut -d' ' -f1)
[ "$rc" = 0 ] && [ -n "$guest_sum" ] && [ "$got" = "$guest_sum" ]
iop_result "siw: NFSv4.1 get: 8 MiB from nfsd, byte-identical" $? "guest $guest_sum, got ${got:-none}"

head -c $((8 << 20)) /dev/urandom >"$IOP_WORK/from-host.bin"
mine=$(sha256sum "$IOP_WORK/from-host.bin" | cut -d' ' -f1)
run "put 8 MiB" nfs put "$IOP_WORK/from-host.bin" "127.0.0.1:/export/" "${R[@]}" &&
    run "get back" nfs get "127.0.0.1:/export/from-host.bin" "$IOP_WORK/back.bin" "${R[@]}" &&
    cmp -s "$IOP_WORK/from-host.bin" "$IOP_WORK/back.bin"
iop_result "siw: NFSv4.1 put: 8 MiB to nfsd, read back identical" $?

run "ls" nfs ls "127.0.0.1:/export/big-dir" "${R[@]}"
n=$(grep -c '^name-' "$IOP_WORK/ls.txt")
missing=$(seq 1 $NDIR | sed 's/^/name-/' | sort | comm -23 - <(grep '^name-' "$IOP_WORK/ls.txt" | sort) | wc -l)
[ "$n" = "$NDIR" ] && [ "$missing" = 0 ]
iop_result "siw: NFSv4.1 ls: all $NDIR entries of a large directory (READDIR)" $? "$n listed, $missing missing"

run "stat" nfs stat "127.0.0.1:/export/from-guest.bin" "${R[@]}"
grep -q 'size: 8388608' "$IOP_WORK/stat.txt"
iop_result "siw: NFSv4.1 stat: attributes from nfsd" $?

run "get over tcp" nfs get "127.0.0.1:/export/from-guest.bin" "$IOP_WORK/tcp.bin" "${T[@]}" &&
    cmp -s "$IOP_WORK/tcp.bin" "$IOP_WORK/from-guest.bin"
iop_result "siw: NFSv4.1 get over TCP: identical" $?

# The delegation: held by our client, recalled by a write in the guest.
# nfsd grants none while any grace period lasts: a refusal is tried again
# (up to 4 times, 4 s apart) before it counts.
hold=$IOP_WORK/hold.txt
held=1
for try in 1 2 3 4; do
    timeout 120 "$BIN" nfs get "127.0.0.1:/export/recall.bin" "$IOP_WORK/recall.bin" \
        --hold-delegation 60 "${R[@]}" >"$hold" 2>&1 &
    HOLD=$!
    IOP_PIDS+=("$HOLD")
    for _ in $(seq 1 300); do
        grep -q 'delegation of .* is held' "$hold" && { held=0; break; }
        kill -0 "$HOLD" 2>/dev/null || break
        sleep 0.2
    done
    [ "$held" = 0 ] && break
    iop_wait_pid "$HOLD" 10 >/dev/null
    iop_log "siw: try $try: $(grep -m1 '^delegation' "$hold" || tail -1 "$hold")"
    sleep 4
done
iop_result "siw: nfsd granted our client a read delegation" $held \
    "$(grep -m1 '^delegation' "$hold"), try $try"
: >"$IOP_WORK/empty"
run "go-write marker" nfs put "$IOP_WORK/empty" "127.0.0.1:/export/go-write" "${T[@]}"
iop_wait_pid "$HOLD" 90
rc=$?
sed 's/^/    | /' "$hold"
grep -q 'recalled by the server (CB_RECALL)' "$hold" && grep -q 'returned (DELEGRETURN NFS4_OK)' "$hold"
r2=$?
[ "$rc" = 0 ] && [ "$r2" = 0 ]
iop_result "siw: CB_RECALL answered on our RDMA connection, the delegation returned (DELEGRETURN)" $? \
    "$(grep -m1 'returned (DELEGRETURN' "$hold" | cut -c1-120)"
iop_guest_wait_line siw '^GUEST-WRITE-SECS' 60
secs=$(grep -a -m1 '^GUEST-WRITE-SECS' "$IOP_WORK/siw.log" | tr -d '\r' | cut -d' ' -f2)
awk -v s="${secs:-99}" 'BEGIN { exit !(s < 5) }'
iop_result "siw: the guest's write completed without waiting out the lease (10 s)" $? "${secs:-none} s"
# Linux nfsd sends no CB_NULL to an NFSv4.1 client: nfsd4_run_cb_work()
# skips the probe for minor version 1 and later and marks the backchannel
# up. The backchannel is shown working by the CB_RECALL answered above;
# our client's report must then show a CB_COMPOUND answered and no
# SEQUENCE of the session with SEQ4_STATUS_CB_PATH_DOWN (with no CB_NULL
# the report says "no CB_NULL probe came" and lists every flag set).
report=$(grep -m1 '^NFSv4.1 session' "$hold")
grep -qE 'backchannel: ([0-9]+ CB_NULL|no CB_NULL probe came), [1-9][0-9]* CB_COMPOUND \([1-9][0-9]* CB_RECALL\) answered' <<<"$report" &&
    ! sed 's/no SEQ4_STATUS_CB_PATH_DOWN//' <<<"$report" | grep CB_PATH_DOWN >/dev/null
iop_result "siw: our backchannel answered nfsd's CB_COMPOUND; no SEQUENCE reported SEQ4_STATUS_CB_PATH_DOWN" $? \
    "$(sed 's/.*backchannel: //' <<<"$report" | cut -c1-160)"

: >"$IOP_WORK/empty"
run "done marker" nfs put "$IOP_WORK/empty" "127.0.0.1:/export/done" "${R[@]}"
iop_guest_wait_line siw '^NFSD-TRACE-END' 60
stored=$(grep -a -m1 '^NFSD-GOT-SHA256' "$IOP_WORK/siw.log" | tr -d '\r' | cut -d' ' -f2)
[ "$stored" = "$mine" ]
iop_result "siw: nfsd stored exactly what we put (its own SHA-256)" $? "${stored:-none}"
iop_stop_qemu "$IOP_WORK/siw.qemu.pid"
iop_guest_finish siw 20

iop_log "siw: checking the capture"
pcap=$IOP_WORK/siw.pcap
aligned=${pcap%.pcap}.aligned.pcap
if python3 "$HERE/fpdu-align.py" "$pcap" "$aligned" "$RP" to >"${aligned%.pcap}.txt" 2>&1 &&
    drop_resent "$aligned" "$RP" >>"${aligned%.pcap}.txt" 2>&1; then
    sed 's/^/    | /' "${aligned%.pcap}.txt"
    count() { tshark -r "$aligned" -Y "$1" 2>/dev/null | wc -l; }
    # Reverse-direction calls come from nfsd's port on our connection.
    probes=$(count "tcp.srcport == $RP && rpc.program == 1073741824 && rpc.procedure == 0 && rpc.msgtyp == 0")
    probe_replies=$(count "tcp.dstport == $RP && rpc.program == 1073741824 && rpc.procedure == 0 && rpc.msgtyp == 1")
    recalls=$(count "tcp.srcport == $RP && rpc.program == 1073741824 && rpc.msgtyp == 0 && nfs.cb.operation == 4")
    answers=$(count "tcp.dstport == $RP && rpc.program == 1073741824 && rpc.procedure == 1 && rpc.msgtyp == 1")
    returns=$(count "tcp.dstport == $RP && rpc.msgtyp == 0 && nfs.opcode == 8")
    # Linux nfsd sends no CB_NULL to an NFSv4.1 client (see above): none
    # is expected, but any that came must have been answered.
    [ "$recalls" -ge 1 ] && [ "$answers" -ge "$recalls" ] && [ "$returns" -ge 1 ] && [ "$probe_replies" -ge "$probes" ]
    iop_result "capture: nfsd's CB_RECALL as a reverse-direction RPC-over-RDMA call on our connection, our reply, our DELEGRETURN" $? \
        "CB_RECALL $recalls, CB_COMPOUND replies $answers, DELEGRETURN $returns; CB_NULL $probes ($probe_replies replied)"
    seqs=$(count "tcp.srcport == $RP && nfs.sequence.flags")
    down=$(count "tcp.srcport == $RP && nfs.sequence.flags.cb_path_down == 1")
    [ "$seqs" -ge 1 ] && [ "$down" = 0 ]
    iop_result "capture: no SEQUENCE reply of nfsd sets SEQ4_STATUS_CB_PATH_DOWN" $? "$seqs SEQUENCE replies, $down with CB_PATH_DOWN"
    out=${aligned%.pcap}.wire-check.txt
    timeout 900 "$IOP_WIRE_CHECK" "$aligned" --port "$RP" >"$out" 2>&1
    wrc=$?
    iop_result "capture: tshark finds every frame well-formed, the reverse-direction ones included" "$wrc" \
        "$(iop_wire_verdict "$out" "$wrc")"
else
    iop_result "fpdu-align the capture" 1 "$(tail -1 "${aligned%.pcap}.txt")"
fi
trace_check siw

# ---------------------------------------------------------------- rxe
if [ "${IOP_NFSD4_RXE:-1}" != 0 ]; then
    if ! iop_build_rdmacore; then
        iop_result "build rpcrdma --features rdma-core" 1
        iop_summary
        exit 1
    fi
    {
        nfsd_setup "ulimit -l unlimited 2>/dev/null"
        guest_writer
        cat <<'EOF'
N=10.0.2.15
X="--vers 4.1 --rdma-version 1 --provider rdma-core --device rxe0 --port 20049"
mkdir -p out
check() { # NAME: the last command's status and output file
    if [ "$1" = 0 ]; then echo "INTEROP-CHECK 0 rxe: $2"; else echo "INTEROP-CHECK 1 rxe: $2"; fi
}
./rpcrdma nfs get $N:/export/from-guest.bin /tmp/got.bin $X >out/get.txt 2>&1
rc=$?
tail -3 out/get.txt
a=$(sha256sum /export/from-guest.bin | cut -d' ' -f1)
b=$(sha256sum /tmp/got.bin 2>/dev/null | cut -d' ' -f1)
[ "$rc" = 0 ] && [ "$a" = "$b" ]
check $? "NFSv4.1 get: 8 MiB from nfsd, byte-identical"
dd if=/dev/urandom of=/tmp/put.bin bs=1M count=8 2>/dev/null
./rpcrdma nfs put /tmp/put.bin $N:/export/from-rxe.bin $X >out/put.txt 2>&1
rc=$?
tail -3 out/put.txt
[ "$rc" = 0 ] && [ "$(sha256sum /tmp/put.bin | cut -d' ' -f1)" = "$(sha256sum /export/from-rxe.bin | cut -d' ' -f1)" ]
check $? "NFSv4.1 put: 8 MiB to nfsd, stored identical"
./rpcrdma nfs ls $N:/export/big-dir $X >out/ls.txt 2>&1
rc=$?
n=$(grep -c '^name-' out/ls.txt)
[ "$rc" = 0 ] && [ "$n" = "BIGN" ]
check $? "NFSv4.1 ls: all BIGN entries ($n listed)"
for try in 1 2 3 4; do
    ./rpcrdma nfs get $N:/export/recall.bin /tmp/recall.bin --hold-delegation 60 $X >out/hold.txt 2>&1 &
    H=$!
    i=0
    while ! grep -q 'delegation of .* is held' out/hold.txt && kill -0 $H 2>/dev/null && [ $i -lt 300 ]; do
        sleep 0.2
        i=$((i + 1))
    done
    grep -q 'delegation of .* is held' out/hold.txt && break
    wait $H
    echo "delegation: try $try: $(grep -m1 '^delegation' out/hold.txt)"
    sleep 4
done
grep -q 'delegation of .* is held' out/hold.txt
check $? "nfsd granted a read delegation (try $try)"
: >/export/go-write
write_when_told
wait $H
rc=$?
cat out/hold.txt
[ "$rc" = 0 ] && grep -q 'returned (DELEGRETURN NFS4_OK)' out/hold.txt
check $? "CB_RECALL answered on our rxe connection, the delegation returned (DELEGRETURN)"
grep '^NFSv4.1 session' out/hold.txt | grep -qE 'backchannel: ([0-9]+ CB_NULL|no CB_NULL probe came), [1-9][0-9]* CB_COMPOUND \([1-9][0-9]* CB_RECALL\) answered' &&
    ! grep '^NFSv4.1 session' out/hold.txt | sed 's/no SEQ4_STATUS_CB_PATH_DOWN//' | grep -q CB_PATH_DOWN
check $? "our backchannel answered nfsd's CB_COMPOUND; no SEQUENCE reported SEQ4_STATUS_CB_PATH_DOWN"
nfsd_trace
echo "== done"
EOF
    } | sed "s/BIGN/$NDIR/g" >"$IOP_WORK/guest-rxe.sh"
    iop_log "rxe: booting the guest (nfsd and our rdma-core client on rxe0)"
    iop_guest_start rxe exec --rdma rxe --add "$RC_BIN" --script "$IOP_WORK/guest-rxe.sh" \
        --out "$IOP_WORK/rxe-out" --timeout 900
    iop_guest_finish rxe 960
    rc=$?
    grep -aE '^(INTEROP-CHECK|GUEST-WRITE-SECS|NFSv4.1 session|delegation)' "$IOP_WORK/rxe.log" | tr -d '\r' | sed 's/^/    | /' | cut -c1-240
    n=0
    while read -r c name; do
        iop_result "$name" "$c"
        n=$((n + 1))
    done < <(sed -n 's/\r$//; s/^INTEROP-CHECK \([0-9]*\) \(.*\)$/\1 \2/p' "$IOP_WORK/rxe.log")
    [ "$n" = 6 ] && [ "$rc" = 0 ]
    iop_result "rxe: the guest ran every check" $? "$n checks, run-guest.sh exit $rc"
    secs=$(grep -a -m1 '^GUEST-WRITE-SECS' "$IOP_WORK/rxe.log" | tr -d '\r' | cut -d' ' -f2)
    awk -v s="${secs:-99}" 'BEGIN { exit !(s < 5) }'
    iop_result "rxe: the guest's write completed without waiting out the lease (10 s)" $? "${secs:-none} s"
    trace_check rxe
fi
iop_summary
