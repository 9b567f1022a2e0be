#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpora of the libFuzzer harnesses (tests/fuzz/*.c).

A few valid inputs per harness, in the formats each harness's comment
describes; libFuzzer grows the rest.  Run from anywhere:
    tests/fuzz/seeds.py            # rewrites tests/fuzz/corpus/<harness>/seed-*
Values that depend on the stub platform (grant refs, handles) are those a
fresh input sees: refs count from 1 in the order the harness shares pages,
handles are generation 1 (0x10000 | slot).
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- wire.h ----
OP = dict(SEND=1, SEND_IMM=2, WRITE=3, WRITE_IMM=4, READ=5, CMP_SWAP=6, FETCH_ADD=7,
          RECV=8, SRQ_RECV=9, ATTACH_BUF=0x40, DETACH_BUF=0x41, ALLOC_PD=0x42,
          DEALLOC_PD=0x43, REG_MR=0x44, DEREG_MR=0x45, CREATE_CQ=0x46, DESTROY_CQ=0x47,
          CREATE_QP=0x48, DESTROY_QP=0x49, LISTEN=0x4a, UNLISTEN=0x4b, CONNECT=0x4c,
          ACCEPT=0x4d, REJECT=0x4e, MODIFY_QP=0x4f, CREATE_SRQ=0x50, DESTROY_SRQ=0x51,
          COLL=0x0a, TEAM_JOIN=0x52, TEAM_LEAVE=0x53)
H1 = 0x10000            # first handle of a kind
IOVA = 0x10000000
SIGNALED = 1


def req(op, handle=0, body=b"", num_sge=0, flags=0, rid=0):
    hdr = struct.pack("<BBHIQ", OP[op], num_sge, flags, handle, rid)
    return (hdr + body).ljust(128, b"\0")


def wr(op, qp, rid, sges=(), flags=0, remote=0, rkey=0, cmp_add=0, swap=0):
    body = struct.pack("<QQQII16x", remote, cmp_add, swap, rkey, 0)
    for addr, length, lkey in sges:
        body += struct.pack("<QII", addr, length, lkey)
    return req(op, qp, body, len(sges), flags, rid)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


# ---- fuzz_ring: 129-byte records (control byte + ring entry) ----
POLL = 0x10
PATCH = 0x08


def rec(guest, kind, body, ctl=POLL):
    return bytes([guest | kind << 1 | ctl]) + body.ljust(128, b"\0")


def ring_objects(g, list_ref):
    """ATTACH_BUF, ALLOC_PD, CREATE_CQ (page 0), REG_MR (all), CREATE_QP."""
    out = rec(g, 0, req("ATTACH_BUF", 0, struct.pack("<IHH16I", 16, 1, 1, list_ref,
                                                        *[0] * 15), rid=1))
    out += rec(g, 0, req("ALLOC_PD", rid=2))
    out += rec(g, 0, req("CREATE_CQ", 0, struct.pack("<IIII", H1, 0, 6, 0), rid=3))
    out += rec(g, 0, req("REG_MR", 0, struct.pack("<IIQQQII", H1, H1, 0, 16 * 4096, IOVA,
                                                    15, 0), rid=4))
    out += rec(g, 0, req("CREATE_QP", 0, struct.pack("<8I", H1, H1, H1, 16, 16, 16, 0, 0),
                         rid=5))
    return out


def wr_ext(g, op, qp, rid, sges, flags=0, remote=0, rkey=0, ctl=POLL):
    """A WR of more than 4 SGEs: its entry (the first 4), then its SGE
    entries (wire.h struct vrdma_sge_ext), the poll after the last."""
    body = struct.pack("<QQQII16x", remote, 0, 0, rkey, 0)
    body += b"".join(struct.pack("<QII", *x) for x in sges[:4])
    out = rec(g, 0, req(op, qp, body, len(sges), flags, rid), PATCH)
    for i in range(4, len(sges), 8):
        last = i + 8 >= len(sges)
        out += rec(g, 0, b"".join(struct.pack("<QII", *x) for x in sges[i:i + 8]),
                   ctl if last else 0)
    return out


