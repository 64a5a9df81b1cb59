"""``python -m kzoo.cli``: the ``kzoo`` command."""

import sys

from kzoo.cli import main

sys.exit(main())
