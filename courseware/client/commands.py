"""One function per command: each takes the parsed arguments and returns the exit code, or
raises a ClientError whose message cli.main prints."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
import webbrowser
from pathlib import Path
from typing import Any

from courseware.client import PROGRAM, settings, units
from courseware.client.errors import ClientError, ExitCode, Unauthorized, token_page
from courseware.client.follow import follow
from courseware.client.http_api import Api
from courseware.client.report_text import report_text


def api_for(args: argparse.Namespace) -> Api:
    found = settings.load(args.server)
    if found.server is None:
        raise ClientError(
            f"no server: run `{PROGRAM} login --server https://your-course-site`, or pass "
            f"--server, or set {settings.SERVER_ENV}",
            code=ExitCode.UNAUTHORIZED,
        )
    if found.token is None:
        raise Unauthorized(found.server)
    return Api(found.server, found.token, timeout=args.http_timeout)


# --- login / logout ------------------------------------------------------------------------------


def read_token(server: str) -> str:
    if sys.stdin.isatty():
        print(f"Paste your API token (from {token_page(server)}); it is not shown as you type.")
        token = getpass.getpass("Token: ")
    else:
        token = sys.stdin.readline()  # `gpucourse login < token.txt`, or piped from a vault
    return token.strip()


def login(args: argparse.Namespace) -> int:
    stored = settings.load(args.server)
    if stored.server is None:
        raise ClientError(
            f"give the site's address: {PROGRAM} login --server https://your-course-site",
            code=ExitCode.USAGE,
        )
    server = stored.server
    token = read_token(server)
    if not token:
        raise ClientError(
            f"no token given: copy it from {token_page(server)}", code=ExitCode.UNAUTHORIZED
        )
    # A route that needs the token: a wrong one is refused here, not at the first submit.
    exercises = Api(server, token, timeout=args.http_timeout).exercises()
    path = settings.save(server=server, token=token)
    print(f"Logged in to {server}: the token works ({len(exercises)} exercises).")
    print(f"Saved in {path} (readable by you only).")
    return ExitCode.OK


def logout(args: argparse.Namespace) -> int:
    path = settings.forget_token()
    print(f"Forgot the token in {path}." if path else "No token was stored.")
    return ExitCode.OK


# --- exercises / starter -----------------------------------------------------------------------


def attempts_text(value: object) -> str:
    return "no limit" if value is None else str(value)


def due_text(exercise: dict[str, Any]) -> str:
    due = units.local_time(exercise.get("due_at"))
    closes = exercise.get("closes_at")
    if closes and closes != exercise.get("due_at"):
        due += f" (late until {units.local_time(closes)})"
    return due


def exercises(args: argparse.Namespace) -> int:
    found = api_for(args).exercises()
    if args.json:
        print(json.dumps(found, indent=2, ensure_ascii=False))
        return ExitCode.OK
    if not found:
        print("No exercises are published yet.")
        return ExitCode.OK
    rows = []
    for exercise in found:
        best = exercise.get("best_score")
        rows.append(
            [
                str(exercise.get("slug", "")),
                str(exercise.get("title", "")),
                due_text(exercise),
                attempts_text(exercise.get("attempts_left")),
                units.NONE
                if best is None
                else f"{units.points(best)} / {units.points(exercise.get('max_score'))}",
            ]
        )
    header = ["Exercise", "Title", "Due (your time)", "Attempts left", "Best score"]
    print(units.table(header, rows, right={3, 4}))
    return ExitCode.OK


def starter(args: argparse.Namespace) -> int:
    found = api_for(args).starter(args.slug)
    text = str(found.get("starter") or "")
    if args.output is None:
        sys.stdout.write(text)
        return ExitCode.OK
    target = Path(args.output)
    if target.is_dir():
        target = target / str(found.get("filename") or f"{args.slug}.py")
    if target.exists() and not args.force:
        raise ClientError(
            f"{target} exists; not overwriting your work. Choose another -o, or add --force."
        )
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ClientError(f"cannot write {target}: {exc}") from None
    print(f"Wrote the starter of {args.slug} to {target}.")
    return ExitCode.OK


# --- submit / follow / report / open -------------------------------------------------------------


def read_source(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ClientError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise ClientError(f"{path} is not UTF-8 text; save it as UTF-8 and submit again") from None
    except OSError as exc:
        raise ClientError(f"cannot read {path}: {exc}") from None


def submit(args: argparse.Namespace) -> int:
    api = api_for(args)
    source = read_source(Path(args.file))
    exercise = api.exercise(args.slug)  # a wrong slug is a 404 here, before anything is sent
    field = "notebook" if exercise.get("kind") == "notebook" else "code"
    created = api.submit({"exercise": args.slug, field: source})
    submission_id = int(created["id"])
    print(f"Submitted {args.file} to {args.slug}: submission {submission_id}.", flush=True)
    if args.no_follow:
        print(
            f"Follow it with `{PROGRAM} follow {submission_id}`; report page: {created.get('url')}"
        )
        return ExitCode.OK
    return follow_and_report(api, submission_id, args)


def follow_and_report(api: Api, submission_id: int, args: argparse.Namespace) -> int:
    try:
        data = follow(lambda: api.submission(submission_id), wait_s=args.wait)
    except ClientError as exc:
        if exc.code == ExitCode.STILL_WAITING:
            exc.message += f"; it goes on without you: `{PROGRAM} follow {submission_id}` later"
        raise
    except KeyboardInterrupt:
        print(
            f"\nStopped following; submission {submission_id} is still being graded. "
            f"See it with `{PROGRAM} follow {submission_id}`.",
            file=sys.stderr,
        )
        return ExitCode.INTERRUPTED
    print()
    print(report_text(data))
    return ExitCode.OK


def follow_command(args: argparse.Namespace) -> int:
    api = api_for(args)
    api.submission(args.submission_id)  # a 404 here says so before anything is drawn
    return follow_and_report(api, args.submission_id, args)


def latest_id(api: Api, slug: str) -> int:
    api.exercise(slug)  # 404 for a wrong slug, rather than "no submissions"
    mine = api.submissions(exercise=slug)
    if not mine:
        raise ClientError(f"you have no submissions of {slug} yet", code=ExitCode.NOT_FOUND)
    return int(max(mine, key=lambda s: int(s["id"]))["id"])


def submission_id_from(args: argparse.Namespace, api: Api) -> int:
    if args.target == "latest":
        if not args.slug:
            raise ClientError(
                f"name the exercise: {PROGRAM} report latest <slug>", code=ExitCode.USAGE
            )
        return latest_id(api, args.slug)
    if not args.target.isdigit():
        raise ClientError(
            f"'{args.target}' is not a submission number; use {PROGRAM} report <id> or "
            f"{PROGRAM} report latest <slug>",
            code=ExitCode.USAGE,
        )
    return int(args.target)


def report(args: argparse.Namespace) -> int:
    api = api_for(args)
    data = api.submission(submission_id_from(args, api))
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return ExitCode.OK
    print(report_text(data))
    if data.get("status") in ("queued", "running"):
        print(f"\nNot graded yet: `{PROGRAM} follow {data.get('id')}` waits for it.")
    return ExitCode.OK


def open_report(args: argparse.Namespace) -> int:
    api = api_for(args)
    data = api.submission(args.submission_id)  # 404 here, not a browser on an error page
    url = str(data.get("url") or f"{api.server}/submissions/{args.submission_id}/")
    print(f"Report page: {url}")
    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        print("No browser could be started here; open the address above yourself.")
    return ExitCode.OK
