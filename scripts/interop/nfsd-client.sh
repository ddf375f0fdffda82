#!/usr/bin/env bash
# nfsd-client.sh - our NFSv3 client (`rpcrdma nfs`) against the Linux kernel
# NFS server (nfsd + svcrdma over siw) in the QEMU guest of
# ../shared/interop (issue 12 item 5):
#
#   1. `rpcrdma nfs get` of an 8 MiB file the guest made from /dev/urandom:
#      byte-identical (SHA-256 printed by the guest);
#   2. `rpcrdma nfs put` of an 8 MiB local file, then `get` back: identical,
#      and the guest's own SHA-256 of what nfsd stored matches;
#   3. `rpcrdma nfs ls` of a 5000-entry directory: every name;
#   4. `rpcrdma nfs stat`, and a `get` over TCP for comparison;
#   5. tshark finds every frame of the RDMA capture well-formed.
#
# The guest runs in exec mode: it makes the files, starts rpcbind, mountd
# and nfsd with an RDMA listener, and waits for the host's "done" file.
#
# Environment: IOP_NFSD_RDMA_PORT (default 20049), IOP_NFSD_MOUNT_PORT
# (20048), IOP_NFSD_TCP_PORT (2049): ports on 127.0.0.1 forwarded to the
# same ports in the guest; plus those of common.sh.
# Exit status 0 only if every check passed.
set -uo pipefail
IOP_NAME=nfsd-client
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
RP=${IOP_NFSD_RDMA_PORT:-20049}
MP=${IOP_NFSD_MOUNT_PORT:-20048}
TP=${IOP_NFSD_TCP_PORT:-2049}
NDIR=5000

iop_setup_work
echo "== $IOP_NAME: rpcrdma nfs get/put/ls vs the Linux kernel NFS server over siw (logs: $IOP_WORK)"
iop_need tshark tshark || { iop_result "install tshark" 1; iop_summary; exit 1; }
iop_build || { iop_result "build rpcrdma" 1; iop_summary; exit 1; }
iop_prepare_guest || { iop_result "prepare the guest" 1; iop_summary; exit 1; }

cat >"$IOP_WORK/guest.sh" <<EOF
mkdir -p /export
mount -t tmpfs -o size=200m tmpfs /export
dd if=/dev/urandom of=/export/from-guest.bin bs=1M count=8 2>/dev/null
echo "NFSD-SHA256 \$(sha256sum /export/from-guest.bin | cut -d' ' -f1)"
mkdir /export/big-dir
seq 1 $NDIR | sed 's/^/name-/' | (cd /export/big-dir && xargs touch)
chmod 0777 /export
mount -t nfsd nfsd /proc/fs/nfsd
mkdir -p /var/lib/nfs/rpc_pipefs
mount -t rpc_pipefs rpc_pipefs /var/lib/nfs/rpc_pipefs 2>/dev/null
echo "/export *(rw,insecure,no_root_squash,no_subtree_check,fsid=0)" > /etc/exports
rpcbind -w
exportfs -ra
rpc.mountd --port $MP
rpc.nfsd --port $TP 8
echo "rdma $RP" > /proc/fs/nfsd/portlist
echo "NFSD-PORTS \$(cat /proc/fs/nfsd/portlist | tr '\n' ' ')"
echo NFSD-READY
i=0
while [ ! -e /export/done ] && [ \$i -lt 1200 ]; do sleep 1; i=\$((i + 1)); done
echo "NFSD-GOT-SHA256 \$(sha256sum /export/from-host.bin 2>/dev/null | cut -d' ' -f1)"
EOF

iop_log "booting the guest (exec: nfsd + svcrdma on siw, ports $RP/$MP/$TP)"
iop_guest_start nfsd-client exec --script "$IOP_WORK/guest.sh" --hostfwd "$RP" \
    --hostfwd "$MP" --hostfwd "$TP" --timeout 1500
if ! iop_guest_wait_line nfsd-client '^NFSD-READY' 300; then
    iop_result "guest: nfsd ready" 1 "see $IOP_WORK/nfsd-client.log"
    iop_summary
    exit 1
fi
iop_result "guest: nfsd ready" 0 "$(grep -a -m1 '^NFSD-PORTS' "$IOP_WORK/nfsd-client.log" | tr -d '\r')"