def ring_traffic():
    """A sends, writes, reads and does atomics on B; key 0 is A's, 1 B's."""
    d = IOVA + 8192
    out = rec(1, 0, wr("RECV", H1, 100, [(d, 4096, 1)]), POLL | PATCH)
    out += rec(0, 0, wr("SEND", H1, 101, [(d, 64, 0)], SIGNALED), POLL | PATCH)
    out += rec(0, 0, wr("WRITE", H1, 102, [(d, 128, 0)], SIGNALED, IOVA + 12288, 1), PATCH)
    out += rec(0, 0, wr("READ", H1, 103, [(d + 256, 128, 0)], SIGNALED, IOVA + 12288, 1),
               PATCH)
    out += rec(0, 0, wr("CMP_SWAP", H1, 104, [(d + 512, 8, 0)], SIGNALED, IOVA + 12288, 1,
                        0, 7), PATCH)
    out += rec(0, 0, wr("FETCH_ADD", H1, 105, [(d + 520, 8, 0)], SIGNALED, IOVA + 12288, 1,
                        1), POLL | PATCH)
    return out


PEER = 0x40             # control bit 6: another node's vrdmad
CMSG = dict(JOINED=1, VERDICT=2, START=3, FWD=4, BWD=5, ABORT=6)


def peer(how, mtype, flags=0, seq=0, count=0, off=0, length=0, kind=0, ctype=0, op=0,
         nlocal=0, chunk=0, payload=b"", ctl=POLL):
    """A message of the other node on the link `how` names (bit 0: next)."""
    hdr = struct.pack("<IBBHQQQIIBBBBII12x", 0, CMSG[mtype], flags, 0, seq, count, off,
                      length, 0, kind, ctype, op, 0, nlocal, chunk)
    return bytes([PEER | ctl]) + (bytes([how, 0, 0, 0]) + hdr + payload).ljust(128, b"\0")


def span_seed():
    """A is rank 0 of a team whose rank 1 is on node n2: JOINED goes out,
    n2's VERDICT comes in, START goes out, then an allreduce of 16 int32
    goes forward and its result comes back (link 1: next, 3: and room)."""
    d = IOVA + 12288
    lst = b"n1\0n2\0"
    out = rec(0, 1, struct.pack("<IB3x", 10 * 4096 + 8192, len(lst) - 1) + lst, 0)
    out += rec(0, 0, req("TEAM_JOIN", 0, struct.pack("<16sIIIIIIQI12x", b"\xc4span", 2, 0,
                                                       H1, H1, 0, len(lst), IOVA + 8192, 0),
                         rid=30), POLL | PATCH)
    out += peer(3, "VERDICT", nlocal=1, length=4, payload=struct.pack("<I", 0x1234))
    # an allreduce of 16 int32 (sum), in place
    coll = struct.pack("<BBBxIQQ56x", 1, 1, 1, 0, 16, 1) + struct.pack("<QIIQII", d, 64, 0,
                                                                      d, 64, 0)
    out += rec(0, 0, req("COLL", 0, coll, rid=31), POLL | PATCH)
    out += peer(3, "BWD", seq=1, count=16, length=64, kind=1, ctype=1, op=1,
                payload=bytes(range(60)))
    return out


