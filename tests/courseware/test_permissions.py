"""Every route of the site, tried by everyone who must not get in.

The routes are read from the URL resolver itself, so a new one cannot be forgotten: a route
missing from ROUTES fails `test_every_route_is_classified` with the line to add. Each route has
an access level saying who may open it; the matrix test then opens it, with URL arguments from
real objects (alice's submission, the offering, the item slugs), as

* anonymous: must be sent to the login page (pages) or answered 401 (API);
* a stranger (signed in, enrolled in nothing), bob (another student, on alice's work), a TA of
  another course and a TA of another offering of the same course, and for staff pages alice
  and the TA too: must be refused with 401, 403, 404 or a redirect to the login page. A
  refused request changes nothing in the database.

Where a level lets someone in, the test checks they do get in (so the refusals above are not
just a wrong URL), and where a page is open to everyone signed in, that it shows them none of
alice's data (her code, her name, her email).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from urllib.parse import urlsplit

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.http import HttpResponseBase
from django.shortcuts import resolve_url
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from courseware.courses.models import Course, Enrolment, Extension, Item, Offering, Role
from courseware.quizzes.content import quiz_spec_for
from courseware.quizzes.models import Attempt, Question
from courseware.similarity.models import SimilarityRun, SimilarPair
from courseware.submissions.models import (
    Grading,
    RegradeBatch,
    RegradeScope,
    Status,
    Submission,
    SubmissionKind,
)
from tests.conftest import Cast

THIS_FILE = "tests/courseware/test_permissions.py"

# alice's data: no page that is not hers (or her staff's) may show any of these.
ALICE_CODE = "SECRET-ALICE-CODE-7f3a"
ALICE_NAME = "Alicemarker"
ALICE_EMAIL = "alice.marker.91@example.edu"
OFFERING_TITLE = "Term-Marker-2c8d"  # what a TA of another offering must not see listed


class Access(enum.Enum):
    """Who may open a route. (Refused: everybody not listed.)"""

    PUBLIC = "anyone, signed in or not (login, language, password links)"
    SIGNED_IN = "anyone signed in; shows them their own things only"
    OWNER = "the student whose work it is, and the staff of its offering"
    STAFF = "the TAs and instructors of the offering in the URL (or the work's offering)"
    INSTRUCTOR = "the instructors of the offering in the URL (its TAs get 403)"
    ANY_STAFF = "anyone on the staff of some offering; shows them their own offerings only"
    ANY_INSTRUCTOR = "anyone who is an instructor of some offering"
    ADMIN = "Django's admin: site staff (instructors get in through their group)"


@dataclass(frozen=True)
class Rule:
    access: Access
    method: str = "GET"
    # URL argument → the World attribute holding its value, where the default (by the
    # argument's name, in ARGUMENTS) is not the right object.
    kwargs: dict[str, str] = field(default_factory=dict)


QUIZ = {"slug": "quiz_slug"}
NOTEBOOK = {"submission_id": "alice_notebook_id"}

# Every route of the site, by name (namespace:name inside a namespace). Keep in URL order.
ROUTES: dict[str, Rule] = {
    "home": Rule(Access.SIGNED_IN),
    "exercise-detail": Rule(Access.SIGNED_IN),
    "notebook-release": Rule(Access.SIGNED_IN, kwargs={"slug": "notebook_slug"}),
    "submission-detail": Rule(Access.OWNER),
    "submission-diff": Rule(Access.OWNER),
    "review-queue": Rule(Access.ANY_STAFF),
    # TAs' similarity reports (courseware/similarity): a run and its pairs are its offering's.
    "similarity-index": Rule(Access.ANY_STAFF),
    "similarity-run": Rule(Access.STAFF),
    "similarity-progress": Rule(Access.STAFF),
    "similarity-pair": Rule(Access.STAFF),
    "regrade-start": Rule(Access.ANY_STAFF),
    "regrade-batch": Rule(Access.STAFF),
    "regrade-progress": Rule(Access.STAFF),
    "submission-notebook": Rule(Access.OWNER, kwargs=NOTEBOOK),
    "submission-hand-grades": Rule(Access.STAFF, method="POST", kwargs=NOTEBOOK),
    "gradebook-index": Rule(Access.ANY_STAFF),
    "gradebook-detail": Rule(Access.STAFF),
    "gradebook-export": Rule(Access.STAFF),
    "submission-manual-grade": Rule(Access.STAFF, method="POST", kwargs=NOTEBOOK),
    "submission-override": Rule(Access.STAFF, method="POST"),
    "submission-regrade": Rule(Access.STAFF, method="POST"),
    "quiz-list": Rule(Access.SIGNED_IN),
    "quiz-detail": Rule(Access.SIGNED_IN, kwargs=QUIZ),
    "quiz-question": Rule(Access.SIGNED_IN, kwargs=QUIZ),
    # A short answer's page shows the signed-in student their own answer; its grading page is
    # for the staff of the course's offerings, each seeing their own offerings' answers only
    # (courseware/quizzes/short_answer_views.py).
    "quiz-short-answer": Rule(Access.SIGNED_IN, kwargs={**QUIZ, "key": "short_key"}),
    "quiz-short-answer-review": Rule(Access.ANY_STAFF, kwargs={**QUIZ, "key": "short_key"}),
    "roofline": Rule(Access.SIGNED_IN),
    "fleet": Rule(Access.ANY_INSTRUCTOR),  # every offering's workers and queues
    "instructor-index": Rule(Access.ANY_STAFF),
    "instructor-content": Rule(Access.ANY_INSTRUCTOR),
    "instructor-offering": Rule(Access.STAFF),
    "instructor-preview": Rule(Access.STAFF),
    "instructor-statistics": Rule(Access.STAFF),
    "instructor-extensions": Rule(Access.INSTRUCTOR),
    "instructor-extension-revoke": Rule(Access.INSTRUCTOR, method="POST"),
    "instructor-roster": Rule(Access.INSTRUCTOR),
    "instructor-set-password": Rule(Access.PUBLIC),
    # LTI: the LMS's login, launch and the tool's JWKS are open by nature (the signed launch is
    # the credential); link-account needs a launch waiting in the session.
    "lti-login": Rule(Access.PUBLIC),
    "lti-launch": Rule(Access.PUBLIC, method="POST"),
    "lti-jwks": Rule(Access.PUBLIC),
    "lti-link-account": Rule(Access.PUBLIC),
    "lti-deep-link": Rule(Access.SIGNED_IN),  # one's own deep linking request only
    "lti-platforms": Rule(Access.ANY_INSTRUCTOR),
    "lti-offering": Rule(Access.STAFF),
    "lti-offering-link": Rule(Access.INSTRUCTOR, method="POST"),
    "lti-resource-link": Rule(Access.INSTRUCTOR, method="POST"),
    "lti-roster-sync": Rule(Access.INSTRUCTOR, method="POST"),
    "lti-send-again": Rule(Access.STAFF, method="POST"),
    "login": Rule(Access.PUBLIC),
    "logout": Rule(Access.PUBLIC),  # GET is refused (405); a POST only ends one's own session
    "api-token": Rule(Access.SIGNED_IN),  # one's own token; a GET never makes one
    "set_language": Rule(Access.PUBLIC),
    "api-submissions": Rule(Access.SIGNED_IN),
    "api-submission-detail": Rule(Access.OWNER),
    "api-submission-notebook": Rule(Access.OWNER, kwargs=NOTEBOOK),
    "api-exercises": Rule(Access.SIGNED_IN),
    "api-exercise-detail": Rule(Access.SIGNED_IN),
    "api-exercise-starter": Rule(Access.SIGNED_IN),
    "api-quizzes": Rule(Access.SIGNED_IN),
    "api-quiz-detail": Rule(Access.SIGNED_IN, kwargs=QUIZ),
    # The scores of the caller's own offering of the quiz's course (the URL names none).
    "api-quiz-scores": Rule(Access.ANY_STAFF, kwargs=QUIZ),
    "api-quiz-question": Rule(Access.SIGNED_IN, kwargs=QUIZ),
    "api-quiz-attempts": Rule(Access.SIGNED_IN, method="POST", kwargs=QUIZ),
    # Django's admin, all of it: its own login and logout are open, every other page is
    # behind admin_view (the exceptions are listed above the namespace's default).
    "admin:login": Rule(Access.PUBLIC),
    "admin:logout": Rule(Access.PUBLIC),
}
NAMESPACE_DEFAULTS: dict[str, Rule] = {"admin": Rule(Access.ADMIN)}

# A URL argument's value, by its name: the World attribute holding it.
ARGUMENTS: dict[str, str] = {
    "submission_id": "alice_submission_id",
    "offering_id": "offering_id",
    "slug": "exercise_slug",
    "number": "one",
    "key": "question_key",
    "batch_id": "regrade_batch_id",
    "run_id": "similarity_run_id",
    "pair_id": "similarity_pair_id",
    "extension_id": "extension_id",
    "uidb64": "alice_uidb64",
    "token": "bogus_token",
    # The admin's own arguments: any value reaches its permission check.
    "app_label": "admin_app_label",
    "object_id": "one_text",
    "id": "one_text",
    "content_type_id": "one",
    "url": "admin_url",
}


@dataclass(frozen=True)
class FoundRoute:
    key: str  # the name, namespaced; a route without a name is keyed by its pattern
    pattern: str
    view: str
    arguments: tuple[str, ...]
    namespace: str
    named: bool


def walk(resolver: URLResolver, prefix: str = "", namespace: str = "") -> Iterator[FoundRoute]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}:{entry.namespace}" if namespace else entry.namespace or ""
            yield from walk(
                entry, prefix + str(entry.pattern), inner if entry.namespace else namespace
            )
        elif isinstance(entry, URLPattern):
            pattern = prefix + str(entry.pattern)
            name = f"{namespace}:{entry.name}" if namespace and entry.name else entry.name
            yield FoundRoute(
                key=name or pattern,
                pattern=pattern,
                view=entry.lookup_str,
                arguments=tuple(entry.pattern.regex.groupindex),
                namespace=namespace,
                named=bool(entry.name),
            )


def site_routes() -> list[FoundRoute]:
    return list(walk(get_resolver()))


def rule_for(route: FoundRoute) -> Rule | None:
    if route.key in ROUTES:
        return ROUTES[route.key]
    return NAMESPACE_DEFAULTS.get(route.namespace) if route.namespace else None


def likely_access(route: FoundRoute) -> Access:
    """A first guess for an unclassified route, for the failure message to propose."""
    if "submission_id" in route.arguments:
        return Access.OWNER
    if route.pattern.startswith("instructor/") and "offering_id" not in route.arguments:
        return Access.ANY_STAFF
    if set(route.arguments) & {"offering_id", "batch_id", "extension_id"}:
        return Access.STAFF
    return Access.SIGNED_IN


def test_every_route_is_classified() -> None:
    routes = site_routes()
    missing = [r for r in routes if rule_for(r) is None]
    arguments = sorted({a for r in routes for a in r.arguments if a not in ARGUMENTS})
    problems = []
    if missing:
        levels = "\n".join(f"      Access.{a.name}: {a.value}" for a in Access)
        lines = "\n".join(
            f'    "{r.key}": Rule(Access.{likely_access(r).name}),  # {r.pattern} → {r.view}'
            for r in missing
        )
        problems.append(
            f"Routes not classified: add these lines to ROUTES in {THIS_FILE}, after checking"
            f" the level (a guess from the URL's arguments) against who may open the route,"
            f' and adding method="POST" for a route that only takes POST:\n{lines}\n'
            f"The levels:\n{levels}"
        )
    if arguments:
        problems.append(
            f"URL arguments with no value to try: add each to ARGUMENTS in {THIS_FILE}, naming "
            f"a World attribute that holds a real object's value (add it to World): {arguments}"
        )
    stale = sorted(set(ROUTES) - {r.key for r in routes})
    if stale:
        problems.append(f"ROUTES names routes the site no longer has; remove them: {stale}")
    assert not problems, "\n\n".join(problems)


@dataclass
class World:
    """The people and the objects whose ids go into the URLs."""

    cast: Cast
    other_course_ta: User
    other_offering_ta: User
    alice_submission_id: int
    alice_notebook_id: int
    regrade_batch_id: int
    extension_id: int
    offering_id: int
    similarity_run_id: int = 0
    similarity_pair_id: int = 0
    exercise_slug: str = "vector-add"
    notebook_slug: str = "fusion-notebook"
    quiz_slug: str = ""
    question_key: str = ""
    short_key: str = "s2-layernorm-memory-bound"  # an item of the quiz's short/ folder
    alice_uidb64: str = ""
    bogus_token: str = "not-a-token"
    admin_app_label: str = "courses"
    admin_url: str = "no-such-page/"
    one: int = 1
    one_text: str = "1"

    def value(self, attribute: str) -> object:
        return getattr(self, attribute)


def alice_work(cast: Cast) -> tuple[Submission, Submission]:
    """alice's graded code and her graded notebook, each holding her marker."""
    code = Submission.objects.create(
        user=cast.alice,
        item=cast.item,
        offering=cast.offering,
        kind=SubmissionKind.CODE,
        source=f"# {ALICE_CODE}\ndef vector_add(a, b): ...\n",
        source_sha256="a" * 64,
        content_hash=cast.item.content_hash,
        device_kind="cpu",
        status=Status.GRADED,
    )
    notebook_item = Item.objects.get(slug="fusion-notebook")
    cell = {"cell_type": "code", "metadata": {}, "source": f"# {ALICE_CODE}", "outputs": []}
    notebook = Submission.objects.create(
        user=cast.alice,
        item=notebook_item,
        offering=cast.offering,
        kind=SubmissionKind.NOTEBOOK,
        source=json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
        source_sha256="b" * 64,
        content_hash=notebook_item.content_hash,
        device_kind="cpu",
        status=Status.NEEDS_REVIEW,
    )
    for submission, report in (
        (code, {"verdict": "correct", "score": 7, "max_score": 10}),
        (notebook, {"verdict": "correct", "score": 1, "max_score": 5, "cells": []}),
    ):
        Grading.objects.create(
            submission=submission,
            run_key=f"perm-{submission.pk}",
            verdict="correct",
            score=Decimal(str(report["score"])),
            max_score=submission.item.max_score,
            report=report,
            content_hash=submission.item.content_hash,
        )
    return code, notebook


