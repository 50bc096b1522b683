"""People for the load benchmark, in the stack's own database (run inside its environment).

.venv/bin/python -m bench.load_seed --students 50 --warmup 1 --out people.json

The demo offering from `manage.py seed_demo`, the students enrolled in it through the
instructor's roster import (the same service as /instructor/'s CSV upload), each with an API
token (`token_issue`, as `manage.py issue_token` makes them) and a logged-in browser session
(Django's test Client.force_login: the load is what is measured, not password hashing). Writes
[{"username", "token", "cookie": [name, value], "warmup": bool}] as JSON.
"""

from __future__ import annotations

import argparse
import io
import json
import os
from pathlib import Path

import django


def seed(students: int, warmup: int) -> list[dict[str, object]]:
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.test import Client

    from courseware.accounts.services import token_issue
    from courseware.courses.models import Offering
    from courseware.instructor.roster import roster_import

    call_command("seed_demo", stdout=io.StringIO())
    offering = Offering.objects.get(slug="demo")
    names = [(f"load-{i:04d}", False) for i in range(students)]
    names += [(f"warmup-{i:02d}", True) for i in range(warmup)]
    csv = "username,email,first_name,last_name\n" + "".join(
        f"{name},{name}@bench.example.edu,Load,{name}\n" for name, _ in names
    )
    report = roster_import(offering=offering, text=csv)
    if report.failed:
        raise SystemExit("roster import failed: " + "; ".join(r.message for r in report.failed))
    people: list[dict[str, object]] = []
    for name, is_warmup in names:
        user = User.objects.get(username=name)
        client = Client()
        client.force_login(user)
        cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
        people.append(
            {
                "username": name,
                "token": token_issue(user=user).key,
                "cookie": [settings.SESSION_COOKIE_NAME, cookie],
                "warmup": is_warmup,
            }
        )
    return people


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=1, help="extra users for the warm-up")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    django.setup()
    args.out.write_text(json.dumps(seed(args.students, args.warmup)))


if __name__ == "__main__":
    main()