def ring_seeds():
    # Refs: A's device area 1-10, buffer 11-26, list page 27; B's 28-54.
    base = ring_objects(0, 27) + ring_objects(1, 54)
    svc = b"svc".ljust(32, b"\0")
    cm = rec(1, 0, req("LISTEN", 0, svc, rid=6))
    cm += rec(0, 0, req("CONNECT", H1, b"\0" * 32 + svc + b"hi".ljust(32, b"\0") +
                        struct.pack("<II", 2, 0), rid=6))
    cm += rec(1, 0, req("ACCEPT", H1, struct.pack("<Q", 0) + b"ok".ljust(32, b"\0") +
                        struct.pack("<II", 2, 0), rid=7), POLL | PATCH)
    # QP numbers count from 1: A's QP is 1, B's 2; an empty GID is patched.
    bind = rec(0, 0, req("MODIFY_QP", H1, struct.pack("<II16sII", 1, 2, b"", 0, 0), rid=6),
               POLL | PATCH)
    bind += rec(1, 0, req("MODIFY_QP", H1, struct.pack("<II16sII", 1, 1, b"", 0, 0), rid=6),
                POLL | PATCH)
    srq = rec(1, 0, req("CREATE_SRQ", 0, struct.pack("<IIII", H1, 16, 4, 0), rid=8))
    srq += rec(1, 0, req("CREATE_QP", 0, struct.pack("<8I", H1, H1, H1, 16, 0, 4, H1, 0),
                         rid=9))
    srq += rec(1, 0, wr("SRQ_RECV", H1, 110, [(IOVA + 8192, 4096, 1)]), POLL | PATCH)
    close = rec(0, 3, bytes([2]))                       # frontend Closed
    close += rec(0, 3, bytes([3]))                      # and back
    close += ring_objects(0, 27)
    hostile = rec(0, 2, struct.pack("<B3xi", 0, 1000))  # prod far ahead
    hostile += rec(1, 0, req("SEND", 0x77))             # unknown QP
    # A QP on the 1-CQE CQ of page 4; two held sends flushed by ERR overrun it.
    overrun = rec(0, 0, req("CREATE_CQ", 0, struct.pack("<IIII", H1, 4, 0, 0), rid=10))
    overrun += rec(0, 0, req("CREATE_QP", 0, struct.pack("<8I", H1, H1 + 1, H1 + 1, 4, 4,
                                                          4, 0, 0), rid=11))
    overrun += rec(0, 0, wr("SEND", H1 + 1, 120, [(IOVA + 8192, 8, 0)], SIGNALED), PATCH)
    overrun += rec(0, 0, wr("SEND", H1 + 1, 121, [(IOVA + 8192, 8, 0)], SIGNALED), PATCH)
    overrun += rec(0, 0, req("MODIFY_QP", H1 + 1, struct.pack("<II16sII", 2, 0, b"", 0, 0),
                             rid=12), POLL | 0x20)
    # More WRITEs in one poll than its budget (4 WRs, 16 KiB) allows.
    burst = b"".join(rec(0, 0, wr("WRITE", H1, 130 + i, [(IOVA + 8192, 8192, 0)], SIGNALED,
                                  IOVA + 16384, 1), PATCH) for i in range(6))
    burst += rec(0, 3, bytes([0, 1]))                   # a tick, then a poll
    # A 16-SGE receive and a 9-SGE send; SGEs in SGE entries have no
    # key a patch could fill in: zero length (no key needed) or bad keys.
    d = IOVA + 8192
    sge = wr_ext(1, "RECV", H1, 140, [(d + 32 * i, 8, 1) for i in range(4)] +
                 [(d + 512 + i, 0, 0) for i in range(12)])
    sge += wr_ext(0, "SEND", H1, 141, [(d + 16 * i, 10, 0) for i in range(4)] +
                  [(d + 1024 + i, 0, 0) for i in range(5)], SIGNALED)
    sge += wr_ext(0, "WRITE", H1, 142, [(d + 16 * i, 10, 0) for i in range(4)] +
                  [(d + 1024, 4, 3)], SIGNALED, IOVA + 12288, 1)
    sge += rec(0, 0, wr("WRITE", H1, 143, [(d, 8, 0)] * 4)[:1] + bytes([9]) +
               wr("WRITE", H1, 143, [(d, 8, 0)] * 4)[2:], POLL | PATCH)  # entries missing
    # UD (feature-ud): a UD QP each (QPNs 3 and 4, handles H1 + 1), Q_Key 7;
    # B posts a receive, A sends to it (its empty GID patched to the
    # node's), with the QP's own Q_Key, to a wrong Q_Key, into a receive
    # too small (LOC_LEN_ERR), past the MTU (A's QP to ERR), and a WRITE.
    ud = rec(0, 0, req("CREATE_QP", 0, struct.pack("<8I", H1, H1, H1, 16, 16, 4, 0, 1),
                       rid=20))
    ud += rec(1, 0, req("CREATE_QP", 0, struct.pack("<8I", H1, H1, H1, 16, 16, 4, 0, 1),
                        rid=20))
    ud += rec(0, 0, req("MODIFY_QP", H1 + 1, struct.pack("<II16sII", 3, 0, b"", 7, 0),
                        rid=21))
    ud += rec(1, 0, req("MODIFY_QP", H1 + 1, struct.pack("<II16sII", 3, 0, b"", 7, 0),
                        rid=21), POLL)
    d = IOVA + 8192
    ud += rec(1, 0, wr("RECV", H1 + 1, 150, [(d, 4096, 1)]), POLL | PATCH)

    def udwr(op, rid, qkey, sges):
        body = struct.pack("<16sIIII16x", b"", 4, qkey, 0, 0)
        body += b"".join(struct.pack("<QII", *x) for x in sges)
        return req(op, H1 + 1, body, len(sges), SIGNALED, rid)
    ud += rec(0, 0, udwr("SEND", 151, 0x80000000, [(d, 64, 0)]), POLL | PATCH)
    ud += rec(0, 0, udwr("SEND_IMM", 152, 8, [(d, 64, 0)]), POLL | PATCH)
    ud += rec(1, 0, wr("RECV", H1 + 1, 153, [(d, 16, 1)]), POLL | PATCH)
    ud += rec(0, 0, udwr("SEND", 156, 7, [(d, 64, 0)]), POLL | PATCH)
    ud += rec(0, 0, udwr("SEND", 154, 7, [(d, 4097, 0)]), POLL | PATCH)
    ud += rec(0, 0, wr("WRITE", H1 + 1, 155, [(d, 8, 0)], SIGNALED, IOVA + 12288, 1),
              POLL | PATCH)
    dump = os.path.join(HERE, "corpus", "ring")
    write(os.path.join(dump, "seed-span"), base + span_seed())
    # the same with the link up only after the join, and a send that fails
    late = peer(0x20, "JOINED", ctl=0) + span_seed()
    late = late.replace(bytes([PEER | POLL, 3]), bytes([PEER | POLL, 3 | 0x10]), 1)
    write(os.path.join(dump, "seed-span-late"), base + late)
    write(os.path.join(dump, "seed-span-fail"), base + peer(0x40, "JOINED", ctl=0) +
          span_seed())
    write(os.path.join(dump, "seed-connect"), base + cm + ring_traffic())
    write(os.path.join(dump, "seed-bind"), base + bind + ring_traffic())
    write(os.path.join(dump, "seed-srq"), base + cm + srq)
    write(os.path.join(dump, "seed-close"), base + close)
    write(os.path.join(dump, "seed-hostile"), base + hostile)
    write(os.path.join(dump, "seed-overrun"), base + overrun)
    write(os.path.join(dump, "seed-burst"), base + cm + burst)
    write(os.path.join(dump, "seed-sge"), base + cm + sge)
    write(os.path.join(dump, "seed-ud"), base + ud)


