"""An instructor's admin shows only the offerings they teach: another offering's deadlines,
enrolments, submissions and gradings are neither listed nor reachable by their address."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from courseware.courses.models import Enrolment, ItemPolicy, Offering, Role
from courseware.submissions.models import Submission
from tests.conftest import Cast


def other_offering(cast: Cast) -> tuple[Offering, ItemPolicy]:
    other = Offering.objects.create(course=cast.offering.course, slug="2027-spring", title="S")
    olga = User.objects.create_user(username="olga")
    Enrolment.objects.create(user=olga, offering=other, role=Role.INSTRUCTOR)
    policy = ItemPolicy.objects.create(
        offering=other, item=cast.item, due_at=timezone.now() + timedelta(days=9)
    )
    return other, policy


def admin_client(user: User) -> Client:
    client = Client()
    client.force_login(User.objects.get(pk=user.pk))  # the enrolment made them staff
    return client


def test_an_instructor_sees_and_reaches_only_their_own_offerings_rows(cast: Cast) -> None:
    other, foreign = other_offering(cast)
    own = ItemPolicy.objects.create(offering=cast.offering, item=cast.item)
    client = admin_client(cast.ines)

    listing = client.get("/admin/courses/itempolicy/")
    assert listing.status_code == 200
    assert f"/admin/courses/itempolicy/{own.pk}/change/" in listing.content.decode()
    assert f"/admin/courses/itempolicy/{foreign.pk}/change/" not in listing.content.decode()
    # By its address, another offering's row does not exist for them (the admin redirects).
    assert client.get(f"/admin/courses/itempolicy/{foreign.pk}/change/").status_code == 302
    assert client.get(f"/admin/courses/offering/{other.pk}/change/").status_code == 302

    offerings = client.get("/admin/courses/itempolicy/add/").context["adminform"].form
    assert list(offerings.fields["offering"].queryset) == [cast.offering]


def test_submissions_of_another_offering_stay_out_of_an_instructors_admin(cast: Cast) -> None:
    other, _ = other_offering(cast)
    Enrolment.objects.create(user=cast.bob, offering=other, role=Role.STUDENT)
    theirs = Submission.objects.create(
        user=cast.bob, item=cast.item, offering=other, source="x = 1\n"
    )
    listing = admin_client(cast.ines).get("/admin/submissions/submission/")
    assert listing.status_code == 200
    assert f"/admin/submissions/submission/{theirs.pk}/change/" not in listing.content.decode()
    superuser = User.objects.create_superuser(username="root", password="x")
    everything = admin_client(superuser).get("/admin/submissions/submission/")
    assert f"/admin/submissions/submission/{theirs.pk}/change/" in everything.content.decode()


def test_an_offering_opened_in_the_admin_is_taught_by_whoever_opened_it(cast: Cast) -> None:
    client = admin_client(cast.ines)
    response = client.post(
        "/admin/courses/offering/add/",
        {
            "course": cast.offering.course.pk,
            "slug": "2027-fall",
            "title": "Fall 2027",
            "is_active": "on",
            "default_max_attempts": "0",
            "default_late_penalty_per_day": "0.1",
            "max_pending_per_student": "3",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    made = Offering.objects.get(slug="2027-fall")
    assert Enrolment.objects.get(offering=made, user=cast.ines).role == Role.INSTRUCTOR
