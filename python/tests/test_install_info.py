"""The package's version and `python -m acceltrace` in a checkout (the
installed wheel and prefix are tested by tests/package): one version, the
project's, everywhere; `python -m acceltrace` is the native command, with its
exit status."""

import os
import re
import subprocess
import sys

import acceltrace
from acceltrace import _lib

from conftest import REPO, library_or_skip


def cmake_version():
    with open(os.path.join(REPO, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(acceltrace\s+VERSION\s+([0-9.]+)", f.read()).group(1)


def test_version_is_the_projects():
    assert acceltrace.__version__ == cmake_version() == acceltrace.version()


def test_library_reports_the_same_version():
    library_or_skip()
    assert acceltrace.library_version() == acceltrace.__version__


def test_checkout_package_has_no_build_info():
    # _build_info.py is written only by an install; a checkout uses build/.
    assert _lib.BUILD_INFO is None
    assert _lib.installed_path("lib", "libacceltrace.so") is None


def native_or_skip():
    from acceltrace import __main__ as m
    if m.native_command() is None:
        import pytest
        if os.environ.get("CI"):
            pytest.fail("no build/bin/acceltrace in this checkout (CI is set)")
        pytest.skip("no build/bin/acceltrace in this checkout")


def test_python_m_acceltrace_is_the_command():
    native_or_skip()
    r = subprocess.run([sys.executable, "-m", "acceltrace", "version"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "acceltrace %s\n" % cmake_version()


def test_python_m_acceltrace_keeps_the_exit_status(tmp_path):
    native_or_skip()
    r = subprocess.run([sys.executable, "-m", "acceltrace", "run", "--no-summary", "-o",
                        str(tmp_path / "t.json"), "--", "sh", "-c", "exit 3"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, r.stderr
