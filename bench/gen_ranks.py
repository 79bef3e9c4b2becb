#!/usr/bin/env python3
"""gen_ranks.py -- per-rank traces of a generated data-parallel job, in
acceltrace's JSON format (what `acceltrace run -o 'trace.%r.json'` writes for
an OpenCL program: clEnqueueNDRangeKernel launches on the host lane,
kernels and copies on the device's queue lanes, linked by correlation,
ProfilerStep#N user ranges, distributedInfo), for bench/recipe_scale.py and
the recipe tests.

    python bench/gen_ranks.py DIR RANKS KERNELS [--steps=N] [--seed=N] [--slow=RANK]

Each rank has KERNELS kernels over --steps steps (10 by default), on queue
1; one kernel in 16 is a collective (ncclAllReduce) on queue 2, which
compute kernels partly overlap; one op in 40 is a host-to-device copy on
queue 1. Rank --slow (default 1; -1 for none) runs its kernels 1.25x
longer: the straggler. Same seed, same traces (random.Random per rank).
"""

import os
import random
import sys

NAMES = ["gemm_f32", "softmax", "layernorm", "gelu", "attention_fwd", "reduce_sum", "copy_bias",
         "conv2d_3x3"]
MEANS_US = [40.0, 6.0, 4.0, 2.5, 55.0, 3.0, 1.5, 30.0]


def write_rank(path, rank, world, kernels, steps, seed, slow):
    rnd = random.Random(seed * 1000003 + rank)
    scale = 1.25 if rank == slow else 1.0
    out = []
    w = out.append
    host = 10.0        # host clock, us
    dev = {1: 0.0, 2: 0.0}  # end of the last op per queue
    corr = 0
    per_step = max(1, kernels // steps)
    done = 0
    for s in range(steps):
        n = per_step if s < steps - 1 else kernels - done
        step_start = host
        for i in range(n):
            corr += 1
            coll = (done + i) % 16 == 15
            copy = (done + i) % 40 == 39
            q = 2 if coll else 1
            launch = round(rnd.uniform(2.0, 5.0), 3)
            w('{"ph":"X","cat":"opencl_runtime","name":"%s","pid":100,"tid":100,'
              '"ts":%.3f,"dur":%.3f,"args":{"correlation":%d}}'
              % ("clEnqueueWriteBuffer" if copy else "clEnqueueNDRangeKernel", host, launch, corr))
            ready = host + launch + round(rnd.uniform(1.0, 12.0), 3)
            gap = 0.0 if rnd.random() < 0.5 else round(rnd.uniform(0.005, 3.0), 3)
            start = max(ready, dev[q] + gap)
            if copy:
                dur = round(rnd.uniform(3.0, 20.0), 3)
                w('{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD","pid":0,"tid":%d,"ts":%.3f,'
                  '"dur":%.3f,"args":{"correlation":%d,"device":0,"stream":%d,"bytes":%d}}'
                  % (q, start, dur, corr, q, 65536))
            else:
                if coll:
                    name, mean = "ncclAllReduce_RING_LL_Sum_float", 80.0
                else:
                    k = rnd.randrange(len(NAMES))
                    name, mean = NAMES[k], MEANS_US[k]
                dur = round(max(0.5, rnd.gauss(mean, mean / 5)) * scale, 3)
                w('{"ph":"X","cat":"kernel","name":"%s","pid":0,"tid":%d,"ts":%.3f,"dur":%.3f,'
                  '"args":{"correlation":%d,"device":0,"stream":%d,"queue":"0x%x"}}'
                  % (name, q, start, dur, corr, q, 0x5000 + q))
            dev[q] = start + dur
            host += launch + round(rnd.uniform(0.5, 30.0), 3)
        done += n
        host = max(host, dev[1], dev[2]) + 5.0  # the step ends when the device is done
        w('{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":100,"tid":100,'
          '"ts":%.3f,"dur":%.3f}' % (s, step_start - 1.0, host - step_start))
    with open(path + ".tmp", "w") as f:
        f.write('{"schemaVersion":1,"traceName":"gen_ranks","displayTimeUnit":"ms",'
                '"baseTimeNanoseconds":1700000000000000000,"deviceProperties":'
                '[{"id":0,"name":"generated","vendor":"OpenCL","pid":0}],'
                '"distributedInfo": {"rank": %d, "local_rank": %d, "world_size": %d},'
                '"traceEvents":[\n' % (rank, rank, world))
        f.write(",\n".join(out))
        f.write('\n]}\n')
    os.rename(path + ".tmp", path)


def generate(folder, ranks, kernels, steps=10, seed=1, slow=1, jobs=None):
    """Write folder/rank<R>.json for R < ranks; returns the paths."""
    os.makedirs(folder, exist_ok=True)
    paths = [os.path.join(folder, "rank%d.json" % r) for r in range(ranks)]
    args = [(p, r, ranks, kernels, steps, seed, slow) for r, p in enumerate(paths)]
    if (jobs or os.cpu_count() or 1) > 1 and ranks > 1:
        from multiprocessing import Pool
        with Pool(jobs or os.cpu_count()) as pool:
            pool.starmap(write_rank, args)
    else:
        for a in args:
            write_rank(*a)
    return paths


def main():
    pos = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    if len(pos) != 3:
        sys.exit(__doc__)
    generate(pos[0], int(pos[1]), int(pos[2]), int(opts.get("steps", 10)),
             int(opts.get("seed", 1)), int(opts.get("slow", 1)))


if __name__ == "__main__":
    main()
