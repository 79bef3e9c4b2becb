"""acceltrace.torch -- acceltrace inside torch.profiler.

Importing it:

1. patches ``torch.profiler`` so that metadata can never make an exported
   trace unparseable (``_sanitizer``: torch_npu's exact semantics);
2. loads the torch.profiler plugin (plugins/torch, ``libacceltrace_torch.so``)
   when it was built for this torch, so that
   ``torch.profiler.profile(activities=[CPU, PrivateUse1])`` puts the
   device activity acceltrace records (OpenCL, CUDA, Ascend) into the trace,
   linked to the ops that launched it (``_plugin``).

The sanitiser works without the plugin; ``plugin_loaded()`` says whether the
plugin is active and ``plugin_error()`` why not.
"""

from ._sanitizer import (  # noqa: F401
    apply_metadata_sanitizer_patch, sanitize_json_value, sanitize_value,
    warning_text)
from ._plugin import load_plugin, plugin_error, plugin_loaded, plugin_path  # noqa: F401

apply_metadata_sanitizer_patch()
load_plugin()
