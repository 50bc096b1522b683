"""Deep linking: an instructor picks items of the offering in the LMS; the site answers with
signed LtiResourceLink items with line items; the links the LMS makes of them then launch
students onto those items, and their scores go to those line items."""

from __future__ import annotations

from decimal import Decimal

from courseware.courses.models import Enrolment, Item, Role
from courseware.lti.models import LtiContext
from tests.lti.conftest import World, parse_form
from tests.lti.passback_helpers import as_decimal, graded, run_lti_queue, submitted
from tests.lti.platform import INSTRUCTOR, LEARNER


def test_an_instructor_adds_items_and_students_land_on_them_with_their_scores_passed_back(
    live_world: World,
) -> None:
    lms, cast = live_world.lms, live_world.cast
    cast.ines.email = "ines@uni.example"
    cast.ines.save()
    lms.add_user("lms-ines", "Ines Instructor", "ines@uni.example", INSTRUCTOR)
    quiz = Item.objects.filter(kind="quiz", is_published=True).first()
    assert quiz is not None
    browser = live_world.browser()

    # The LMS's "add content" launch; ines links her LMS account to hers here first.
    page = browser.launch(lms.login_initiation_url("lms-ines", deep_linking=True))
    assert page.url.endswith("/lti/link-account/")
    page = browser.submit(page, "link-form", action="link", password="pw-ines")
    assert page.url.endswith("/lti/deep-link/") and 'id="dl-offering-form"' in page.text
    page = browser.get(f"/lti/deep-link/?offering={cast.offering.pk}")
    assert 'id="dl-form"' in page.text and 'value="vector-add"' in page.text
    chosen = ["vector-add", "fusion-notebook", quiz.slug]
    answer = browser.submit(page, "dl-form", offering=cast.offering.pk, items=chosen)
    assert answer.status_code == 200 and 'id="dl-return"' in answer.text

    # The browser posts the signed answer back to the LMS, which checks it and makes the links.
    form = parse_form(answer.text, "dl-return")
    assert form.action == lms.url + "/deep-link-return"
    back = browser.lms.post(form.action, data=form.fields)
    assert back.status_code == 200 and "3 added" in back.text, back.text
    context = LtiContext.objects.get(context_id=lms.course["id"])
    assert context.offering == cast.offering and context.linked_by == cast.ines
    links = {link.custom["item"]: link for link in lms.links.values()}
    assert set(links) == set(chosen)
    for slug, link in links.items():
        item = Item.objects.get(slug=slug)
        lineitem = lms.lineitems[link.lineitem or ""]
        assert lineitem["scoreMaximum"] == float(item.max_score) and lineitem["tag"] == slug
    assert Enrolment.objects.get(user=cast.ines, offering=cast.offering).role == Role.INSTRUCTOR

    # A student opens two of the new links, and a grade reaches the right column.
    lms.add_user("lms-sam", "Sam Student", "sam@uni.example", LEARNER)
    student = live_world.browser()
    quiz_page = student.launch(lms.login_initiation_url("lms-sam", link=links[quiz.slug]))
    assert quiz_page.status_code == 200 and quiz_page.url.endswith(f"/quizzes/{quiz.slug}/")
    exercise = student.launch(lms.login_initiation_url("lms-sam", link=links["vector-add"]))
    assert exercise.url.endswith("/exercises/vector-add/")
    sam = Enrolment.objects.get(
        offering=cast.offering, role=Role.STUDENT, user__email="sam@uni.example"
    ).user
    graded(submitted(live_world, sam), 8, "sam")
    run_lti_queue()
    scores = lms.scores_for(links["vector-add"].lineitem or "", "lms-sam")
    assert [as_decimal(s["scoreGiven"]) for s in scores] == [Decimal("8")]


def test_only_instructors_may_add_content(world: World) -> None:
    world.lms.add_user("lms-sam", "Sam Student", "sam@uni.example", LEARNER)
    page = world.browser().launch(world.lms.login_initiation_url("lms-sam", deep_linking=True))
    assert page.status_code == 403 and "Only the course" in page.text
