#!/usr/bin/env python3
"""fpdu-align.py CAPTURE.pcap MTU: checks the wire as captured on the peer's
end of the veth after segmentation: every TCP data segment of an iWARP
connection starts (and ends) on an FPDU boundary (RFC 5044 sec. 8: the
MPA-aware sender), so every FPDU starts a TCP segment; and no IPv4
packet is larger than the MTU (the capture really shows wire segments,
not super-segments). Connections are found by their MPA Request; CRC
from the Reply's C bit, markers must be off. Exit 0 ok, 1 on a violation
or when nothing was checked. --self-test: the checker passes a synthetic
aligned capture and fails one with a segment cut inside an FPDU.
Standard library only."""
import os
import struct
import sys

MPA_REQ = b"MPA ID Req Frame"
MPA_REP = b"MPA ID Rep Frame"


def packets(path):
    with open(path, "rb") as f:
        hdr = f.read(24)
        magic = struct.unpack("<I", hdr[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            e = "<"
        elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
            e = ">"
        else:
            sys.exit("not a pcap file: " + path)
        linktype = struct.unpack(e + "I", hdr[20:24])[0]
        if linktype != 1:
            sys.exit("link type %d, expected Ethernet" % linktype)
        while True:
            rh = f.read(16)
            if len(rh) < 16:
                return
            _, _, incl, orig = struct.unpack(e + "IIII", rh)
            data = f.read(incl)
            if incl < orig:
                sys.exit("capture truncated a frame (snaplen): %d of %d bytes" % (incl, orig))
            yield data


def _synthetic(path, cut):
    """A pcap of one iWARP connection: SYNs, the MPA Request and Reply
    (CRC on), then 4 FPDUs of 100 ULPDU bytes from the initiator, each in
    its own segment, or (cut) with the third segment split 10 bytes into
    an FPDU (the CRC bytes are not checked here). For --self-test."""
    a, b = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])

    def frame(src, dst, sport, dport, seq, flags, payload=b""):
        tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, flags, 65535, 0, 0) + payload
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0, 64, 6, 0, src, dst) + tcp
        return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip

    frames = [frame(a, b, 1000, 2000, 99, 0x02), frame(b, a, 2000, 1000, 499, 0x12)]
    req = MPA_REQ + bytes([0x40, 1]) + struct.pack("!H", 0)
    rep = MPA_REP + bytes([0x40, 1]) + struct.pack("!H", 0)
    frames += [frame(a, b, 1000, 2000, 100, 0x18, req), frame(b, a, 2000, 1000, 500, 0x18, rep)]
    fpdu = struct.pack("!H", 100) + bytes(100) + bytes(2) + bytes(4)  # 2 + 100, pad 2, CRC
    stream = fpdu * 4
    cuts = [0, len(fpdu), 2 * len(fpdu), 3 * len(fpdu), 4 * len(fpdu)]
    if cut:
        cuts = [0, len(fpdu), 2 * len(fpdu) + 10, 3 * len(fpdu), 4 * len(fpdu)]
    for lo, hi in zip(cuts, cuts[1:]):
        frames.append(frame(a, b, 1000, 2000, 100 + len(req) + lo, 0x18, stream[lo:hi]))
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for fr in frames:
            f.write(struct.pack("<IIII", 0, 0, len(fr), len(fr)) + fr)


def self_test():
    """The checker must pass an aligned capture and fail a cut one."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        good, bad = os.path.join(d, "good.pcap"), os.path.join(d, "bad.pcap")
        _synthetic(good, False)
        _synthetic(bad, True)
        sys.argv = [sys.argv[0], good, "1500"]
        if main() != 0:
            print("self-test: an aligned capture was refused")
            return 1
        sys.argv = [sys.argv[0], bad, "1500"]
        if main() == 0:
            print("self-test: a segment cut inside an FPDU was accepted")
            return 1
    print("fpdu-align self-test: ok")
    return 0


def main():
    path, mtu = sys.argv[1], int(sys.argv[2])
    flows = {}  # (src, sport, dst, dport) -> {"isn": seq of SYN, "segs": [(off, len)], "data": {off: bytes}}
    too_big = 0
    for fr in packets(path):
        if len(fr) < 14 + 20 or struct.unpack("!H", fr[12:14])[0] != 0x0800:
            continue
        ip = fr[14:]
        ihl = (ip[0] & 15) * 4
        tot = struct.unpack("!H", ip[2:4])[0]
        if tot > mtu:
            too_big += 1
        if ip[9] != 6:
            continue
        t = ip[ihl:tot]
        sport, dport, seq = struct.unpack("!HHI", t[:8])
        thl = (t[12] >> 4) * 4
        flags = t[13]
        key = (ip[12:16], sport, ip[16:20], dport)
        if flags & 0x02:  # SYN: a new connection in this direction
            flows[key] = {"isn": seq, "segs": [], "data": {}}
            continue
        fl = flows.get(key)
        pl = t[thl:]
        if fl is None or not pl:
            continue
        off = (seq - fl["isn"] - 1) & 0xFFFFFFFF
        fl["segs"].append((off, len(pl)))
        fl["data"].setdefault(off, pl)
    if too_big:
        print("FAIL: %d IPv4 packets larger than the MTU %d: not cut into wire segments" % (too_big, mtu))
        return 1
    # Reassemble each direction; find the MPA frames.
    streams = {}
    for key, fl in flows.items():
        buf = bytearray()
        for off in sorted(fl["data"]):
            d = fl["data"][off]
            if off > len(buf):
                break  # a hole: stop there
            buf += d[len(buf) - off:] if off + len(d) > len(buf) else b""
        streams[key] = bytes(buf)
    checked = segs = fpdus = 0
    bad = 0
    for key, s in streams.items():
        if not s.startswith(MPA_REQ):
            continue
        rkey = (key[2], key[3], key[0], key[1])
        r = streams.get(rkey, b"")
        if not r.startswith(MPA_REP):
            print("FAIL: connection without an MPA Reply in the capture")
            return 1
        mflags = r[16]
        crc = bool(mflags & 0x40)
        if (mflags & 0x80) or (s[16] & 0x80):
            print("FAIL: markers negotiated; this check handles none")
            return 1
        for st, fl in ((s, flows[key]), (r, flows[rkey])):
            pd = struct.unpack("!H", st[18:20])[0]
            at = 20 + pd
            starts = {at}
            while at + 2 <= len(st):
                ul = struct.unpack("!H", st[at:at + 2])[0]
                n = 2 + ul
                n += (-n) % 4
                n += 4 if crc else 0
                at += n
                starts.add(at)
                fpdus += 1
            first = 20 + pd
            for off, ln in fl["segs"]:
                if off < first:
                    continue  # the MPA frame itself
                segs += 1
                if off not in starts or (off + ln) not in starts:
                    bad += 1
                    if bad <= 10:
                        print("FAIL: segment at stream offset %d, %d bytes, does not start and end on FPDU boundaries"
                              % (off, ln))
            checked += 1
    if checked == 0 or segs == 0:
        print("FAIL: no iWARP data segments in the capture")
        return 1
    print("fpdu-align: %d directions, %d FPDUs, %d data segments, %d misaligned" % (checked, fpdus, segs, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(self_test() if sys.argv[1:] == ["--self-test"] else main())
