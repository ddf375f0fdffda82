#!/usr/bin/env bash
# nfsd-null.sh - our RPC-over-RDMA client against the Linux kernel NFS
# server (svcrdma over siw) in the QEMU guest of ../shared/interop
# (issue 5 item 10, issue 6 item 5).
#
# Boots the guest in `nfsd` mode (RDMA listener on guest port 20049,
# forwarded from 127.0.0.1:$IOP_NFS_PORT, default 20049) and checks:
#
#   1. rpcrdma call ... 100003 3 0 --rdma-version 1   NFSv3 NULL, Version One
#   2. the same with MPA CRC32c
#   3. rpcrdma call ... 100003 3 0                    default: our Version Two
#      first message draws the kernel's RDMA_ERROR ERR_VERS and the Version
#      One fallback completes the NULL call ("fell back from v2")
#   4. the same for NFSv4 (100003 4 0)
#   5. rpcrdma probe (text and --json): the kernel's RFC 8797 private data,
#      version 1 after fallback, thresholds, credits, NULL SUCCESS
#   6. the capture (--pcap of the guest's traffic): the kernel's ERR_VERS
#      reply is found, printed in hex, decoded with `rpcrdma decode`, and
#      must say ERR_VERS with versions 1..1; tshark (wire-check.sh) passes
#      every frame except our Version Two probes and the kernel's answers to
#      them (tshark 4.0 decodes Version One only).
#
# Usage: scripts/interop/nfsd-null.sh   (root or sudo for apt on the first
#                                        run; Debian 12 x86_64)
# Exit status 0 only if every check passed. Bounded by timeouts; the guest
# is stopped on exit. About 1 minute under TCG once the guest is built.
set -uo pipefail
IOP_NAME=nfsd-null
# shellcheck source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
PORT=${IOP_NFS_PORT:-20049}
ADDR=127.0.0.1:$PORT

iop_setup_work
echo "== $IOP_NAME: rpcrdma call/probe vs the Linux kernel NFS server over siw (logs: $IOP_WORK)"
iop_need tshark tshark || { iop_result "install tshark" 1; iop_summary; exit 1; }
iop_build || { iop_result "build rpcrdma" 1; iop_summary; exit 1; }
iop_prepare_guest || { iop_result "prepare the guest" 1; iop_summary; exit 1; }

iop_log "booting the guest (nfsd + svcrdma on siw)"
iop_guest_start nfsd nfsd --port 20049 --host-port "$PORT" --mount-port 0 --timeout 300
if ! iop_guest_wait_line nfsd '^INTEROP-NFSD-READY' 150; then
    iop_result "guest: nfsd ready" 1 "see $IOP_WORK/nfsd.log"
    iop_summary
    exit 1
fi
iop_result "guest: nfsd ready" 0 "$(grep -m1 '^INTEROP-PORTLIST' "$IOP_WORK/nfsd.log")"

# call NAME GREP-REGEX rpcrdma-arguments...: one rpcrdma invocation that must
# exit 0 and print a line matching the regex.
call() {
    local name=$1 re=$2 out
    shift 2
    out=$IOP_WORK/$(echo "$name" | tr -c 'a-zA-Z0-9\n' '-').txt
    timeout 60 "$BIN" "$@" >"$out" 2>&1
    local rc=$?
    sed 's/^/    | /' "$out"
    if [ "$rc" = 0 ] && grep -qE "$re" "$out"; then
        iop_result "$name" 0
    else
        iop_result "$name" 1 "exit $rc; see $out"
    fi
}

call "NFSv3 NULL, --rdma-version 1" 'RPC-over-RDMA v1, .*MSG_ACCEPTED SUCCESS' \
    call "$ADDR" 100003 3 0 --rdma-version 1
call "NFSv3 NULL, --rdma-version 1, MPA CRC" 'RPC-over-RDMA v1, .*MSG_ACCEPTED SUCCESS' \
    call "$ADDR" 100003 3 0 --rdma-version 1 --crc
call "NFSv3 NULL, negotiate: v2 probe draws ERR_VERS, v1 fallback" \
    'RPC-over-RDMA v1, fell back from v2, .*MSG_ACCEPTED SUCCESS' \
    call "$ADDR" 100003 3 0
call "NFSv4 NULL, negotiate: v2 probe draws ERR_VERS, v1 fallback" \
    'RPC-over-RDMA v1, fell back from v2, .*MSG_ACCEPTED SUCCESS' \
    call "$ADDR" 100003 4 0
call "probe: private data, version, thresholds, credits" \
    'RPC-over-RDMA version: 1 \(our Version Two probe drew ERR_VERS; fell back\)' \
    probe "$ADDR"
