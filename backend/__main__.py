"""``python -m rewinddb``: the same as the ``rewinddb`` command."""

import sys

from .cli import main

sys.exit(main())
