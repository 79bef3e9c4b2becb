"""acceltrace.__main__ -- ``python -m acceltrace ...`` and the ``acceltrace``
command a wheel puts on the environment's PATH: both run the native
``acceltrace`` command (tools/) that was installed with this package, with
the same arguments, in place of this process (so exit status and signals are
the command's own).

The native command is looked for as the library is: installed with the
package (``_build_info``), then the build tree of the checkout this package
comes from (``<repo>/build/bin/acceltrace``). PATH is never searched: in a
wheel, ``acceltrace`` on PATH is this very entry point.

``recipe`` is the one command that is Python (acceltrace.recipe): it runs
here, in this interpreter, without the native command.
"""

import os
import sys

from . import _lib


def native_command():
    """Path of the native acceltrace command, or None."""
    for p in (_lib.installed_path("bin", "acceltrace"),
              os.path.join(_lib._REPO, "build", "bin", "acceltrace")):
        if p and os.access(p, os.X_OK) and os.path.isfile(p):
            return p
    return None


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["recipe"]:
        from .recipe.cli import main as recipe
        return recipe(args[1:])
    cmd = native_command()
    if cmd is None:
        sys.stderr.write(
            "acceltrace: the native acceltrace command is not installed with this package "
            "(%s) and no checkout build has one; install the wheel (pip install acceltrace) "
            "or build the checkout (cmake -S . -B build && cmake --build build)\n"
            % os.path.dirname(os.path.abspath(__file__)))
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cmd, [cmd] + args)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