def build_world(cast: Cast) -> World:
    cast.alice.first_name, cast.alice.email = ALICE_NAME, ALICE_EMAIL
    cast.alice.save()
    cast.offering.title = OFFERING_TITLE
    cast.offering.save()
    other_course = Course.objects.create(slug="other-course", title="Another course")
    other_term = Offering.objects.create(course=other_course, slug="2026-fall", title="Other")
    same_course = Offering.objects.create(
        course=cast.offering.course, slug="2027-spring", title="Spring 2027"
    )
    otto = User.objects.create_user(username="otto")
    tess = User.objects.create_user(username="tess")
    Enrolment.objects.create(user=otto, offering=other_term, role=Role.TA)
    Enrolment.objects.create(user=tess, offering=same_course, role=Role.TA)

    code, notebook = alice_work(cast)
    batch = RegradeBatch.objects.create(
        item=cast.item, offering=cast.offering, scope=RegradeScope.LATEST, requested_by=cast.tara
    )
    batch.submissions.add(code)
    run = SimilarityRun.objects.create(
        item=cast.item, offering=cast.offering, requested_by=cast.tara
    )
    pair = SimilarPair.objects.create(
        run=run,
        first=code,
        second=code,
        similarity=1,
        first_share=1,
        second_share=1,
        tokens=30,
        flagged=True,
    )
    extension = Extension.objects.create(
        offering=cast.offering,
        item=cast.item,
        user=cast.alice,
        due_at="2030-01-01T00:00:00Z",
        reason="ill",
        granted_by=cast.ines,
    )
    question = next(
        q
        for q in Question.objects.filter(
            quiz__item__course=cast.item.course, quiz__item__is_published=True, is_active=True
        ).select_related("quiz__item")
        if not quiz_spec_for(q.quiz.item).question(q.key).is_parameterized  # type: ignore[union-attr]
    )
    Attempt.objects.create(
        user=cast.alice,
        question=question,
        offering=cast.offering,
        number=1,
        raw_answer="42",
        answer=42,
        expected=42,
        is_correct=True,
        attempt_factor=1,
        score=question.points,
        content_hash="q" * 64,
    )
    return World(
        cast=cast,
        other_course_ta=otto,
        other_offering_ta=tess,
        alice_submission_id=code.pk,
        alice_notebook_id=notebook.pk,
        regrade_batch_id=batch.pk,
        similarity_run_id=run.pk,
        similarity_pair_id=pair.pk,
        extension_id=extension.pk,
        offering_id=cast.offering.pk,
        quiz_slug=question.quiz.item.slug,
        question_key=question.key,
        alice_uidb64=urlsafe_base64_encode(force_bytes(cast.alice.pk)),
    )


