"""The site's JSON API over HTTP, with the standard library's urllib.

Each call returns the decoded JSON object or raises a ClientError whose message says what to
do: the server down, a refused token, a 404, a 413, a 429, all with the server's own words.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote, urlencode

from courseware.client import PROGRAM
from courseware.client.errors import ClientError, Unauthorized, Unreachable, for_status

# Long enough for a slow page of a busy server, short enough that a dead one is named soon.
DEFAULT_TIMEOUT_S = 30.0


def accept_language(environ: dict[str, str] | None = None) -> str | None:
    """The terminal's language as an Accept-Language value ("zh_CN.UTF-8" → "zh-CN"), so the
    server's messages come in it; None for C/POSIX or nothing set (the server's default)."""
    env = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            tag = value.split(".")[0].split("@")[0]
            if tag in ("C", "POSIX") or not tag:
                return None
            return tag.replace("_", "-")
    return None


class Api:
    def __init__(self, server: str, token: str | None, *, timeout: float = DEFAULT_TIMEOUT_S):
        self.server = server
        self.token = token
        self.timeout = timeout
        self.language = accept_language()

    # --- the routes the client uses -----------------------------------------------------------

    def exercises(self) -> list[dict[str, Any]]:
        return list(self.get("/api/v1/exercises").get("exercises") or [])

    def exercise(self, slug: str) -> dict[str, Any]:
        return self.get(f"/api/v1/exercises/{quote(slug, safe='')}")

    def starter(self, slug: str) -> dict[str, Any]:
        return self.get(f"/api/v1/exercises/{quote(slug, safe='')}/starter")

    def submit(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.request("POST", "/api/v1/submissions", body)

    def submission(self, submission_id: int) -> dict[str, Any]:
        return self.get(f"/api/v1/submissions/{submission_id}")

    def submissions(self, *, exercise: str | None = None) -> list[dict[str, Any]]:
        query = f"?{urlencode({'exercise': exercise})}" if exercise else ""
        return list(self.get(f"/api/v1/submissions{query}").get("submissions") or [])

    # --- plumbing -------------------------------------------------------------------------------

    def get(self, path: str) -> dict[str, Any]:
        return self.request("GET", path)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        if not self.token:
            raise Unauthorized(self.server)
        headers = {
            "Accept": "application/json",
            "Authorization": f"Token {self.token}",
            "User-Agent": f"{PROGRAM} (python urllib)",
        }
        if self.language:
            headers["Accept-Language"] = self.language
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(
            self.server + path, data=data, method=method, headers=headers
        )
        status, raw = self._send(request)
        payload = self._decode(raw, status)
        if status >= 400:
            said = payload.get("error") if isinstance(payload, dict) else None
            raise for_status(status, str(said or ""), self.server)
        if not isinstance(payload, dict):
            raise self._not_the_api(status)
        return payload

    def _send(self, request: urllib.request.Request) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return int(response.status), response.read()
        except urllib.error.HTTPError as refused:
            with refused:
                return int(refused.code), refused.read()
        except urllib.error.URLError as exc:
            raise Unreachable(self.server, _reason(exc.reason)) from None
        except TimeoutError as exc:  # a read that timed out after connecting
            raise Unreachable(self.server, _reason(exc)) from None
        except (ConnectionError, http.client.HTTPException, ssl.SSLError, OSError) as exc:
            raise Unreachable(self.server, _reason(exc)) from None

    def _decode(self, raw: bytes, status: int) -> Any:
        try:
            return json.loads(raw.decode("utf-8")) if raw else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            if status >= 400:
                return {}  # an HTML error page (a proxy, a 500): the status alone speaks
            raise self._not_the_api(status) from None

    def _not_the_api(self, status: int) -> ClientError:
        return ClientError(
            f"{self.server} answered HTTP {status} with something that is not the course's "
            "API: check --server (it is the site's address, e.g. https://course.example.edu)"
        )


def _reason(reason: object) -> str:
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, socket.gaierror):
        return "unknown host"
    return str(reason) or type(reason).__name__
