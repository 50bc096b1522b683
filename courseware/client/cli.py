"""The command line: `gpucourse <command> ...` (or `python -m courseware.client <command>`).

main() turns every expected failure into one message on stderr and an exit code (see
errors.ExitCode and the README); a traceback means a bug in the client.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from courseware.client import PROGRAM, commands
from courseware.client.errors import ClientError, ExitCode
from courseware.client.http_api import DEFAULT_TIMEOUT_S
from courseware.client.settings import SERVER_ENV, TOKEN_ENV, config_path

EPILOG = f"""\
settings: `{PROGRAM} login` stores the server and your token in {config_path()} (mode 0600);
{SERVER_ENV} and {TOKEN_ENV} override it, and --server overrides both.

exit codes: 0 done, 1 refused by the server (its message is shown), 2 bad command line,
3 cannot reach the server, 4 not logged in or token refused, 5 no such exercise or submission,
6 too large, 7 too many submissions waiting, 8 still not graded after --wait, 130 Ctrl-C."""

Command = Callable[[argparse.Namespace], int]


def common_options() -> argparse.ArgumentParser:
    """--server and --timeout, accepted before or after the command's name."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--server",
        default=argparse.SUPPRESS,
        help=f"the site's address, e.g. https://course.example.edu (else ${SERVER_ENV} or the "
        "stored one)",
    )
    common.add_argument(
        "--timeout",
        dest="http_timeout",
        type=float,
        default=argparse.SUPPRESS,
        metavar="SECONDS",
        help=f"give up on a request after this long (default {DEFAULT_TIMEOUT_S:g})",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    common = common_options()
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="The GPU course from your terminal: list exercises, fetch the starter, "
        "submit, follow the grading and read the report.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    sub = parser.add_subparsers(dest="command", metavar="<command>", required=True)

    def add(name: str, run: Command, summary: str) -> argparse.ArgumentParser:
        command = sub.add_parser(name, help=summary, description=summary, parents=[common])
        command.set_defaults(run=run)
        return command

    add("login", commands.login, "check an API token against the server and store it")
    add("logout", commands.logout, "forget the stored token")

    listing = add("exercises", commands.exercises, "list the exercises with your standing")
    listing.add_argument("--json", action="store_true", help="print the API's JSON")

    start = add("starter", commands.starter, "fetch an exercise's starter code")
    start.add_argument("slug", help="the exercise, e.g. vector-add")
    start.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    start.add_argument("--force", action="store_true", help="overwrite FILE if it exists")

    send = add("submit", commands.submit, "submit a file and follow the grading")
    send.add_argument("slug", help="the exercise, e.g. vector-add")
    send.add_argument("file", help="your .py file (or .ipynb for a notebook exercise)")
    send.add_argument("--no-follow", action="store_true", help="submit and return at once")
    add_wait(send)

    watch = add("follow", commands.follow_command, "follow a submission until it is graded")
    watch.add_argument("submission_id", type=int, metavar="submission-id")
    add_wait(watch)

    show = add("report", commands.report, "print a submission's report")
    show.add_argument("target", metavar="<submission-id | latest>")
    show.add_argument("slug", nargs="?", help="with `latest`: the exercise")
    show.add_argument("--json", action="store_true", help="print the API's JSON")

    browse = add("open", commands.open_report, "open a submission's report page in a browser")
    browse.add_argument("submission_id", type=int, metavar="submission-id")
    return parser


def add_wait(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--wait",
        type=float,
        metavar="SECONDS",
        help="stop following after this long (exit code 8); the grading goes on",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.server = getattr(args, "server", None)
    args.http_timeout = getattr(args, "http_timeout", DEFAULT_TIMEOUT_S)
    run: Command = args.run
    try:
        return int(run(args))
    except ClientError as error:
        print(f"{PROGRAM}: {error.message}", file=sys.stderr)
        return int(error.code)
    except KeyboardInterrupt:
        print(f"\n{PROGRAM}: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:  # `gpucourse report 3 | head`: the reader left; nothing to say
        return int(ExitCode.OK)
