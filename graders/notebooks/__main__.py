"""``python -m graders.notebooks``: see graders.notebooks.cli."""

import sys

from .cli import main

sys.exit(main())
