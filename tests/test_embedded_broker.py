"""The embedded default's broker (kombu's filesystem transport, `make run`)."""

from __future__ import annotations

from pathlib import Path

from kombu import Connection

from config.settings.base import filesystem_broker


def test_the_embedded_broker_looks_for_messages_often(tmp_path: Path) -> None:
    """Issue 26: at kombu's default (once a second) a submission waited up to 1 s before a
    worker saw it; the site's own option must reach the transport kombu builds."""
    url, options = filesystem_broker(tmp_path)
    interval = options["polling_interval"]
    assert isinstance(interval, float) and interval <= 0.1
    with Connection(url, transport_options=options) as connection:
        assert getattr(connection.transport, "polling_interval", None) == interval