# Who is refused, who must get in, and who may get in but must see nothing of alice's.
PEOPLE = (
    "anonymous",
    "stranger",
    "alice",
    "bob",
    "tara",
    "ines",
    "other_course_ta",
    "other_offering_ta",
)
OUTSIDERS = ("stranger", "bob", "other_course_ta", "other_offering_ta")
EXPECTED: dict[Access, dict[str, tuple[str, ...]]] = {
    Access.PUBLIC: {"refused": (), "allowed": (), "no_leak": ("anonymous", *OUTSIDERS)},
    Access.SIGNED_IN: {
        "refused": ("anonymous",),
        "allowed": ("alice", "tara", "ines"),
        "no_leak": OUTSIDERS,
    },
    Access.OWNER: {
        "refused": ("anonymous", *OUTSIDERS),
        "allowed": ("alice", "tara", "ines"),
        "no_leak": (),
    },
    Access.STAFF: {
        "refused": ("anonymous", "alice", *OUTSIDERS),
        "allowed": ("tara", "ines"),
        "no_leak": (),
    },
    Access.INSTRUCTOR: {
        "refused": ("anonymous", "alice", "tara", *OUTSIDERS),
        "allowed": ("ines",),
        "no_leak": (),
    },
    Access.ANY_STAFF: {
        "refused": ("anonymous", "stranger", "alice", "bob"),
        "allowed": ("tara", "ines"),
        "no_leak": ("other_course_ta", "other_offering_ta"),
    },
    Access.ANY_INSTRUCTOR: {
        "refused": (
            "anonymous",
            "stranger",
            "alice",
            "bob",
            "tara",
            "other_course_ta",
            "other_offering_ta",
        ),
        "allowed": ("ines",),
        "no_leak": (),
    },
    Access.ADMIN: {
        "refused": (
            "anonymous",
            "stranger",
            "alice",
            "bob",
            "tara",
            "other_course_ta",
            "other_offering_ta",
        ),
        "allowed": (),
        "no_leak": (),
    },
}


