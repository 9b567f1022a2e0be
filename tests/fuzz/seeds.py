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
          ACCEPT=0x4d, REJECT=0x4e, MODIFY_QP=0x4f, CREATE_SRQ=0x50, DESTROY_SRQ=0x51)
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


# ---- fuzz_hello: data[0] % 3 picks hello / reject / key-table entry ----
def hello_seeds():
    d = os.path.join(HERE, "corpus", "hello")
    hello = struct.pack("<BBHIIQI", 0xa4, 2, 1, 5, 0x1234, 0x5eed, 0) + b"hi"
    bind = struct.pack("<BBHIIQI", 0xa4, 0, 1, 5, 0x1234, 0, 7)
    write(os.path.join(d, "seed-hello"), b"\0" + hello)
    write(os.path.join(d, "seed-bind"), b"\0" + bind)
    write(os.path.join(d, "seed-reject"), b"\1" + struct.pack("<BBH", 0xa4, 2, 3) + b"no")
    # entry: gkey rkey iova length access pd; then gkey pd addr len access
    ent = struct.pack("<IIQQII", 0x2001, 77, IOVA, 65536, 15, 1)
    ask = struct.pack("<IIQQI", 0x2001, 1, IOVA + 4096, 64, 2)
    write(os.path.join(d, "seed-rkt"), b"\2" + ent + ask)


if __name__ == "__main__":
    hello_seeds()
