"""The HTTP session the tool calls LMSes with: with a timeout (requests has none by default,
and pylti1p3 sets none), and remembering the last response so a send can record its status."""

from __future__ import annotations

from typing import Any

import requests
from pylti1p3.service_connector import REQUESTS_USER_AGENT

TIMEOUT_S = (5, 15)  # connect, read


class LmsSession(requests.Session):
    def __init__(self) -> None:
        super().__init__()
        self.headers["User-Agent"] = f"gpu-courseware {REQUESTS_USER_AGENT}"
        self.last_status: int | None = None
        self.hooks["response"].append(self._remember)

    def _remember(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        self.last_status = response.status_code

    def request(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", TIMEOUT_S)
        return super().request(*args, **kwargs)
