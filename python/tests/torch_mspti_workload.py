"""torch_mspti_workload -- torch.profiler with [CPU, PrivateUse1] over the
fake libmspti (tests/vendor/fake_mspti.c), which reuses correlation ids as
the real library does (FAKE_MSPTI_CORR_WRAP).

Each of N record_function scopes "op_<i>" launches one kernel "k_<i>";
the fake delivers the device records after all the launches, so a join by
correlation id alone would link a kernel to the last op that used its id.
The join is by id and time (the latest launch with the id that started no
later than the kernel, src/timeline/joins.c), so each scope lasts 200 us:
the fake starts a kernel 20 us after its launch, and an unpaced loop
(~10 us an iteration) reused the id before the kernel started in about one
run in eight, an ambiguity no join by time can settle.
Writes the torch trace to argv[1]/trace.json (and, through
ACCELTRACE_TORCH_TRACE, acceltrace's own Chrome trace of the same run);
argv[2] is the fake library (also ACCELTRACE_MSPTI_LIB).
"""

import ctypes
import json
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, record_function

import acceltrace.torch as at

out, fake_path = sys.argv[1], sys.argv[2]
N = int(os.environ.get("WORKLOAD_OPS", "6"))
fake = ctypes.CDLL(fake_path, mode=ctypes.RTLD_GLOBAL)
fake.fake_mspti_launch_kernel.restype = ctypes.c_uint64
fake.fake_mspti_launch_kernel.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint32,
                                          ctypes.c_uint32, ctypes.c_uint64]
corrs = []
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
    for i in range(N):
        with record_function("op_%d" % i):
            corrs.append(fake.fake_mspti_launch_kernel(b"k_%d" % i, b"AI_CORE", 0, 1, 5000))
            time.sleep(0.0002)
prof.export_chrome_trace(os.path.join(out, "trace.json"))
with open(os.path.join(out, "summary.json"), "w") as f:
    json.dump({"corrs": corrs, "errors": at.last_errors(), "counters": at.counters()}, f)
