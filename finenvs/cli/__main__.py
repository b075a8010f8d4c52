"""``python -m finenvs.cli``: the ``finenvs`` command."""

import sys

from finenvs.cli import main

sys.exit(main())
