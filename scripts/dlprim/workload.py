"""workload.py -- a small CNN trained a few steps on pytorch_dlprim's ocl:0
and on the CPU, for scripts/dlprim-check.sh.

    python workload.py OUTDIR [--torch-profiler] [--import-order-probe]

pytorch_ocl is imported FIRST: it names the PrivateUse1 backend "ocl";
`import acceltrace.torch` before it would name it "acceltrace" and ocl:0
would then be refused (--import-order-probe shows it, in a process of its
own).

Steps: WARMUP steps first (PoCL compiles each dlprimitives program on first
use), then PROFILED steps inside the backend's own profiler
(torch.ocl.profile, which reads each kernel's OpenCL event times into
OUTDIR/backend.csv) and inside an acceltrace range / record_function
"dlprim.profiled" that marks the window in the trace. With
--torch-profiler the profiled steps also run under torch.profiler with
[CPU, PrivateUse1] and `import acceltrace.torch` (after pytorch_ocl),
exported to OUTDIR/trace.json.

The same steps run on the CPU from the same initial weights and data: the
losses, the logits of the last step and the weights after it must agree
(written to OUTDIR/result.json; the check script judges them).
"""

import copy
import json
import os
import sys
import time

if "--import-order-probe" in sys.argv:
    # acceltrace.torch imported first must leave the PrivateUse1 slot to
    # the backend (it once took it: "ocl:0" refused, then a crash).
    import torch
    import acceltrace.torch  # noqa: F401
    import pytorch_ocl  # noqa: F401
    out = {"privateuse1_name": torch._C._get_privateuse1_backend_name()}
    try:
        torch.zeros(4, device="ocl:0")
        out["ocl0"] = "accepted"
    except Exception as exc:  # what a user sees
        out["ocl0"] = "refused: %s: %s" % (type(exc).__name__, str(exc).splitlines()[0])
    print(json.dumps(out))
    sys.exit(0)

import pytorch_ocl  # noqa: E402,F401  FIRST: names PrivateUse1 "ocl"
import torch  # noqa: E402

OUT = sys.argv[1]
USE_TORCH_PROFILER = "--torch-profiler" in sys.argv
if USE_TORCH_PROFILER:
    import acceltrace.torch  # noqa: F401  after pytorch_ocl
    from torch.profiler import ProfilerActivity, profile, record_function
else:
    from torch.profiler import record_function
import acceltrace  # noqa: E402

WARMUP, PROFILED = 2, 3
DEV = "ocl:0"
os.makedirs(OUT, exist_ok=True)


class Net(torch.nn.Module):
    """conv-bn-relu-pool, conv-relu, global average pool, linear: the
    kernels of a small vision net (im2col/gemm convolutions, batch-norm
    sums, pooling, softmax + nll loss with its reductions)."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.c2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.bn(self.c1(x))), 2)
        x = torch.relu(self.c2(x))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


# Before the device's first use: its queue is made with profiling on
# (the backend's profiler needs it; torch.ocl.enable_profiling returns
# nothing, the profiler's start says whether it took).
torch.ocl.enable_profiling(DEV)
torch.manual_seed(0)
cpu_model = Net()
ocl_model = copy.deepcopy(cpu_model).to(DEV)
batches = [(torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,)))
           for _ in range(WARMUP + PROFILED)]


def make_opt(model):
    # foreach=False: one kernel set per parameter, on every device alike
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, foreach=False)


def step(model, opt, x, y):
    opt.zero_grad()
    logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, y)
    loss.backward()
    opt.step()
    return loss, logits


def run(model, dev, window):
    opt = make_opt(model)
    losses, logits, times = [], None, []
    for i, (x, y) in enumerate(batches):
        x, y = x.to(dev), y.to(dev)
        if i == WARMUP and window is not None:
            window.__enter__()
        t0 = time.perf_counter()
        loss, logits = step(model, opt, x, y)
        losses.append(float(loss.detach().to("cpu")))
        times.append(time.perf_counter() - t0)
    if window is not None:
        window.__exit__(None, None, None)
    return losses, logits.detach().to("cpu"), times


class Window:
    """The profiled steps: the backend's profiler, a marker range and,
    with --torch-profiler, torch.profiler."""

    def __init__(self):
        self.stack = []

    def __enter__(self):
        if USE_TORCH_PROFILER:
            self.prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1])
            self.prof.__enter__()
            self.stack.append(self.prof)
        backend = torch.ocl.profile(DEV, os.path.join(OUT, "backend.csv"))
        backend.__enter__()
        self.stack.append(backend)
        for r in (acceltrace.range("dlprim.profiled"), record_function("dlprim.profiled")):
            r.__enter__()
            self.stack.append(r)

    def __exit__(self, *exc):
        while self.stack:
            self.stack.pop().__exit__(None, None, None)
        if USE_TORCH_PROFILER:
            self.prof.export_chrome_trace(os.path.join(OUT, "trace.json"))


t0 = time.perf_counter()
ocl_losses, ocl_logits, ocl_times = run(ocl_model, DEV, Window())
ocl_wall = time.perf_counter() - t0
cpu_losses, cpu_logits, cpu_times = run(cpu_model, "cpu", None)

cpu_params = dict(cpu_model.named_parameters())
wdiff = {n: float((p.detach().to("cpu") - cpu_params[n].detach()).abs().max())
         for n, p in ocl_model.named_parameters()}
result = {
    "device": DEV,
    "privateuse1_name": torch._C._get_privateuse1_backend_name(),
    "warmup_steps": WARMUP, "profiled_steps": PROFILED,
    "ocl_losses": ocl_losses, "cpu_losses": cpu_losses,
    "loss_maxdiff": max(abs(a - b) for a, b in zip(ocl_losses, cpu_losses)),
    "logits_maxdiff": float((ocl_logits - cpu_logits).abs().max()),
    "weights_maxdiff": max(wdiff.values()),
    "weights_maxdiff_by_param": wdiff,
    "ocl_step_s": ocl_times, "cpu_step_s": cpu_times, "ocl_wall_s": ocl_wall,
}
if USE_TORCH_PROFILER:
    result["plugin_loaded"] = acceltrace.torch.plugin_loaded()
    result["plugin_errors"] = acceltrace.torch.last_errors()
with open(os.path.join(OUT, "result.json"), "w") as f:
    json.dump(result, f, indent=1)
print("workload: losses ocl %s cpu %s" % (["%.6f" % v for v in ocl_losses],
                                          ["%.6f" % v for v in cpu_losses]))
