"""kbench's scripts as one Python package, run by one interpreter.

scripts/lib/python runs Python in kbench's venv with this package's parent on PYTHONPATH;
the commands in scripts/ are two-line bash entry points onto `python -m kbench NAME`, which
runs the module kbench.commands.NAME. No module edits sys.path.
"""

import os

SCRIPTS = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
"""The scripts/ folder: the commands beside this package."""
ROOT = os.path.dirname(SCRIPTS)
"""The kbench checkout this package belongs to."""
