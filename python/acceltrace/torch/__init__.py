"""acceltrace.torch -- acceltrace inside torch.profiler.

Importing it:

1. patches ``torch.profiler`` so that metadata can never make an exported
   trace unparseable (``_sanitizer``: torch_npu's exact semantics);
2. loads the torch.profiler plugin (plugins/torch, ``libacceltrace_torch.so``)
   when it was built for this torch, so that
   ``torch.profiler.profile(activities=[CPU, PrivateUse1])`` puts the
   device activity acceltrace records (OpenCL, CUDA, Ascend) into the trace,
   linked to the ops that launched it (``_plugin``); the PrivateUse1 slot is
   named "acceltrace" only when a profiler is made and no backend (torch_npu,
   pytorch_ocl) has named it: importing never takes a backend's slot;
3. gives each rank's trace its ``distributedInfo`` from the launcher's
   variables when torch.distributed is not initialised (``_distributed``).

The sanitiser works without the plugin; ``plugin_loaded()`` says whether the
plugin is active and ``plugin_error()`` why not.
"""

from ._sanitizer import (  # noqa: F401
    apply_metadata_sanitizer_patch, sanitize_json_value, sanitize_value,
    warning_text)
from ._distributed import apply_distributed_info_patch
from . import _plugin
from ._plugin import (  # noqa: F401
    counters, last_errors, load_plugin, plugin_error, plugin_loaded, plugin_path)

PRIVATEUSE1_NAME = "acceltrace"


def _name_privateuse1_backend():
    """torch.profiler uses a PrivateUse1 profiler plugin only when the
    PrivateUse1 backend has a name. Name it "acceltrace" unless a real
    backend (torch_npu's "npu", pytorch_ocl's "ocl", ...) already did."""
    import torch
    if torch._C._get_privateuse1_backend_name() == "privateuseone":
        torch.utils.rename_privateuse1_backend(PRIVATEUSE1_NAME)
        # A named backend needs hooks, or torch._C._get_accelerator() (and
        # dist.barrier()) raises: the plugin's say "no device here".
        _plugin.register_hooks()
    return torch._C._get_privateuse1_backend_name()


def _name_when_profiling():
    """The slot is a backend's to take, and torch lets it be named once: a
    backend imported after this module (pytorch_ocl) could not name its
    device if the import had. So it is named only when a profiler is made
    (torch.profiler's and the autograd one read the name in __init__), and
    only if no backend has named it by then."""
    import functools
    import torch.autograd.profiler as autograd_profiler
    import torch.profiler.profiler as profiler

    def wrap(cls):
        init = cls.__init__
        if getattr(init, "_acceltrace_names_privateuse1", False):
            return

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            if _plugin.plugin_loaded():
                _name_privateuse1_backend()
            init(self, *args, **kwargs)

        __init__._acceltrace_names_privateuse1 = True
        cls.__init__ = __init__

    for cls in (getattr(profiler, "_KinetoProfile", None),
                getattr(autograd_profiler, "profile", None)):
        if cls is not None:
            wrap(cls)


apply_metadata_sanitizer_patch()
apply_distributed_info_patch()
if load_plugin():
    _name_when_profiling()
