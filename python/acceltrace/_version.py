"""_version -- the package's version, which is the project's one version
(``project(acceltrace VERSION ...)`` in CMakeLists.txt).

Installed (a wheel or ``cmake --install``), CMake wrote it into
``_build_info``. Used from a checkout (``pip install -e python/``, or a plain
install that recorded its checkout in ``_origin``), it is read from that
checkout's CMakeLists.txt, so there is no second copy to keep in step.
"""

import os
import re

from . import _lib


def _from_checkout(repo):
    try:
        with open(os.path.join(repo, "CMakeLists.txt"), encoding="utf-8") as f:
            m = re.search(r"project\(acceltrace\s+VERSION\s+([0-9][0-9.]*)", f.read())
    except OSError:
        return None
    return m.group(1) if m else None


def _version():
    if _lib.BUILD_INFO is not None:
        return _lib.BUILD_INFO.VERSION
    return _from_checkout(_lib._REPO) or "0+unknown"


__version__ = _version()
