"""acceltrace.torch -- acceltrace inside torch.profiler.

Importing it:

1. patches ``torch.profiler`` so that metadata can never make an exported
   trace unparseable (``_sanitizer``: torch_npu's exact semantics);
2. loads the torch.profiler plugin (plugins/torch, ``libacceltrace_torch.so``)
   when it was built for this torch, so that
   ``torch.profiler.profile(activities=[CPU, PrivateUse1])`` puts the
   device activity acceltrace records (OpenCL, CUDA, Ascend) into the trace,
   linked to the ops that launched it (``_plugin``);
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
    backend (torch_npu's "npu", ...) already did."""
    import torch
    if torch._C._get_privateuse1_backend_name() == "privateuseone":
        torch.utils.rename_privateuse1_backend(PRIVATEUSE1_NAME)
        # A named backend needs hooks, or torch._C._get_accelerator() (and
        # dist.barrier()) raises: the plugin's say "no device here".
        _plugin.register_hooks()
    return torch._C._get_privateuse1_backend_name()


apply_metadata_sanitizer_patch()
apply_distributed_info_patch()
if load_plugin():
    _name_privateuse1_backend()
