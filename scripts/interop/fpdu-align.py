#!/usr/bin/env python3
"""fpdu-align.py IN.pcap OUT.pcap PORT from|to - rewrite a capture so that
every MPA FPDU sent from (or to) TCP port PORT is in a TCP segment of its
own: the direction our side sends.

Why: Wireshark's MPA dissector assumes one FPDU per TCP segment (its source
says so: "the total length of this FPDU under the assumption that a TCP
segment carries only one FPDU"). The Linux siw sends FPDUs aligned with
its segments, but what our server sends reaches the guest through QEMU's
user networking (socat reads 8 KiB at a time, slirp cuts 1460-byte
segments), which re-segments the byte stream at arbitrary places; tshark
then loses the FPDU boundaries and reports garbage "frames" although the
stream is well-formed (the kernel's siw parsed every FPDU of it).

(An FPDU larger than MAX_SEGMENT octets is written as several segments,
none of which carries bytes of another FPDU.)

What it does: reassembles each connection's byte stream in that direction (in
sequence order, duplicates dropped), walks it (the MPA Reply, then FPDUs by
their length fields: 2 + ULPDU + pad + CRC), stops with an error at the
first FPDU whose DDP/RDMAP version bits are not 1 (so a malformed stream
is reported, never hidden), and writes the FPDUs as consecutive segments
of that connection with consecutive sequence numbers, each in its own
packet, where the stream's first segment was. Every other packet is copied
unchanged. The byte stream tshark reassembles is therefore exactly the one
captured. Exit status 0 on success; it prints the number of FPDUs.

Only classic pcap with Ethernet and IPv4 is handled (what run-guest.sh
--pcap writes).
"""
import struct
import sys

MAX_SEGMENT = 32768


def read_pcap(path):
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        sys.exit(f"{path}: not a little-endian classic pcap")
    header = data[:24]
    pkts, i = [], 24
    while i + 16 <= len(data):
        ts_s, ts_u, incl, orig = struct.unpack("<IIII", data[i:i + 16])
        pkts.append([ts_s, ts_u, data[i + 16:i + 16 + incl]])
        i += 16 + incl
    return header, pkts


def parse(frame):
    """(ip_off, ihl, tcp_off, thl, src, sport, dst, dport, seq, payload) or None."""
    if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
        return None
    ip = 14
    ihl = (frame[ip] & 0x0F) * 4
    if frame[ip + 9] != 6:
        return None
    tot = struct.unpack(">H", frame[ip + 2:ip + 4])[0]
    tcp = ip + ihl
    thl = (frame[tcp + 12] >> 4) * 4
    sport, dport, seq = struct.unpack(">HHI", frame[tcp:tcp + 8])
    payload = frame[tcp + thl:ip + tot]
    return ip, ihl, tcp, thl, frame[ip + 12:ip + 16], sport, frame[ip + 16:ip + 20], dport, seq, payload


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f">{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def build(template, p, seq, payload):
    ip, ihl, tcp, thl = p[0], p[1], p[2], p[3]
    hdr = bytearray(template[:tcp + thl])
    struct.pack_into(">H", hdr, ip + 2, ihl + thl + len(payload))
    struct.pack_into(">H", hdr, ip + 10, 0)
    struct.pack_into(">H", hdr, ip + 10, csum(bytes(hdr[ip:ip + ihl])))
    struct.pack_into(">I", hdr, tcp + 4, seq)
    struct.pack_into(">H", hdr, tcp + 16, 0)
    pseudo = bytes(hdr[ip + 12:ip + 20]) + struct.pack(">BBH", 0, 6, thl + len(payload))
    struct.pack_into(">H", hdr, tcp + 16, csum(pseudo + bytes(hdr[tcp:tcp + thl]) + payload))
    return bytes(hdr) + payload


def main():
    if len(sys.argv) != 5 or sys.argv[4] not in ("from", "to"):
        sys.exit(__doc__)
    src, dst, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    field = 5 if sys.argv[4] == "from" else 7
    header, pkts = read_pcap(src)
    streams = {}  # (src, sport, dst, dport) -> list of (index, seq, payload)
    for n, (_, _, frame) in enumerate(pkts):
        p = parse(frame)
        if p and p[field] == port and p[9]:
            streams.setdefault((p[4], p[5], p[6], p[7]), []).append((n, p[8], bytes(p[9])))
    out = {}  # index -> replacement frames (None: drop)
    total = 0
    for key, segs in streams.items():
        start = segs[0][1]  # the first segment captured comes first in the stream
        segs.sort(key=lambda s: (s[1] - start) & 0xFFFFFFFF)
        base = segs[0][1]
        buf, have = bytearray(), 0
        for _, seq, pl in segs:
            off = (seq - base) & 0xFFFFFFFF
            if off + len(pl) > have:
                buf += pl[have - off:] if off < have else pl
                have = len(buf)
        if not (buf.startswith(b"MPA ID Rep Frame") or buf.startswith(b"MPA ID Req Frame")):
            continue
        i = 20 + struct.unpack(">H", buf[18:20])[0]
        pieces = [bytes(buf[:i])]
        while i < len(buf):
            if i + 4 > len(buf):
                sys.exit(f"{key}: stream ends inside an FPDU header at {i}")
            ulpdu = struct.unpack(">H", buf[i:i + 2])[0]
            ddp, rdmap = buf[i + 2], buf[i + 3]
            if ddp & 3 != 1 or rdmap >> 6 != 1:
                sys.exit(f"{key}: malformed FPDU at stream offset {i}: DDP {ddp:#x} RDMAP {rdmap:#x}")
            size = 2 + ulpdu
            size += (-size) % 4 + 4
            pieces.append(bytes(buf[i:i + size]))
            i += size
        total += len(pieces) - 1
        # Cut the stream at FPDU boundaries (and every MAX_SEGMENT octets
        # inside a longer FPDU): no new segment carries bytes of two FPDUs.
        cuts, at = [], 0
        for piece in pieces:
            for k in range(0, len(piece), MAX_SEGMENT):
                cuts.append((at + k, min(len(piece) - k, MAX_SEGMENT)))
            at += len(piece)
        # Each new segment goes where the captured segment holding its first
        # octet was, so the order against the other direction is kept.
        slots = {}
        offsets = sorted(((seq - base) & 0xFFFFFFFF, n) for n, seq, _ in segs)
        j = 0
        for start, length in cuts:
            while j + 1 < len(offsets) and offsets[j + 1][0] <= start:
                j += 1
            slots.setdefault(offsets[j][1], []).append((start, length))
        template = pkts[segs[0][0]][2]
        p = parse(template)
        for n, _, _ in segs:
            frame = pkts[n][2]
            q = parse(frame) or p
            out[n] = [
                build(frame, q, (base + start) & 0xFFFFFFFF, bytes(buf[start:start + length]))
                for start, length in slots.get(n, [])
            ]
    with open(dst, "wb") as f:
        f.write(header)
        for n, (ts_s, ts_u, frame) in enumerate(pkts):
            for fr in out.get(n, [frame]):
                f.write(struct.pack("<IIII", ts_s, ts_u, len(fr), len(fr)) + fr)
    print(f"fpdu-align: {total} FPDUs {sys.argv[4]} port {port} in {len(streams)} connection(s), one per segment")


if __name__ == "__main__":
    main()
