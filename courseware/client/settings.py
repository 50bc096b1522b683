"""Where the client keeps the server and the token, and how the environment overrides them.

The file is `$XDG_CONFIG_HOME/gpucourse/config.json` (`~/.config/gpucourse/config.json` by
default), readable by its owner only: it holds a key that acts as the student. The
environment wins over the file (GPUCOURSE_SERVER, GPUCOURSE_TOKEN: handy in CI or a shared
machine), and `--server` wins over both.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from courseware.client import PROGRAM
from courseware.client.errors import ClientError, ExitCode

SERVER_ENV = "GPUCOURSE_SERVER"
TOKEN_ENV = "GPUCOURSE_TOKEN"


@dataclass(frozen=True)
class Settings:
    server: str | None
    token: str | None


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / PROGRAM / "config.json"


def normalize_server(url: str) -> str:
    """`localhost:8000/` → `http://localhost:8000`: the API's paths are appended to it."""
    url = url.strip()
    if "://" not in url:
        url = "http://" + url
    return url.rstrip("/")


def read_file() -> dict[str, str]:
    path = config_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ClientError(
            f"cannot read {path} ({exc}); delete it and run `{PROGRAM} login` again"
        ) from None
    if not isinstance(data, dict):
        raise ClientError(f"{path} is not a settings file; delete it and run `{PROGRAM} login`")
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def load(server_flag: str | None = None) -> Settings:
    stored = read_file()
    server = server_flag or os.environ.get(SERVER_ENV) or stored.get("server")
    token = os.environ.get(TOKEN_ENV) or stored.get("token")
    return Settings(normalize_server(server) if server else None, token or None)


def save(*, server: str, token: str) -> Path:
    """Store the server and the token; the path written."""
    path = config_path()
    _write(path, {"server": server, "token": token})
    return path


def forget_token() -> Path | None:
    """Remove the stored token (the server stays); the path, or None when there was none."""
    stored = read_file()
    if "token" not in stored:
        return None
    path = config_path()
    del stored["token"]
    _write(path, stored)
    return path


def _write(path: Path, data: dict[str, str]) -> None:
    """Write the file readable by its owner only, and never for a moment readable by others:
    a new file is created 0600 (not chmod-ed after writing) and replaces the old one whole."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary.unlink(missing_ok=True)  # a leftover would keep its own mode through O_TRUNC
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise ClientError(f"cannot write {path}: {exc}", code=ExitCode.REFUSED) from None
