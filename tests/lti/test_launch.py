"""Launches from the LMS as each role: signed in, enrolled with the matching role in the linked
offering, and landed on the item the LMS link opens."""

from __future__ import annotations

from django.test import Client

from courseware.courses.models import Enrolment, Item, Role
from courseware.lti.models import LtiContext, LtiIdentity, ResourceLink
from tests.lti.conftest import World
from tests.lti.platform import INSTRUCTOR, LEARNER, TEACHING_ASSISTANT


def test_a_learner_is_signed_in_as_a_student_enrolled_and_lands_on_the_exercise(
    world: World,
) -> None:
    lms, offering = world.lms, world.cast.offering
    world.link_course()
    lms.add_user("lms-sam", "Sam Student", "sam@uni.example", LEARNER)
    link = lms.add_link("Vector add", custom={"item": "vector-add"})
    browser = world.browser()

    page = browser.launch(lms.login_initiation_url("lms-sam", link=link))

    assert page.status_code == 200 and page.url == world.base_url + "/exercises/vector-add/"
    identity = LtiIdentity.objects.select_related("user").get(sub="lms-sam")
    user = identity.user
    assert (user.email, user.first_name, user.last_name) == ("sam@uni.example", "Sam", "Student")
    assert not user.has_usable_password()  # signs in through the LMS only
    assert Enrolment.objects.get(user=user, offering=offering).role == Role.STUDENT
    assert browser.signed_in_as() == user.username


def test_an_instructor_lands_on_the_quiz_as_an_instructor_of_the_offering(
    world: World,
) -> None:
    lms = world.lms
    world.link_course()
    quiz = Item.objects.filter(kind="quiz", is_published=True).first()
    assert quiz is not None
    lms.add_user("lms-ivy", "Ivy Instructor", "ivy@uni.example", INSTRUCTOR)
    link = lms.add_link("A quiz", custom={"item": quiz.slug})

    page = world.browser().launch(lms.login_initiation_url("lms-ivy", link=link))

    assert page.status_code == 200 and page.url.endswith(f"/quizzes/{quiz.slug}/")
    user = LtiIdentity.objects.get(sub="lms-ivy").user
    enrolment = Enrolment.objects.get(user=user, offering=world.cast.offering)
    assert enrolment.role == Role.INSTRUCTOR


def test_a_teaching_assistant_becomes_a_ta_not_an_instructor_and_lands_on_the_notebook(
    world: World,
) -> None:
    lms = world.lms
    world.link_course()
    lms.add_user("lms-tom", "Tom Assistant", "tom@uni.example", TEACHING_ASSISTANT)
    link = lms.add_link("Fusion notebook", custom={"item": "fusion-notebook"})

    page = world.browser().launch(lms.login_initiation_url("lms-tom", link=link))

    assert page.status_code == 200 and page.url.endswith("/exercises/fusion-notebook/")
    user = LtiIdentity.objects.get(sub="lms-tom").user
    assert Enrolment.objects.get(user=user, offering=world.cast.offering).role == Role.TA


def test_an_unlinked_lms_course_signs_in_enrols_nobody_and_an_instructor_links_it(
    world: World,
) -> None:
    lms, offering = world.lms, world.cast.offering
    lms.add_user("lms-sam", "Sam Student", "sam@uni.example", LEARNER)
    link = lms.add_link("Vector add", custom={"item": "vector-add"})
    browser = world.browser()

    page = browser.launch(lms.login_initiation_url("lms-sam", link=link))
    assert page.status_code == 200 and 'id="lti-waiting"' in page.text
    assert "is not linked to a course here yet" in page.text
    sam = LtiIdentity.objects.get(sub="lms-sam").user
    assert not Enrolment.objects.filter(user=sam).exists()

    instructor = Client()
    instructor.force_login(world.cast.ines)
    lti_page = instructor.get(f"/lti/offering/{offering.pk}/").content.decode()
    context = LtiContext.objects.get(context_id=lms.course["id"])
    assert f'<option value="{context.pk}">' in lti_page
    instructor.post(f"/lti/offering/{offering.pk}/link", {"context": context.pk})
    context.refresh_from_db()
    assert context.offering == offering and context.linked_by == world.cast.ines

    again = browser.launch(lms.login_initiation_url("lms-sam", link=link))
    assert again.url.endswith("/exercises/vector-add/")
    assert Enrolment.objects.get(user=sam, offering=offering).role == Role.STUDENT


def test_a_link_that_opens_nothing_yet_waits_until_an_instructor_chooses_its_item(
    world: World,
) -> None:
    lms = world.lms
    world.link_course()
    lms.add_user("lms-sam", "Sam Student", "sam@uni.example", LEARNER)
    lms.add_user("lms-ivy", "Ivy Instructor", "ivy@uni.example", INSTRUCTOR)
    link = lms.add_link("Week 1")  # placed by hand in the LMS: no item named

    waiting = world.browser().launch(lms.login_initiation_url("lms-sam", link=link))
    assert 'id="lti-waiting"' in waiting.text and "has not yet chosen" in waiting.text

    ivy = world.browser()
    page = ivy.launch(lms.login_initiation_url("lms-ivy", link=link))
    assert f"/lti/offering/{world.cast.offering.pk}/" in page.url
    assert 'data-link="link-1"' in page.text
    placed = ResourceLink.objects.get()
    ivy.submit(page, f"map-{placed.pk}", link=placed.pk, item="vector-add")
    assert ResourceLink.objects.get().item == Item.objects.get(slug="vector-add")

    landed = world.browser().launch(lms.login_initiation_url("lms-sam", link=link))
    assert landed.url.endswith("/exercises/vector-add/")