def login_paths() -> set[str]:
    return {resolve_url(settings.LOGIN_URL), reverse("admin:login")}


def clients(world: World, *, api: bool) -> dict[str, Client]:
    """One client per person: by session for pages, by API token for the API."""
    users = {
        "stranger": world.cast.stranger,
        "alice": world.cast.alice,
        "bob": world.cast.bob,
        "tara": world.cast.tara,
        "ines": world.cast.ines,
        "other_course_ta": world.other_course_ta,
        "other_offering_ta": world.other_offering_ta,
    }
    made = {"anonymous": Client()}
    for name, user in users.items():
        if api:
            made[name] = world.cast.token_client(user)
        else:
            made[name] = Client()
            made[name].force_login(user)
    return made


def body(response: HttpResponseBase) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)  # type: ignore[attr-defined]
    return bytes(response.content)  # type: ignore[attr-defined]


def refusal(response: HttpResponseBase, *, anonymous: bool) -> bool:
    status = response.status_code
    if status in (301, 302, 303, 307):
        return urlsplit(response["Location"]).path in login_paths()
    return status == 401 if anonymous else status in (401, 403, 404)


def leaks(response: HttpResponseBase, markers: tuple[str, ...]) -> list[str]:
    text = body(response).decode("utf-8", errors="replace")
    return [m for m in markers if m in text]


