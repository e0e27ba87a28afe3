"""``python -m assistant ...`` is the ``errata`` command."""

import sys

from .frontends.cli import main

sys.exit(main())
