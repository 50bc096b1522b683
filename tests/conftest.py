"""Shared people and content for the courseware tests.

Like healthchecks' test base: named people built once per test, and every permission test uses
them. `alice` is the student, `bob` another student, `tara` the TA and `ines` the instructor.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.utils import translation

from courseware.accounts.services import token_issue
from courseware.authoring.services import (
    LoadedContent,
    content_load_all,
    content_write,
    course_get_default,
)
from courseware.courses.models import Enrolment, Item, Offering, Role


@dataclass
class Cast:
    offering: Offering
    item: Item
    alice: User
    bob: User
    tara: User
    ines: User
    stranger: User

    def token_client(self, user: User) -> Client:
        return Client(HTTP_AUTHORIZATION=f"Token {token_issue(user=user).key}")


def pytest_configure(config: pytest.Config) -> None:
    """Give the run a grader cache of its own: peaks, slot locks and validation results.

    The user's cache holds whatever `python -m graders validate --perf` last measured on this
    machine, and sync_content rightly hides an exercise whose ladder failed there: one
    developer's run once took attention off the dashboard tests' course. Nothing is copied
    over: peaks are measured again on first use (seconds), as on a fresh machine. A caller who
    sets GRADERS_CACHE_DIR keeps it; child processes (workers, sandboxes) inherit this one.
    """
    if os.environ.get("GRADERS_CACHE_DIR"):
        return
    own = tempfile.mkdtemp(prefix="gpucourse-tests-cache-")
    os.environ["GRADERS_CACHE_DIR"] = own

    def remove() -> None:
        os.environ.pop("GRADERS_CACHE_DIR", None)
        shutil.rmtree(own, ignore_errors=True)

    config.add_cleanup(remove)


@functools.cache
def _content() -> LoadedContent:
    # Parsing the content (nbgrader builds the notebooks' release versions) takes a second;
    # the files do not change during a test run, so parse once and write per test.
    return content_load_all()


def make_cast() -> Cast:
    content_write(_content())
    offering = Offering.objects.create(
        course=course_get_default(), slug="2026-fall", title="Fall 2026"
    )
    users: dict[str, User] = {}
    for name, role in (
        ("alice", Role.STUDENT),
        ("bob", Role.STUDENT),
        ("tara", Role.TA),
        ("ines", Role.INSTRUCTOR),
        ("stranger", None),
    ):
        users[name] = User.objects.create_user(username=name, password="pw-" + name)
        if role is not None:
            Enrolment.objects.create(user=users[name], offering=offering, role=role)
    return Cast(offering=offering, item=Item.objects.get(slug="vector-add"), **users)


@pytest.fixture
def cast(db: None) -> Cast:
    return make_cast()


@pytest.fixture(autouse=True)
def default_language() -> Iterator[None]:
    """A request through the test client leaves its language active in this thread
    (LocaleMiddleware activates it and nothing deactivates it), so a test after a Chinese page
    would read Chinese messages; every test starts in the site's default language."""
    translation.activate(settings.LANGUAGE_CODE)
    yield
    translation.deactivate()
