"""Frames of a wire-check report that are TCP's copies, not new PDUs.

Loopback TCP sometimes sends a segment twice while the receiver's window
is full (under load, in the multi-FPDU transfers). tshark decodes each
byte once, in the segment that first carried it, so ../shared/oracle's
wire-check.sh fails the copy as "TCP payload not decoded as MPA". Such a
frame holds no byte that was not already checked, and tshark itself flags
it as a retransmission. The capture checks (scripts/demo-wire-check.sh,
crates/softiwarp/scripts/wire-check-verbs.sh) accept that frame, and only
that kind of frame, with a note (docs/testing-campaign.md).
"""

import re
import subprocess

RETRANSMISSION = ("tcp.analysis.retransmission", "tcp.analysis.fast_retransmission",
                  "tcp.analysis.spurious_retransmission")
NOT_MPA = ("FAIL: TCP payload not decoded as MPA (capture must include the MPA "
           "Request/Reply of this connection)")


def fields(pcap, num, *names):
    """Values of tshark fields in frame `num` of `pcap`, decoded as
    wire-check.sh decodes it."""
    cmd = ["tshark", "-n", "-2", "-r", pcap,
           "-o", "tcp.try_heuristic_first:TRUE",
           "-o", "tcp.desegment_tcp_streams:TRUE",
           "-o", "iwarp_ddp_rdmap.reassemble_iwarp_rdma_send:FALSE",
           "--enable-heuristic", "iwarp_mpa_tcp",
           "--enable-heuristic", "rpcrdma_iwarp",
           "-Y", "frame.number == %s" % num, "-T", "fields", "-E", "separator=/t"]
    for n in names:
        cmd += ["-e", n]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout.rstrip("\n")
    return out.split("\t") if out else [""] * len(names)


def retransmitted_copy(pcap, line):
    """The note for a failing report `line` ("frame N ... FAIL tcp ...")
    that is a TCP retransmission of bytes already decoded; None for any
    other line (any other failure, or a frame tshark does not flag)."""
    words = line.split()
    if len(words) < 4 or words[0] != "frame" or words[3] != "tcp":
        return None
    if re.findall(r"FAIL: [^;}]*", line) != [NOT_MPA]:
        return None
    num = words[1]
    flags = [f for f, v in zip(RETRANSMISSION, fields(pcap, num, *RETRANSMISSION)) if v]
    if not flags:
        return None
    return ("frame %s: a TCP retransmission of bytes already decoded (tshark: %s); "
            "not a new PDU" % (num, ", ".join(flags)))
