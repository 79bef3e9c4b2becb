#!/usr/bin/env python3
"""check_tls.py LIB MAX -- the library's thread-local storage (its PT_TLS
segment) stays within MAX bytes.

libacceltrace uses the initial-exec TLS model on its hot paths, so every
copy of it takes its whole TLS block from the static TLS that glibc keeps
spare for dlopen'ed objects (a surplus of a few hundred bytes per process,
shared with every other such library). A second copy dlopen'ed into a
process (init.conflict) fails to load with "cannot allocate memory in static
TLS block" once the block grows: large per-thread buffers belong on the
heap, behind a thread-local pointer.
"""
import struct
import sys


def tls_size(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit(f"{path}: not a 64-bit ELF file")
    end = "<" if data[5] == 1 else ">"
    phoff, = struct.unpack_from(end + "Q", data, 0x20)
    phentsize, phnum = struct.unpack_from(end + "HH", data, 0x36)
    for i in range(phnum):
        off = phoff + i * phentsize
        p_type, = struct.unpack_from(end + "I", data, off)
        if p_type == 7:  # PT_TLS
            p_memsz, = struct.unpack_from(end + "Q", data, off + 0x28)
            p_align, = struct.unpack_from(end + "Q", data, off + 0x30)
            return p_memsz, p_align
    return 0, 0


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    size, align = tls_size(sys.argv[1])
    limit = int(sys.argv[2])
    print(f"{sys.argv[1]}: TLS {size} bytes, aligned to {align} (budget {limit})")
    if size + max(align, 1) - 1 > limit:
        print(f"FAIL: thread-local storage of {size} bytes exceeds the budget of {limit}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
