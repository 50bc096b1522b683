"""Names and roles: an instructor syncs the roster on demand; members are enrolled with their
roles, and people who left the LMS course are reported, never removed."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from courseware.courses.models import Enrolment, Role
from courseware.lti.models import LtiContext, LtiIdentity, RosterSync
from tests.lti.conftest import World
from tests.lti.platform import INSTRUCTOR, LEARNER, MENTOR, TEACHING_ASSISTANT


def test_an_instructor_syncs_the_roster_and_nobody_is_removed(live_world: World) -> None:
    lms, cast = live_world.lms, live_world.cast
    live_world.link_course()
    User.objects.create_user("carol", "carol@uni.example", "pw-carol")  # a password account
    lms.add_user("lms-ivy", "Ivy Instructor", "ivy@uni.example", INSTRUCTOR)
    lms.add_user("lms-gil", "Gil Gone", "gil@uni.example", LEARNER)
    link = lms.add_link("Vector add", custom={"item": "vector-add"})
    for sub in ("lms-ivy", "lms-gil"):  # they opened the course in the LMS before
        assert (
            live_world.browser().launch(lms.login_initiation_url(sub, link=link)).status_code == 200
        )
    lms.users["lms-gil"].status = "Inactive"  # Gil dropped the LMS course since
    lms.add_user("lms-sam", "Sam Student", "sam@uni.example", LEARNER)
    lms.add_user("lms-tom", "Tom Assistant", "tom@uni.example", TEACHING_ASSISTANT)
    lms.add_user("lms-carol", "Carol Learner", "carol@uni.example", LEARNER)
    lms.add_user("lms-mo", "Mo Mentor", "mo@uni.example", MENTOR)
    context = LtiContext.objects.get(context_id=lms.course["id"])
    assert context.memberships_url == lms.url + "/memberships"  # offered at the launches
    before = Enrolment.objects.count()

    instructor = Client()
    instructor.force_login(cast.ines)
    response = instructor.post(
        f"/lti/offering/{cast.offering.pk}/roster-sync", {"context": context.pk}
    )

    sync = RosterSync.objects.get()
    assert response.status_code == 302 and sync.error == ""

    def enrolled(sub: str) -> str:
        user = LtiIdentity.objects.get(sub=sub).user
        return Enrolment.objects.get(user=user, offering=cast.offering).role

    assert enrolled("lms-sam") == Role.STUDENT and enrolled("lms-tom") == Role.TA
    assert enrolled("lms-ivy") == Role.INSTRUCTOR
    assert enrolled("lms-gil") == Role.STUDENT  # gone from the LMS, still enrolled here
    assert not LtiIdentity.objects.filter(sub__in=["lms-carol", "lms-mo"]).exists()
    assert not Enrolment.objects.filter(user__username="carol").exists()  # never linked silently
    assert Enrolment.objects.count() == before + 2

    report = sync.report
    assert [m["email"] for m in report["enrolled"]] == ["sam@uni.example", "tom@uni.example"]
    assert [m["email"] for m in report["to_link"]] == ["carol@uni.example"]
    assert [m["email"] for m in report["no_role"]] == ["mo@uni.example"]
    assert [m["email"] for m in report["gone"]] == ["gil@uni.example"]
    assert [m["email"] for m in report["unchanged"]] == ["ivy@uni.example"]
    # The LMS gave two members a page: the sync followed its "next" links to the end.
    assert len(lms.received("/memberships")) == 3

    page = instructor.get(f"/lti/offering/{cast.offering.pk}/").content.decode()
    assert "Gil Gone" in page[page.index('data-list="gone"') :]


def test_a_ta_may_not_sync(world: World) -> None:
    context = world.link_course()
    ta = Client()
    ta.force_login(world.cast.tara)
    response = ta.post(
        f"/lti/offering/{world.cast.offering.pk}/roster-sync", {"context": context.pk}
    )
    assert response.status_code == 403 and not RosterSync.objects.exists()
