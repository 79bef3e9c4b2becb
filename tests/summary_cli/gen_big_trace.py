#!/usr/bin/env python3
"""gen_big_trace.py OUT MB -- write a synthetic kineto-style Chrome trace of
about MB megabytes: nested cpu_op slices on a few threads, kernels on two
streams with External ids and flows, as torch.profiler writes them. Used to
check that `acceltrace summary` reads large traces in bounded memory."""
import sys

out, mb = sys.argv[1], float(sys.argv[2])
target = int(mb * 1e6)
cpu = ('{"ph":"X","cat":"cpu_op","name":"aten::op_%d","pid":1234,"tid":%d,'
       '"ts":%d.%03d,"dur":%d.000,"args":{"External id":%d,"Sequence number":%d,'
       '"Fwd thread id":0,"Record function id":0,"Ev Idx":%d}},\n')
ker = ('{"ph":"X","cat":"kernel","name":"void gemm_kernel<%d>(float*, int)","pid":0,'
       '"tid":%d,"ts":%d.%03d,"dur":3.500,"args":{"External id":%d,"correlation":%d,'
       '"device":0,"stream":%d,"grid":[1,1,1],"block":[128,1,1]}},\n')
with open(out, "w") as f:
    f.write('{"schemaVersion":1,"distributedInfo":{"rank":0},"traceEvents":[\n')
    written, i, ts = 0, 0, 0
    while written < target:
        parts = []
        for _ in range(2000):
            tid = 1 + i % 4
            parts.append(cpu % (i % 50, tid, ts, i % 1000, 20, i, i, i))
            parts.append(cpu % (50 + i % 50, tid, ts + 5, i % 1000, 10, i + 1, i, i))
            parts.append(ker % (i % 20, 7 + i % 2, ts + 6, i % 1000, i + 1, i, 7 + i % 2))
            ts += 30
            i += 2
        chunk = "".join(parts)
        f.write(chunk)
        written += len(chunk)
    f.write('{"ph":"M","name":"process_name","pid":1234,"args":{"name":"python"}}\n]}\n')
