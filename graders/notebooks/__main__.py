"""``python -m graders.notebooks``: see graders.notebooks.cli."""

import sys

from graders.notebooks.cli import main

sys.exit(main())
