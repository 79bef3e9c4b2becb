"""setup.py -- only to remember, in a plain (non-editable) install, which
checkout the package was installed from, so that it finds the library that
checkout builds (<checkout>/build/lib). Metadata is in pyproject.toml."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildPyWithOrigin(build_py):
    def run(self):
        super().run()
        target = os.path.join(self.build_lib, "acceltrace", "_origin.py")
        with open(target, "w", encoding="utf-8") as f:
            f.write('"""Written at install time: the checkout this package came from."""\n')
            f.write("REPO = %r\n" % os.path.dirname(HERE))


setup(cmdclass={"build_py": BuildPyWithOrigin})
