"""Every page of the site, for each of its users, in English and in Chinese: at 390 px and at
768 px the page never scrolls sideways as a whole, and axe-core finds no serious or critical
WCAG 2.1 A/AA violation. Each page is loaded once per language, checked at both widths, and
kept as a phone-width screenshot in var/screenshots/<test>/ (CI keeps them as artifacts).

The pages are visited in one loop per language, in the session's one browser: about 30 pages,
so a failure lists every page that broke, not just the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from playwright.sync_api import Browser, Page

from courseware.courses.models import Extension, Item, ItemPolicy
from courseware.similarity import services as similarity
from courseware.similarity.demo_solutions import CHUNKED, CHUNKED_DISGUISED
from courseware.submissions.models import (
    RegradeBatch,
    RegradeScope,
    Status,
    Submission,
    SubmissionKind,
)
from tests.browser.conftest import Student
from tests.browser.page_checks import (
    PHONE,
    TABLET,
    hidden_key_columns,
    serious_violations,
    sideways_overflow,
    visitor,
)
from tests.conftest import Cast, make_cast
from tests.courseware.quizzes.conftest import SLUG, answer
from tests.courseware.submissions.test_notebook_review import waiting_notebook
from tests.courseware.submissions.test_report_page import graded, sample

SHORT = "s2-layernorm-memory-bound"  # a short-answer item of the quiz (its short/ folder)


@dataclass(frozen=True)
class Visit:
    who: str  # a Cast attribute, or "" for a visitor who is not logged in
    path: str
    name: str
    status: int = 200


def course_with_everything(cast: Cast) -> list[Visit]:
    """Data behind every page (a graded report, a notebook waiting for a TA, quiz answers, an
    extension, a similarity report) and the pages each person reaches."""
    report = graded(cast, sample("fast"))
    notebook = waiting_notebook(cast.bob)
    answer(cast.alice, "04-a100-cores-per-sm", "32")
    answer(cast.bob, "04-a100-cores-per-sm", "64")
    item = Item.objects.get(slug="fusion-notebook")
    ItemPolicy.objects.create(
        offering=cast.offering, item=item, due_at=timezone.now() + timedelta(days=2)
    )
    Extension.objects.create(
        offering=cast.offering,
        item=item,
        user=cast.bob,
        due_at=timezone.now() + timedelta(days=9),
        reason="Ill, with a doctor's note.",
        granted_by=cast.ines,
    )
    latest = {}
    for user, code in ((cast.bob, CHUNKED_DISGUISED), (cast.alice, CHUNKED)):
        latest[user.username] = Submission.objects.create(
            user=user,
            item=cast.item,
            offering=cast.offering,
            kind=SubmissionKind.CODE,
            source=code,
            source_sha256="0" * 64,
            content_hash=cast.item.content_hash,
            device_kind="cpu",
            status=Status.GRADED,
        )
    batch = RegradeBatch.objects.create(
        item=cast.item, offering=cast.offering, scope=RegradeScope.LATEST, requested_by=cast.tara
    )
    batch.submissions.add(report)
    run = similarity.run_start(item=cast.item, offering=cast.offering, requested_by=cast.tara)
    similarity.run_execute(run.pk)
    pair = run.pairs.first()
    assert pair is not None
    off = cast.offering.pk
    return [
        Visit("", "/login/", "login"),
        Visit("alice", "/", "dashboard"),
        Visit("alice", "/exercises/vector-add/", "exercise"),
        Visit("alice", "/exercises/fusion-notebook/", "notebook-exercise"),
        Visit("alice", f"/submissions/{report.pk}/", "report"),
        Visit("alice", f"/submissions/{latest['alice'].pk}/diff/?against={report.pk}", "diff"),
        Visit("alice", "/review/", "forbidden", 403),
        Visit("alice", "/exercises/no-such-exercise/", "not-found", 404),
        Visit("alice", "/quizzes/", "quizzes"),
        Visit("alice", f"/quizzes/{SLUG}/?part=3", "quiz"),
        Visit("alice", f"/quizzes/{SLUG}/q/4/", "quiz-question"),
        Visit("alice", f"/quizzes/{SLUG}/explain/{SHORT}/", "short-answer"),
        Visit("alice", "/roofline/?device=H200&ai=0.25", "roofline"),
        Visit("alice", "/account/token/", "api-token"),
        Visit("tara", "/review/", "review-queue"),
        Visit("tara", f"/submissions/{notebook.pk}/", "hand-grading"),
        Visit("tara", "/gradebook/", "gradebooks"),
        Visit("tara", f"/gradebook/{off}/", "gradebook"),
        Visit("tara", f"/quizzes/{SLUG}/explain/{SHORT}/review/", "short-answers-review"),
        Visit("tara", "/review/regrade/", "regrade"),
        Visit("tara", f"/review/regrade/{batch.pk}/", "regrade-progress"),
        Visit("tara", "/review/similarity/", "similarity"),
        Visit("tara", f"/review/similarity/{run.pk}/", "similarity-pairs"),
        Visit("tara", f"/review/similarity/{run.pk}/pairs/{pair.pk}/", "similarity-pair"),
        Visit("ines", "/instructor/", "teaching"),
        Visit("ines", f"/instructor/{off}/", "offering"),
        Visit("ines", "/instructor/content/", "content"),
        Visit("ines", f"/instructor/{off}/extensions/", "extensions"),
        Visit("ines", f"/instructor/{off}/roster/", "roster"),
        Visit("ines", f"/instructor/{off}/preview/{SLUG}/", "quiz-preview"),
        Visit("ines", f"/instructor/{off}/preview/vector-add/", "exercise-preview"),
        Visit("ines", f"/instructor/{off}/statistics/{SLUG}/", "statistics"),
        Visit("ines", "/instructor/fleet/", "fleet"),
        Visit("ines", "/lti/platforms/", "lti-platforms"),
        Visit("ines", f"/lti/offering/{off}/", "lti-offering"),
        Visit("ines", "/lti/link-account/", "lti-no-launch", 400),
    ]


@pytest.mark.browser
@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_every_page_fits_a_phone_and_a_tablet_and_passes_axe(
    transactional_db, log_in, browser: Browser, live_server, shots_dir, language: str
) -> None:
    cast = make_cast()
    visits = course_with_everything(cast)
    people: dict[str, Student] = {}
    problems: list[str] = []
    boxes_scrolled = 0  # tables wider than a phone, checked for their first column
    for visit in visits:
        if visit.who not in people:
            user: User | None = getattr(cast, visit.who) if visit.who else None
            people[visit.who] = (
                log_in(user, language)
                if user
                else visitor(browser, live_server.url, shots_dir, language)
            )
        person = people[visit.who]
        page = person.page
        page.set_viewport_size(PHONE)
        response = page.goto(person.base_url + visit.path)
        assert response is not None and response.status == visit.status, (
            f"{visit.path}: {response and response.status}"
        )
        page.wait_for_load_state("load")
        where = f"{language} {visit.name} ({visit.path})"
        problems += [f"{where} at 390 px: {p}" for p in sideways_overflow(page)]
        problems += [f"{where}: {v}" for v in serious_violations(page)]
        problems += [f"{where}: {p}" for p in chart_misfits(page)]
        hidden, scrolled = hidden_key_columns(page)
        problems += [f"{where} at 390 px: {p}" for p in hidden]
        boxes_scrolled += scrolled
        person.screenshot(f"{visit.name}-390")
        page.set_viewport_size(TABLET)
        problems += [f"{where} at 768 px: {p}" for p in sideways_overflow(page)]
        problems += [f"{where} at 768 px: {p}" for p in hidden_key_columns(page)[0]]
    for person in people.values():
        person.context.close()  # log_in closes its own again, harmlessly
    assert not problems, "\n".join(problems)
    print(f"{language}: {boxes_scrolled} tables scrolled in their own box at 390 px")
    assert boxes_scrolled >= 3, boxes_scrolled  # the gradebook, the report's tables, ...


def chart_misfits(page: Page) -> list[str]:
    """A roofline chart on the page scales to the window: as wide as its column allows, and
    neither cut off nor shrunk to a stamp."""
    chart = page.locator("#roofline-chart:visible")
    if chart.count() == 0:
        return []
    box = chart.bounding_box()
    width = page.viewport_size["width"] if page.viewport_size else 0
    if box is None or not (0.75 * width <= box["width"] <= width):
        return [
            f"the roofline chart is {box and round(box['width'])} px wide in a {width} px window"
        ]
    return []
