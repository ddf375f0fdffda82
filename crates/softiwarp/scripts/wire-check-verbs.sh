#!/usr/bin/env bash
# wire-check-verbs.sh: Wireshark (tshark) on a loopback capture of every
# message the software iWARP provider sends (issue 3, item 6, first bullet).
#
# 1. starts a full-snaplen capture on `lo` (dumpcap, else tcpdump) and waits
#    until it demonstrably records (marker connections to a closed port);
# 2. runs the `opcode_tour` example on 127.0.0.1:PORT: one connection per MPA
#    mode (revision 1 and 2, CRC off and on, peer-to-peer RTR as zero-length
#    Write, zero-length Read, or none), each carrying Send, Send with
#    Solicited Event, Send with Invalidate, Send with SE and Invalidate, a
#    zero-length Send, multi-FPDU RDMA Writes and Reads in both directions
#    and a Terminate; plus one rejected connection (MPA Reject);
# 3. runs ../shared/oracle/wire-check.sh FILE --port PORT --verbs;
# 4. checks that every frame passed (RDMAP Terminate and the MPA Reject are
#    tshark warnings, which pass without --strict; a segment tshark flags as
#    a TCP retransmission of bytes it already decoded is accepted with a
#    note, scripts/lib/wire_retransmit.py), that nothing was dropped,
#    and that the capture covers every RDMAP opcode, both MPA revisions,
#    CRC on (checked by tshark: "Good CRC32") and off.
#
# Usage: crates/softiwarp/scripts/wire-check-verbs.sh [--port N] [--out DIR]
#   --port N   server port (default: a free port)
#   --out DIR  where the capture and the report are kept (default:
#              ${CARGO_TARGET_DIR:-target}/wire-check-verbs)
#
# Needs root (or capture capabilities); installs tshark with apt-get when
# absent. Exit status: 0 pass, 1 a check failed, 2 usage or tool error.
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$(pwd)
SHARED=${RPCRDMA_SHARED_DIR:-$ROOT/../shared}
WIRE_CHECK=$SHARED/oracle/wire-check.sh
PORT=
OUT=

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
        --port) [ $# -ge 2 ] || usage; PORT=$2; shift 2 ;;
        --out) [ $# -ge 2 ] || usage; OUT=$2; shift 2 ;;
        -h|--help) usage ;;
        *) echo "wire-check-verbs: unknown argument $1" >&2; usage ;;
    esac
done
[ -x "$WIRE_CHECK" ] || {
    echo "wire-check-verbs: $WIRE_CHECK not found; set RPCRDMA_SHARED_DIR to the shared/ directory" >&2
    exit 2
}
OUT=${OUT:-${CARGO_TARGET_DIR:-$ROOT/target}/wire-check-verbs}
mkdir -p "$OUT"

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
apt_install() {
    echo "wire-check-verbs: installing $* with apt-get" >&2
    $SUDO apt-get update -qq >&2
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}
command -v tshark >/dev/null 2>&1 || apt_install tshark
command -v python3 >/dev/null 2>&1 || apt_install python3-minimal
if command -v dumpcap >/dev/null 2>&1; then CAPTURE=dumpcap; else
    command -v tcpdump >/dev/null 2>&1 || apt_install tcpdump
    CAPTURE=tcpdump
fi

echo "wire-check-verbs: building the opcode_tour example" >&2
cargo build --quiet --release -p rpcrdma-softiwarp --example opcode_tour
TOUR=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/opcode_tour

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
PORT=${PORT:-$(free_port)}
MARK=$(free_port)
while [ "$MARK" = "$PORT" ]; do MARK=$(free_port); done

