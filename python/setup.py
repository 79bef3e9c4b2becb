"""setup.py -- for the checkout's own install of the package (`pip install
-e python/`, scripts/python-env.sh): takes the version from the project's
CMakeLists.txt (the one place it is set), and in a plain (non-editable)
install remembers which checkout the package came from, so that it finds the
library that checkout builds (<checkout>/build/lib). Other metadata is in
pyproject.toml. The self-contained wheel is built from the repository root
(pyproject.toml there, scikit-build-core)."""

import os
import re

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(HERE, "..", "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(acceltrace\s+VERSION\s+([0-9][0-9.]*)", f.read()).group(1)


class BuildPyWithOrigin(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "acceltrace", "_origin.py")
        with open(target, "w", encoding="utf-8") as f:
            f.write('"""Written at install time: the checkout this package came from."""\n')
            f.write("REPO = %r\n" % os.path.dirname(HERE))


setup(version=project_version(), cmdclass={"build_py": BuildPyWithOrigin})