# ---- fuzz_hostmsg: [ctl][u16 len][packet or dom0 action] ----
VHP = dict(HELLO=1, KEY_READ=5, KEY_WRITE=6, KEY_RM=7, KEY_LIST=8, WATCH=9, UNWATCH=10,
           SHARE=11, UNSHARE=12, CHAN=13, CHAN_CLOSE=14)


def pkt(kind, seq, args=(), payload=b"", ctl=0):
    a = list(args) + [0] * (4 - len(args))
    body = struct.pack("<IIiI4I", VHP[kind], seq, 0, len(payload), *a) + payload
    return struct.pack("<BH", ctl, len(body)) + body


def dom0(what, first, pages, flags):
    body = struct.pack("<BIBB", what, first, pages - 1, flags)
    return struct.pack("<BH", 0x80, len(body)) + body


def hostmsg_seeds():
    d = os.path.join(HERE, "corpus", "hostmsg")
    fe = b"/local/domain/1/device/vrdma/0"
    hello = pkt("HELLO", 1, [2], b"vm1\0")
    keys = pkt("KEY_WRITE", 2, [], fe + b"/state\0" + b"3\0")
    keys += pkt("KEY_READ", 3, [], b"/local/domain/0/backend/vrdma/1/0/state\0")
    keys += pkt("KEY_LIST", 4, [], b"/local/domain/1\0")
    keys += pkt("WATCH", 5, [7], fe + b"\0") + pkt("UNWATCH", 6, [7])
    keys += pkt("KEY_RM", 7, [], fe + b"/state\0")
    # SHARE refs 100-103 with a sealed 4-page memfd; a channel on port 5.
    grants = pkt("SHARE", 8, [100, 4, 1], ctl=0x31) + pkt("CHAN", 9, [5])  # ctl: 1 sealed 4-page memfd
    grants += dom0(0, 100, 4, 1) + dom0(2, 5, 1, 0)
    grants += pkt("UNSHARE", 10, [100, 4]) + pkt("CHAN_CLOSE", 11, [5])
    write(os.path.join(d, "seed-keys"), hello + keys)
    write(os.path.join(d, "seed-grants"), hello + grants)
    write(os.path.join(d, "seed-bad"), hello + pkt("SHARE", 8, [1, 9, 1], ctl=0x05))
    # A guest that stops reading: its replies queue in dom0's outbox.
    deaf = b"".join(pkt("KEY_READ", 20 + i, [], b"/local/domain/1/name\0", ctl=0x40)
                    for i in range(16))
    write(os.path.join(d, "seed-deaf"), hello + deaf)


