"""``python -m assistant ...``: the same as the ``errata`` command (e.g. ``python -m assistant run script.py``)."""

import sys

from .cli import main

sys.exit(main())
