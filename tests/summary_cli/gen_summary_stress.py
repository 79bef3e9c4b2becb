#!/usr/bin/env python3
"""gen_summary_stress.py KIND OUT N -- write a Chrome trace that stresses
`acceltrace summary` (issue 30 part 4), streamed so that nothing big is
held here and nothing big is committed:
  names   N slices, each with its own name (one lane): per-name memory
  lanes   N slices, each on its own lane (tid; 1000 tids per pid): per-lane memory
  pids    N slices, each in its own process: per-process time and memory
  longname  one kernel whose name is N bytes, written gzip-compressed
            (OUT should end in .gz): time and memory in one string's length
Output is a valid trace in every case."""
import gzip
import sys

kind, out, n = sys.argv[1], sys.argv[2], int(float(sys.argv[3]))
HEAD = '{"schemaVersion":1,"traceEvents":[\n'
TAIL = ('{"ph":"M","name":"process_name","pid":1,"args":{"name":"stress"}}\n]}\n')


def slices(f, fmt):
    batch = []
    for i in range(n):
        batch.append(fmt(i))
        if len(batch) == 10000:
            f.write("".join(batch))
            batch = []
    f.write("".join(batch))


if kind == "names":
    with open(out, "w") as f:
        f.write(HEAD)
        slices(f, lambda i: '{"ph":"X","cat":"kernel","name":"void kernel_number_%09d<float>(float*)",'
               '"pid":1,"tid":7,"ts":%d.000,"dur":%d.500},\n' % (i, 2 * i, 1 + i % 7))
        f.write(TAIL)
elif kind == "lanes":
    with open(out, "w") as f:
        f.write(HEAD)
        slices(f, lambda i: '{"ph":"X","cat":"cpu_op","name":"aten::op_%d","pid":%d,"tid":%d,'
               '"ts":%d.000,"dur":1.000},\n' % (i % 10, 1 + i // 1000, i, i))
        f.write(TAIL)
elif kind == "pids":
    with open(out, "w") as f:
        f.write(HEAD)
        slices(f, lambda i: '{"ph":"X","cat":"cpu_op","name":"aten::op","pid":%d,"tid":1,'
               '"ts":%d.000,"dur":1.000},\n' % (100 + i, i))
        f.write(TAIL)
elif kind == "longname":
    with gzip.open(out, "wt", compresslevel=6) as f:
        f.write(HEAD + '{"ph":"X","cat":"kernel","pid":1,"tid":7,"ts":1.0,"dur":2.0,"name":"')
        piece = "k" * (1 << 20)
        left = n
        while left > 0:
            f.write(piece[:min(left, len(piece))])
            left -= len(piece)
        f.write('"},\n{"ph":"X","cat":"kernel","name":"short","pid":1,"tid":7,"ts":5.0,"dur":1.0},\n')
        f.write(TAIL)
else:
    sys.exit("unknown kind %r (names, lanes, pids, longname)" % kind)