@dataclass
class Outcome:
    route: str
    person: str
    problem: str


def try_route(
    route: FoundRoute, rule: Rule, world: World, people: dict[str, Client], persons: tuple[str, ...]
) -> Iterator[tuple[str, HttpResponseBase]]:
    kwargs = {a: world.value(rule.kwargs.get(a, ARGUMENTS[a])) for a in route.arguments}
    url = reverse(route.key, kwargs=kwargs) if route.named else filled(route.pattern, kwargs)
    for person in persons:
        client = people[person]
        response = client.post(url) if rule.method == "POST" else client.get(url)
        yield person, response


def filled(pattern: str, kwargs: dict[str, object]) -> str:
    """The URL of a route without a name (the admin has a few): its pattern with the values
    in place of its arguments, whether written as <converter:name> or as a regex group."""
    url = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(kwargs[m.group(1)]), pattern)
    url = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: str(kwargs[m.group(1)]), url)
    return "/" + url.replace("^", "").replace("$", "").replace("/?", "/")


def row_counts() -> dict[str, int]:
    return {
        model._meta.label: model._default_manager.count()
        for model in apps.get_models()
        if model is not Session
    }


@pytest.fixture
def world(cast: Cast) -> World:
    return build_world(cast)


def test_no_route_lets_in_anyone_it_should_refuse(world: World) -> None:
    routes = [(r, rule) for r in site_routes() if (rule := rule_for(r)) is not None]
    page_people, api_people = clients(world, api=False), clients(world, api=True)
    problems: list[Outcome] = []
    before = row_counts()
    for route, rule in routes:
        people = api_people if route.pattern.startswith("^api/") else page_people
        for person, response in try_route(
            route, rule, world, people, EXPECTED[rule.access]["refused"]
        ):
            if not refusal(response, anonymous=person == "anonymous"):
                where = response.get("Location", "")
                problems.append(
                    Outcome(route.key, person, f"{rule.method} got {response.status_code} {where}")
                )
    assert row_counts() == before, "a refused request changed the database"
    assert not problems, "\n".join(f"{p.route} as {p.person}: {p.problem}" for p in problems)