# Version One only: the Version Two probe and the kernel's ERR_VERS (covered by
# nfsd-null.sh) are frames tshark 4.0 cannot decode.
R=(--port "$RP" --mount-port "$MP" --rdma-version 1)
run() { # NAME COMMAND...: runs rpcrdma, shows its output, records the result
    local name=$1 out rc
    shift
    out=$IOP_WORK/$(echo "$name" | tr -c 'a-zA-Z0-9\n' '-').txt
    timeout 300 "$BIN" "$@" >"$out" 2>&1
    rc=$?
    sed 's/^/    | /' "$out" | tail -5
    return $rc
}

guest_sum=$(grep -a -m1 '^NFSD-SHA256' "$IOP_WORK/nfsd-client.log" | tr -d '\r' | cut -d' ' -f2)
run "get 8 MiB" nfs get "127.0.0.1:/export/from-guest.bin" "$IOP_WORK/from-guest.bin" "${R[@]}"
rc=$?
got=$(sha256sum "$IOP_WORK/from-guest.bin" 2>/dev/null | cut -d' ' -f1)
[ "$rc" = 0 ] && [ -n "$guest_sum" ] && [ "$got" = "$guest_sum" ]
iop_result "nfs get: 8 MiB from the kernel server, byte-identical" $? "guest $guest_sum, got ${got:-none}"

head -c $((8 << 20)) /dev/urandom >"$IOP_WORK/from-host.bin"
mine=$(sha256sum "$IOP_WORK/from-host.bin" | cut -d' ' -f1)
run "put 8 MiB" nfs put "$IOP_WORK/from-host.bin" "127.0.0.1:/export/" "${R[@]}" &&
    run "get back" nfs get "127.0.0.1:/export/from-host.bin" "$IOP_WORK/back.bin" "${R[@]}" &&
    cmp -s "$IOP_WORK/from-host.bin" "$IOP_WORK/back.bin"
iop_result "nfs put: 8 MiB to the kernel server, read back identical" $?

run "ls" nfs ls "127.0.0.1:/export/big-dir" "${R[@]}"
n=$(grep -c '^name-' "$IOP_WORK/ls.txt")
missing=$(seq 1 $NDIR | sed 's/^/name-/' | sort | comm -23 - <(grep '^name-' "$IOP_WORK/ls.txt" | sort) | wc -l)
[ "$n" = "$NDIR" ] && [ "$missing" = 0 ]
iop_result "nfs ls: all $NDIR entries of a large directory" $? "$n listed, $missing missing"

run "ls names" nfs ls --names-only "127.0.0.1:/export/big-dir" "${R[@]}"
[ "$(grep -c '^name-' "$IOP_WORK/ls-names.txt")" = "$NDIR" ]
iop_result "nfs ls --names-only (READDIR): all $NDIR entries" $?

run "stat" nfs stat "127.0.0.1:/export/from-guest.bin" "${R[@]}"
grep -q 'size: 8388608' "$IOP_WORK/stat.txt"
iop_result "nfs stat: attributes from the kernel server" $?

run "get over tcp" nfs get "127.0.0.1:/export/from-guest.bin" "$IOP_WORK/tcp.bin" \
    --transport tcp --port "$TP" --mount-port "$MP" && cmp -s "$IOP_WORK/tcp.bin" "$IOP_WORK/from-guest.bin"
iop_result "nfs get over TCP: identical" $?

# Tell the guest we are done; it hashes what nfsd stored.
: >"$IOP_WORK/empty"
run "done marker" nfs put "$IOP_WORK/empty" "127.0.0.1:/export/done" "${R[@]}"
iop_guest_wait_line nfsd-client '^NFSD-GOT-SHA256' 60
stored=$(grep -a -m1 '^NFSD-GOT-SHA256' "$IOP_WORK/nfsd-client.log" | tr -d '\r' | cut -d' ' -f2)
[ "$stored" = "$mine" ]
iop_result "the kernel server stored exactly what we put (its own SHA-256)" $? "${stored:-none}"

iop_stop_qemu "$IOP_WORK/nfsd-client.qemu.pid"
iop_guest_finish nfsd-client 20
# Our side's FPDUs reach the guest re-segmented by QEMU's user networking:
# one FPDU per segment first, as tshark's MPA dissector assumes (common.sh).
IOP_WIRE_TIMEOUT=900 iop_wire_check_aligned "capture: tshark finds every frame well-formed" "$IOP_WORK/nfsd-client.pcap" "$RP" to
iop_summary
