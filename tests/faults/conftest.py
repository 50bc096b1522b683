"""The single-machine fault tests share one private site (tests/faults/single_host.py):
starting it costs seconds, and its worker is the expensive part.

The site's servers are our own (other ports, a temporary folder): the tests kill, empty and cut
them, and never touch the machine's own PostgreSQL or Redis.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faults import servers
from tests.faults.single_host import Site, running_site


@pytest.fixture(scope="session")
def site() -> Iterator[Site]:
    reason = servers.why_servers_are_missing()
    if reason:
        pytest.skip(reason)
    with running_site() as started:
        yield started