timeout 60 "$BIN" probe "$ADDR" --json >"$IOP_WORK/probe.json" 2>"$IOP_WORK/probe-json.err"
python3 - "$IOP_WORK/probe.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
ok = (p["version"] == 1 and p["fell_back"] and p["null_call"]["ok"]
      and p["peer_private_data_hex"].startswith("f6ab0e1801")
      and p["credits_granted"] > 0 and p["thresholds"]["send"] >= 1024)
print("    | " + json.dumps(p, sort_keys=True))
sys.exit(0 if ok else 1)
PY
iop_result "probe --json: version 1 after fallback, RFC 8797 private data, credits" $?

iop_log "stopping the guest"
iop_stop_qemu "$IOP_WORK/nfsd.qemu.pid"
iop_guest_finish nfsd 20

# The kernel's RDMA_ERROR replies in the capture (server port 20049).
PCAP=$IOP_WORK/nfsd.pcap
tshark -r "$PCAP" -Y 'tcp.len > 0' -T fields -e tcp.stream -e tcp.srcport -e tcp.payload \
    >"$IOP_WORK/payloads.txt" 2>/dev/null
python3 - "$IOP_WORK/payloads.txt" >"$IOP_WORK/rdma-errors.txt" <<'PY'
# Reassemble each connection's server-to-client byte stream, skip the MPA
# Reply, walk the FPDUs, print the RPC-over-RDMA header of every Send whose
# rdma_proc is RDMA_ERROR (4), as hex.
import sys
streams = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) != 3 or parts[1] != "20049":
        continue
    streams.setdefault(parts[0], bytearray()).extend(bytes.fromhex(parts[2]))
for sid, b in streams.items():
    if not b.startswith(b"MPA ID Rep Frame") or len(b) < 20:
        continue
    i = 20 + int.from_bytes(b[18:20], "big")
    while i + 2 <= len(b):
        n = int.from_bytes(b[i:i + 2], "big")
        ulpdu = b[i + 2:i + 2 + n]
        i += 2 + n
        i += (-i) % 4 + 4            # pad to 4, then the CRC field
        if len(ulpdu) < 18 or ulpdu[0] & 0x80:
            continue                  # short, or tagged (Write / Read Response)
        opcode = ulpdu[1] & 0x0F
        body = ulpdu[18:]
        if opcode in (3, 4, 5, 6) and len(body) >= 16 and int.from_bytes(body[12:16], "big") == 4:
            print(sid, body.hex())
PY
if [ -s "$IOP_WORK/rdma-errors.txt" ]; then
    ERR_HEX=$(head -1 "$IOP_WORK/rdma-errors.txt" | cut -d' ' -f2)
    echo "    | the kernel's RDMA_ERROR (RPC-over-RDMA header, hex): $ERR_HEX"
    "$BIN" decode --hex "$ERR_HEX" >"$IOP_WORK/err-vers.decoded.txt" 2>&1
    sed 's/^/    | /' "$IOP_WORK/err-vers.decoded.txt"
    # xid, vers, credits, proc=4 (RDMA_ERROR), err=1 (ERR_VERS), low=1, high=1.
    echo "$ERR_HEX" | grep -qE '^[0-9a-f]{8}0000000[12][0-9a-f]{8}00000004000000010000000100000001$'
    iop_result "capture: the kernel answered our v2 probe with ERR_VERS 1..1" $? \
        "rdma_vers on the error: $((16#${ERR_HEX:8:8})); $(wc -l <"$IOP_WORK/rdma-errors.txt") RDMA_ERROR(s)"
else
    iop_result "capture: the kernel answered our v2 probe with ERR_VERS 1..1" 1 "no RDMA_ERROR found in $PCAP"
fi

# tshark: everything but the Version Two frames must pass.
timeout 120 "$IOP_WIRE_CHECK" "$PCAP" >"$IOP_WORK/nfsd.wire-check.txt" 2>&1
bad=$(grep ' FAIL ' "$IOP_WORK/nfsd.wire-check.txt" | grep -cvE 'header version 2|e\.g\. version != 1')
v2=$(grep ' FAIL ' "$IOP_WORK/nfsd.wire-check.txt" | grep -cE 'header version 2|e\.g\. version != 1')
v1ok=$(grep -c 'PASS .*RDMA_MSG .*rpc=reply' "$IOP_WORK/nfsd.wire-check.txt")
[ "$bad" = 0 ] && [ "$v1ok" -ge 4 ]
iop_result "capture: tshark passes the Version One traffic" $? \
    "$(tail -1 "$IOP_WORK/nfsd.wire-check.txt"); $v2 Version Two frame(s) tshark cannot decode; $v1ok RDMA_MSG replies"

iop_summary
