"""Prepare a fault test's private database: `python -m tests.faults.seed` with DATABASE_URL set.

Migrates, loads the code exercises of exercises/ and enrols the tests' usual people (alice and
bob, students; tara, TA), then prints their API tokens as JSON on the last line. It runs as its
own process because the test process's Django is bound to the suite's database, not to the
private one. Notebooks and quizzes are left out: the fault tests submit code only, and building
the notebooks' release versions would cost seconds per private database.
"""

from __future__ import annotations

import json
import os

import django


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from courseware.accounts.services import token_issue
    from courseware.authoring.services import LoadedContent, content_write, course_get_default
    from courseware.courses.models import Enrolment, Offering, Role
    from graders import iter_exercises

    call_command("migrate", verbosity=0, interactive=False)
    exercises = iter_exercises(settings.GRADERS_EXERCISES_ROOT)
    content_write(
        LoadedContent(
            root=settings.GRADERS_EXERCISES_ROOT,
            exercises=exercises,
            notebooks=[],
            quizzes=[],
            positions={},  # the chapter's order names the notebooks and quizzes left out
        )
    )
    offering = Offering.objects.create(
        course=course_get_default(), slug="2026-fall", title="Fall 2026"
    )
    tokens = {}
    for name, role in (("alice", Role.STUDENT), ("bob", Role.STUDENT), ("tara", Role.TA)):
        user = User.objects.create_user(username=name, password="pw-" + name)
        Enrolment.objects.create(user=user, offering=offering, role=role)
        tokens[name] = token_issue(user=user).key
    print(json.dumps(tokens))


if __name__ == "__main__":
    main()
