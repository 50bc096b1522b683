"""``python -m graders``: see graders.cli."""

import sys

from graders.cli import main

sys.exit(main())