# ---- fuzz_hello: data[0] % 3 picks hello / reject / key-table entry ----
def hello_seeds():
    d = os.path.join(HERE, "corpus", "hello")
    magic = 0xa7        # VBE_VX_PD_MAGIC
    hello = struct.pack("<BBHIIQI", magic, 2, 1, 5, 0x1234, 0x5eed, 0) + b"hi"
    bind = struct.pack("<BBHIIQI", magic, 0, 1, 5, 0x1234, 0, 7)
    write(os.path.join(d, "seed-hello"), b"\0" + hello)
    write(os.path.join(d, "seed-bind"), b"\0" + bind)
    write(os.path.join(d, "seed-reject"), b"\1" + struct.pack("<BBH", magic, 2, 3) + b"no")
    # entry (backend/device/verbs.h): gkey rkey iova length[0..31] pd pgoff
    # access length[32..39] 0 check; then gkey pd addr len access, and an
    # odd byte: the harness makes the check word fit.  An MR of 4 GiB +
    # 8 KiB, a WRITE at 4 GiB + 100 of it.
    length = (4 << 30) + 8192
    ent = struct.pack("<IIQIHHBBHI", 0x2001, 77, IOVA, length & 0xffffffff, 1, 0x100, 15,
                      length >> 32, 0, 0)
    ask = struct.pack("<IIQQI", 0x2001, 1, IOVA + (4 << 30) + 100, 8000, 2) + b"\1"
    write(os.path.join(d, "seed-rkt"), b"\2" + ent + ask)


# ---- fuzz_xsvalue: [op][which][len][value] ----
def xs(op, which, val):
    return bytes([op, which, len(val)]) + val


def xsvalue_seeds():
    d = os.path.join(HERE, "corpus", "xsvalue")
    write(os.path.join(d, "seed-default"), b"")
    # Both rings at their largest: 37 pages, refs 1-37 (ring-ref<N>: which 6 + N).
    big = xs(0, 2, b"10") + xs(0, 3, b"8") + xs(0, 4, b"37")
    big += b"".join(xs(0, 6 + i, str(i + 1).encode()) for i in range(37))
    big += xs(5, 6, b"\x0a\x08")              # page 0: the orders to match
    write(os.path.join(d, "seed-big"), big)
    prio = xs(2, 1, b"t1") + xs(2, 2, b"5") + xs(2, 3, b"high") + xs(2, 4, b"100M")
    prio += xs(3, 0x80, b"0") + xs(4, 0, b"vm1")
    write(os.path.join(d, "seed-prio"), prio)
    life = xs(0, 0, b"3") + xs(6, 1, b"") + xs(7, 1, b"") + xs(6, 1, b"") + xs(7, 0, b"")
    write(os.path.join(d, "seed-life"), life)
    write(os.path.join(d, "seed-bad"), xs(0, 5, b"99") + xs(5, 0, b"XXXX") + xs(1, 7, b""))


# ---- fuzz_udhdr: a datagram between vrdmads as the device delivers it ----
def udhdr_seeds():
    d = os.path.join(HERE, "corpus", "udhdr")
    # RoCE v2 / IPv4: 20 zero bytes, an IPv4 header from 10.0.0.2
    ip4 = bytes(20) + bytes([0x45]) + bytes(11) + bytes([10, 0, 0, 2]) + bytes(4)
    # IB GRH: IP version 6, source GID at 8
    grh = bytes([0x60]) + bytes(7) + bytes([0xfe, 0x80]) + bytes(14) + bytes(16)
    payload = b"ping" * 4
    hdr = struct.pack("<BBHIIIIIII", 0xd7, 1, 0, 0x123, 7, 0x11111111, 0xab, 0x5555,
                      len(payload), 0)
    write(os.path.join(d, "seed-ipv4"), ip4 + hdr + payload)
    write(os.path.join(d, "seed-grh"), grh + hdr[:1] + b"\0" + hdr[2:] + payload)


if __name__ == "__main__":
    ring_seeds()
    xsvalue_seeds()
    hostmsg_seeds()
    hello_seeds()
    udhdr_seeds()
