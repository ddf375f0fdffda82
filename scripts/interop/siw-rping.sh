#!/usr/bin/env bash
# siw-rping.sh - our software iWARP provider against the Linux kernel's siw,
# with rdma-core's rping on the other side (issue 3, item 6).
#
# The QEMU guest of ../shared/interop runs rping over siw; `rpcrdma rping`
# runs on the host over our provider. One guest boot per case:
#
#   client-*   the kernel's rping server (`run-guest.sh rping-server`) and
#              our `rpcrdma rping -c`: we connect (MPA initiator), Send our
#              buffers' addresses, the kernel RDMA Reads our source and RDMA
#              Writes into our sink, we verify every byte;
#   server-*   the kernel's rping client (`run-guest.sh rping-client`, 3
#              pings of 64 bytes) and our `rpcrdma rping -s`: we listen (MPA
#              responder), RDMA Read the kernel's buffer, check rping's
#              pattern, RDMA Write it back; the kernel compares.
#
# Send/Recv, RDMA Read and RDMA Write run in both directions; MPA revision 2
# with peer-to-peer Write RTR and Read RTR, without peer-to-peer mode (our
# first FPDU delayed, see docs/iwarp.md), and with CRC32c. A case passes
# only if our side exits 0 (every ping verified), the kernel's rping exits 0
# and printed the same ping data, and tshark (`wire-check.sh --verbs`)
# passes the capture of the guest's traffic.
#
# Usage: scripts/interop/siw-rping.sh      (root, or sudo for apt on the
#                                           first run; Debian 12 x86_64)
# Exit status 0 only if every check passed. Every step is bounded by a
# timeout; the guests are stopped on exit. Ports: 127.0.0.1:$IOP_RPING_PORT
# (default 17174). About 2 minutes under TCG once the guest is built.
set -uo pipefail
IOP_NAME=siw-rping
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PORT=${IOP_RPING_PORT:-17174}

iop_setup_work
echo "== $IOP_NAME: our software iWARP vs Linux siw + rping (logs: $IOP_WORK)"
iop_build || { iop_result "build rpcrdma" 1; iop_summary; exit 1; }
iop_prepare_guest || { iop_result "prepare the guest" 1; iop_summary; exit 1; }

# data_lines FILE PREFIX: the ping data lines (rping -v output) after PREFIX.
data_lines() { sed -n "s/^$2//p" "$1" | tr -d '\r'; }

# compare_data NAME OURS OURS_PREFIX GUEST GUEST_PREFIX COUNT
compare_data() {
    local a b
    a=$(data_lines "$2" "$3")
    b=$(data_lines "$4" "$5")
    if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$(printf '%s\n' "$a" | wc -l)" = "$6" ]; then
        iop_result "$1" 0 "$6 pings, same data on both sides"
    else
        iop_result "$1" 1 "ping data differs; see $2 and $4"
    fi
}

# client_case NAME COUNT [rpcrdma rping options]: kernel rping server, our client.
client_case() {
    local name=$1 count=$2
    shift 2
    iop_log "$name: booting the guest (rping -s on siw)"
    iop_guest_start "$name" rping-server --port "$PORT" --timeout 90
    if ! iop_guest_wait_line "$name" '^INTEROP-READY-BASE' 120; then
        iop_result "$name: guest ready" 1 "see $IOP_WORK/$name.log"
        iop_guest_finish "$name" 1
        return
    fi
    # The forward accepts before rping listens: retry while refused.
    timeout 120 "$BIN" rping -c -a 127.0.0.1 -p "$PORT" -C "$count" -S 64 -V -v \
        --connect-wait 60 --timeout 20 "$@" >"$IOP_WORK/$name.ours.txt" 2>&1
    local ours=$?
    iop_guest_finish "$name" 60
    local guest=$?
    iop_result "$name: rpcrdma rping -c $* exits 0" "$ours" "$(tail -1 "$IOP_WORK/$name.ours.txt")"
    grep -q '^INTEROP-RPING-RC 0' "$IOP_WORK/$name.log"
    iop_result "$name: kernel rping -s exits 0" $? \
        "$(grep -m1 '^INTEROP-RPING-RC' "$IOP_WORK/$name.log" || echo "no RPING-RC line; run-guest $guest")"
    compare_data "$name: kernel read what we sent" "$IOP_WORK/$name.ours.txt" "ping data: " \
        "$IOP_WORK/$name.log" "server ping data: " "$count"
    iop_wire_check "$name: tshark --verbs" "$IOP_WORK/$name.pcap" --verbs
}

# server_case NAME [rpcrdma rping options]: kernel rping client, our server.
server_case() {
    local name=$1
    shift
    timeout 180 "$BIN" rping -s -a 127.0.0.1 -p "$PORT" -C 3 -S 64 -V -v \
        --accept-timeout 150 --timeout 20 "$@" >"$IOP_WORK/$name.ours.txt" 2>&1 &
    local ours_pid=$!
    IOP_PIDS+=("$ours_pid")
    iop_log "$name: booting the guest (rping -c on siw)"
    iop_guest_start "$name" rping-client --port "$PORT" --timeout 90
    iop_guest_finish "$name" 150
    local guest=$?
    iop_wait_pid "$ours_pid" 30
    local ours=$?
    iop_result "$name: rpcrdma rping -s $* exits 0" "$ours" "$(tail -1 "$IOP_WORK/$name.ours.txt")"
    grep -q '^INTEROP-RPING-RC 0' "$IOP_WORK/$name.log"
    iop_result "$name: kernel rping -c exits 0" $? \
        "$(grep -m1 '^INTEROP-RPING-RC' "$IOP_WORK/$name.log" || echo "no RPING-RC line; run-guest $guest")"
    compare_data "$name: kernel got back what it sent" "$IOP_WORK/$name.ours.txt" "server ping data: " \
        "$IOP_WORK/$name.log" "ping data: " 3
    iop_wire_check "$name: tshark --verbs" "$IOP_WORK/$name.pcap" --verbs
}

client_case client-rev2-p2p-write 10
client_case client-crc-p2p-read 5 --crc --p2p read
client_case client-no-p2p 3 --p2p off
server_case server-rev2
server_case server-crc --crc

iop_summary
