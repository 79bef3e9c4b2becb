"""user_program.py -- what a user of an installed acceltrace runs, used by
tests/package/check_package.sh from a fresh virtual environment (wheel) or an
installation prefix, with no checkout in reach.

    user_program.py run        OpenCL work in an acceltrace.range, meant to
                               run under `acceltrace run` (OpenCL layer)
    user_program.py inprocess TRACE
                               the same inside acceltrace.profile(output=TRACE)
                               (OPENCL_LAYERS set by the caller)
    user_program.py torch TRACE
                               torch.profiler with [CPU, PrivateUse1] and the
                               acceltrace plugin, OpenCL work inside
                               record_function; exports TRACE

ACT_EXPECT_ROOT: every acceltrace file this process maps (library, plugin)
must lie under it; ACT_OCL_HELPER: the OpenCL helper library
(python/tests/ocl_helper.c). Exits non-zero with a message on any failure.
"""
import ctypes
import os
import sys

import acceltrace

ROOT = os.path.realpath(os.environ["ACT_EXPECT_ROOT"])
# A torch plugin built on import lies in the user's cache, not the installation.
_CACHE = os.environ.get("XDG_CACHE_HOME")
HOMES = [ROOT] + ([os.path.realpath(os.path.join(_CACHE, "acceltrace"))] if _CACHE else [])
N = 4096


def fail(msg):
    sys.exit("user_program: " + msg)


def check_maps():
    """Nothing of acceltrace is loaded from outside the installation."""
    with open("/proc/self/maps", encoding="utf-8") as f:
        paths = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    ours = sorted(p for p in paths if "acceltrace" in os.path.basename(p))
    if not any("libacceltrace" in os.path.basename(p) for p in ours):
        fail("libacceltrace is not mapped")
    outside = [p for p in ours
               if not any(os.path.realpath(p).startswith(h + os.sep) for h in HOMES)]
    if outside:
        fail("loaded from outside %s: %s" % (" or ".join(HOMES), outside))


def opencl_work():
    ocl = ctypes.CDLL(os.environ["ACT_OCL_HELPER"])
    ocl.ocl_error.restype = ctypes.c_char_p
    if ocl.ocl_init(ctypes.c_size_t(N)) != 0:
        fail("OpenCL set-up failed: %s" % ocl.ocl_error().decode())
    xs = (ctypes.c_float * N)(*([1.0] * N))
    ys = (ctypes.c_float * N)()
    return lambda: ocl.ocl_saxpy(ctypes.c_float(2.0), xs, ys) == 0 or fail("saxpy failed")


def main():
    mode = sys.argv[1]
    if not os.path.realpath(acceltrace.library_path()).startswith(ROOT + os.sep):
        fail("library %s is not under %s" % (acceltrace.library_path(), ROOT))
    saxpy = opencl_work()
    if mode == "run":
        with acceltrace.range("user step"):
            saxpy()
    elif mode == "inprocess":
        with acceltrace.profile(output=sys.argv[2]):
            with acceltrace.range("user step"):
                saxpy()
    elif mode == "torch":
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function

        import acceltrace.torch as at
        if not at.plugin_loaded():
            fail("torch plugin not loaded: %s" % at.plugin_error())
        # the wheel's prebuilt plugin, or one built on import into the cache
        if not any(os.path.realpath(at.plugin_path()).startswith(h + os.sep) for h in HOMES):
            fail("plugin %s is not under %s" % (at.plugin_path(), " or ".join(HOMES)))
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
            with record_function("user step"):
                torch.ones(8).sum()
                saxpy()
        prof.export_chrome_trace(sys.argv[2])
    else:
        fail("unknown mode %s" % mode)
    check_maps()
    print("user_program %s ok %s" % (mode, acceltrace.__version__))


if __name__ == "__main__":
    main()
