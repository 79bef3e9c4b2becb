"""``python -m acceltrace.recipe NAME INPUT...``: the recipe command (cli)."""
import sys

from .cli import main

sys.exit(main())
