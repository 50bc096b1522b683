"""``python -m graders``: see graders.cli."""

import sys

from .cli import main

sys.exit(main())
