#!/usr/bin/env python3
"""spool_read.py -- a small, independent reader of acceltrace spool files
(src/core/record.h) for the OpenCL source's tests. It checks the source's
output before (and independently of) the timeline builder: records are
decoded straight from the file with the struct module.

Only what the OpenCL tests need is decoded: header counters, strings,
API calls, device ops, devices, queues, clock records and error lines.
"""
import struct
import sys

MAGIC = 0x4C4F4F5053544341
K_SEGMENT, K_STRING, K_API, K_DEVICE_OP, K_DEVICE, K_QUEUE, K_CLOCK, K_ERROR = (
    1, 3, 10, 11, 12, 13, 15, 16)
OP_NAMES = ["KERNEL", "MEMCPY_HTOD", "MEMCPY_DTOH", "MEMCPY_DTOD", "MEMSET", "MAP", "UNMAP",
            "MARKER", "BARRIER", "COLLECTIVE", "SYNC", "OTHER"]
F_SEALED = 0x1
OPF_NO_TIMES, OPF_OOO = 0x1, 0x2


def _kind_max():
    """ACT_REC_KIND_MAX from record.h (the header's counter arrays depend on it)."""
    import os
    import re
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "src", "core", "record.h")) as f:
        return int(re.search(r"ACT_REC_KIND_MAX\s*=\s*(\d+)", f.read()).group(1))


KIND_MAX = _kind_max()


class Spool:
    def __init__(self, path):
        with open(path, "rb") as f:
            data = f.read()
        self.path = path
        (magic, self.version, self.header_size, self.capacity, self.chunk_size,
         self.chunk_count, self.pid, self.ppid, self.clock_kind, self.flags) = struct.unpack_from(
             "<QIIQIIIIII", data, 0)
        if magic != MAGIC:
            raise ValueError(f"{path}: not a spool (magic {magic:#x})")
        self.chunks_used = struct.unpack_from("<Q", data, 96)[0]
        self.dropped = list(struct.unpack_from(f"<{KIND_MAX}Q", data, 112))
        self.outside_window = list(struct.unpack_from(f"<{KIND_MAX}Q", data, 112 + 8 * KIND_MAX))
        self.callbacks_pending, self.callbacks_lost = struct.unpack_from(
            "<QQ", data, 112 + 16 * KIND_MAX)
        self.sealed = bool(self.flags & F_SEALED)
        self.apis, self.ops, self.devices, self.queues, self.clocks, self.errors = (
            [], [], [], [], [], [])
        self._read_chunks(data)

    def _read_chunks(self, data):
        strings = {}  # (thread serial, id) -> str
        n = min(self.chunks_used, self.chunk_count)
        for c in range(n):
            base = self.header_size + c * self.chunk_size
            cmagic, _idx, used, _pad = struct.unpack_from("<IIII", data, base)
            if cmagic != 0x4B4E4843:
                continue
            pos, end, serial = base + 16, base + 16 + used, None
            while pos + 8 <= end:
                kind, size8, aux = struct.unpack_from("<HHI", data, pos)
                size = size8 * 8
                if size < 8 or pos + size > end:
                    raise ValueError(f"{self.path}: bad record at {pos} (kind {kind}, size {size})")
                body = pos + 8
                s = lambda i: strings.get((serial, i), "") if i else ""
                if kind == K_SEGMENT:
                    serial = aux
                elif kind == K_STRING:
                    ln = struct.unpack_from("<I", data, body)[0]
                    strings[(serial, aux)] = data[body + 8:body + 8 + ln].decode("utf-8", "replace")
                elif kind == K_API:
                    st, en, corr, ext, res, src = struct.unpack_from("<QQQQiI", data, body)
                    self.apis.append(dict(name=s(aux), start=st, end=en, corr=corr, ext=ext,
                                          result=res, source=src, thread=serial))
                elif kind == K_DEVICE_OP:
                    (op, src, flags, status, dev, q, queued, submit, st, en, corr, ext,
                     nbytes) = struct.unpack_from("<BBHiQQQQQQQQQ", data, body)
                    gs = struct.unpack_from("<3Q", data, body + 96)
                    ls = struct.unpack_from("<3Q", data, body + 120)
                    self.ops.append(dict(name=s(aux), op=OP_NAMES[op] if op < len(OP_NAMES) else op,
                                         source=src, flags=flags, status=status, device=dev,
                                         queue=q, queued=queued, submit=submit, start=st,
                                         end=en, corr=corr, ext=ext, bytes=nbytes,
                                         gsize=list(gs), lsize=list(ls), thread=serial))
                elif kind == K_DEVICE:
                    dev, vendor, src, index = struct.unpack_from("<QIII", data, body)
                    self.devices.append(dict(name=s(aux), device=dev, vendor=s(vendor),
                                             source=src, index=index))
                elif kind == K_QUEUE:
                    q, dev, props = struct.unpack_from("<QQQ", data, body)
                    self.queues.append(dict(queue=q, device=dev, properties=props))
                elif kind == K_CLOCK:
                    dev, off, err = struct.unpack_from("<Qqq", data, body)
                    self.clocks.append(dict(method=s(aux), device=dev, offset=off, error=err))
                elif kind == K_ERROR:
                    self.errors.append(s(aux))
                pos += size


if __name__ == "__main__":
    import json
    for p in sys.argv[1:]:
        sp = Spool(p)
        print(json.dumps(dict(pid=sp.pid, sealed=sp.sealed, pending=sp.callbacks_pending,
                              lost=sp.callbacks_lost, dropped=sum(sp.dropped), apis=len(sp.apis),
                              ops=len(sp.ops), devices=sp.devices, queues=len(sp.queues),
                              clocks=sp.clocks, errors=sp.errors), indent=1))
