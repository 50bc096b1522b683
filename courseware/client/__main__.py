"""`python -m courseware.client ...`: the same as the `gpucourse` command."""

from courseware.client.cli import main

raise SystemExit(main())