PCAP=$OUT/verbs.pcapng
CAP_PID=
cleanup() {
    if [ -n "$CAP_PID" ] && kill -0 "$CAP_PID" 2>/dev/null; then
        $SUDO kill -INT "$CAP_PID" 2>/dev/null || true
        wait "$CAP_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT

probe() {
    python3 -c 'import socket,sys
s=socket.socket()
try: s.connect(("127.0.0.1", int(sys.argv[1])))
except OSError: pass' "$MARK"
}
marks() {
    tshark -n -r "$PCAP" -Y "tcp.dstport == $MARK && tcp.flags.syn == 1" 2>/dev/null | grep -c . || true
}
await_mark() {
    for _ in $(seq 1 100); do
        probe
        if [ -s "$PCAP" ] && [ "$(marks)" -ge "$1" ]; then return 0; fi
        sleep 0.1
    done
    echo "wire-check-verbs: the capture never started:" >&2
    cat "$PCAP.log" >&2 || true
    exit 2
}

rm -f "$PCAP" "$PCAP.log"
if [ "$CAPTURE" = dumpcap ]; then
    $SUDO dumpcap -q -i lo -f "tcp port $PORT or tcp port $MARK" -s 0 -B 256 -w "$PCAP" 2>"$PCAP.log" &
else
    $SUDO tcpdump -i lo -s 0 -B 262144 -U -w "$PCAP" "tcp port $PORT or tcp port $MARK" 2>"$PCAP.log" &
fi
CAP_PID=$!
await_mark 1

echo "wire-check-verbs: running the tour on 127.0.0.1:$PORT" >&2
"$TOUR" "$PORT"

await_mark $(($(marks) + 1))
$SUDO kill -INT "$CAP_PID" 2>/dev/null || true
wait "$CAP_PID" 2>/dev/null || true
CAP_PID=
if [ "$CAPTURE" = dumpcap ]; then
    DROPPED=$(sed -n 's/.*received\/dropped on interface.*: [0-9]*\/\([0-9]*\) .*/\1/p' "$PCAP.log" | sed -n 1p)
else
    DROPPED=$(sed -n 's/^\([0-9]*\) packets dropped by kernel.*/\1/p' "$PCAP.log" | sed -n 1p)
fi

REPORT=$OUT/verbs.report
set +e
"$WIRE_CHECK" "$PCAP" --port "$PORT" --verbs >"$REPORT"
WC=$?
set -e
tail -n 1 "$REPORT"
# How many FPDUs tshark checked a CRC for.
GOOD_CRC=$(tshark -n -r "$PCAP" -Y "tcp.port == $PORT" -o tcp.try_heuristic_first:TRUE \
    --enable-heuristic iwarp_mpa_tcp -V 2>/dev/null | grep -c "Good CRC32" || true)

python3 - "$REPORT" "$WC" "${DROPPED:-0}" "$GOOD_CRC" "$PCAP" "$ROOT/scripts/lib" <<'PYEOF'
import sys
report, rc, dropped, good_crc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3] or 0), int(sys.argv[4])
pcap = sys.argv[5]
sys.path.insert(0, sys.argv[6])
import wire_retransmit  # noqa: E402 (scripts/lib)
lines = [l for l in open(report) if l.startswith("frame ")]
text = "".join(lines)
problems = []
notes = []
if rc != 0:
    for l in lines:
        if l.split()[2:3] != ["FAIL"]:
            continue
        # A segment loopback TCP sent twice while the receiver's window was
        # full: its bytes were decoded where they first appeared.
        copy = wire_retransmit.retransmitted_copy(pcap, l)
        if copy:
            notes.append(copy)
        else:
            problems.append("wire-check failed: " + l.strip())
    if not problems and not notes:
        problems.append("wire-check exited %d" % rc)
for n in notes:
    print("  note: " + n)
if dropped:
    problems.append("the capture dropped %d packets" % dropped)
for what, needle in [
    ("RDMA Write", "[Write "), ("RDMA Read Request", "[ReadReq "), ("RDMA Read Response", "[ReadResp "),
    ("Send", "[Send qn="), ("Send with Invalidate", "[SendInv "), ("Send with Solicited Event", "[SendSE qn="),
    ("Send with SE and Invalidate", "[SendSEInv "), ("Terminate", "[Terminate "),
    ("MPA revision 1 Request", "[MPA-Req rev=1"), ("MPA revision 2 Request", "[MPA-Req rev=2"),
    ("MPA Request with CRC", "rev=1 crc"), ("MPA revision 2 with CRC", "rev=2 crc enhanced"),
    ("MPA revision 2 without CRC", "rev=2 enhanced"), ("peer-to-peer mode", " p2p"),
    ("multi-segment message", "(more segments)"), ("MPA Reject", "MPA connection rejected"),
]:
    if needle not in text:
        problems.append("the capture has no %s (looked for %r)" % (what, needle))
if good_crc == 0:
    problems.append("tshark verified no CRC (no 'Good CRC32')")
if problems:
    print("wire-check-verbs: FAIL")
    for p in problems:
        print("  - " + p)
    sys.exit(1)
print("wire-check-verbs: PASS (%d frames, %d FPDU CRCs verified by tshark)" % (len(lines), good_crc))
PYEOF