def test_the_people_a_route_is_for_get_in_and_outsiders_see_nothing_of_alices(
    world: World,
) -> None:
    routes = [(r, rule) for r in site_routes() if (rule := rule_for(r)) is not None]
    page_people, api_people = clients(world, api=False), clients(world, api=True)
    markers = (ALICE_CODE, ALICE_NAME, ALICE_EMAIL, f'"{world.cast.alice.username}"', ">alice<")
    problems: list[Outcome] = []
    for route, rule in routes:
        people = api_people if route.pattern.startswith("^api/") else page_people
        expected = EXPECTED[rule.access]
        # A POST that gets in would act (regrade, grade, revoke): only GETs are tried here.
        allowed = expected["allowed"] if rule.method == "GET" else ()
        for person, response in try_route(route, rule, world, people, allowed):
            if refusal(response, anonymous=False) or response.status_code >= 400:
                problems.append(Outcome(route.key, person, f"refused: {response.status_code}"))
        for person, response in try_route(route, rule, world, people, expected["no_leak"]):
            staff_listing = rule.access == Access.ANY_STAFF
            shown = leaks(response, (*markers, OFFERING_TITLE) if staff_listing else markers)
            if response.status_code >= 500 or shown:
                problems.append(
                    Outcome(route.key, person, f"{response.status_code}, shows {shown}")
                )
    assert not problems, "\n".join(f"{p.route} as {p.person}: {p.problem}" for p in problems)
