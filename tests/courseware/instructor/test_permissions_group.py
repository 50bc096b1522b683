"""Instructors can run the course in the admin, and the instructor pages are theirs alone."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from courseware.accounts.services import INSTRUCTORS_GROUP
from courseware.courses.models import Enrolment, Extension, ItemPolicy, Role
from tests.conftest import Cast
from tests.courseware.instructor.conftest import logged_in

pytestmark = pytest.mark.django_db


def codenames(group: Group) -> set[str]:
    return {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.all()}


def test_the_migration_makes_the_instructors_group_with_the_permissions_to_run_a_course() -> None:
    granted = codenames(Group.objects.get(name=INSTRUCTORS_GROUP))
    for model in ("offering", "itempolicy", "enrolment", "extension"):
        for action in ("view", "add", "change"):
            assert f"courses.{action}_{model}" in granted
    for name in ("courses.view_item", "submissions.view_submission", "submissions.view_grading"):
        assert name in granted
    assert {"submissions.add_override", "submissions.change_override"} <= granted
    # Work students handed in is never deleted, nor the gradings of it.
    assert not granted & {"submissions.delete_submission", "submissions.delete_grading"}
    assert "courses.delete_course" not in granted and "auth.change_user" not in granted


def test_an_instructor_enrolment_puts_the_user_in_the_group_and_lets_them_into_the_admin(
    cast: Cast,
) -> None:
    ines = User.objects.get(pk=cast.ines.pk)
    assert ines.is_staff and ines.groups.filter(name=INSTRUCTORS_GROUP).exists()
    assert not cast.tara.groups.exists() and not User.objects.get(pk=cast.tara.pk).is_staff
    # Made a student instead, and teaching nothing else, they leave the group.
    Enrolment.objects.filter(user=ines).update(role=Role.STUDENT)
    Enrolment.objects.get(user=ines).save()
    assert not ines.groups.filter(name=INSTRUCTORS_GROUP).exists()


def test_the_demo_instructor_can_open_the_deadlines_in_the_admin() -> None:
    call_command("seed_demo", stdout=StringIO())
    instructor = User.objects.get(username="instructor")
    assert instructor.groups.filter(name=INSTRUCTORS_GROUP).exists()
    client = logged_in(instructor)
    page = client.get(reverse("admin:courses_itempolicy_changelist"))
    assert page.status_code == 200
    assert "item policies" in page.content.decode().lower()
    assert client.get(reverse("admin:courses_extension_changelist")).status_code == 200
    assert client.get(reverse("admin:courses_itempolicy_add")).status_code == 200
    home = client.get(reverse("admin:index")).content.decode()
    assert "permission to view or edit anything" not in home
    # The header links instructors to the admin and to their own pages.
    header = client.get(reverse("home")).content.decode()
    assert reverse("admin:index") in header and reverse("instructor-index") in header


def test_the_admin_names_item_policies_properly() -> None:
    assert str(ItemPolicy._meta.verbose_name_plural) == "item policies"
    assert str(Extension._meta.verbose_name) == "extension"


def every_page(cast: Cast) -> list[tuple[str, str]]:
    o = cast.offering.pk
    return [
        ("get", reverse("instructor-content")),
        ("post", reverse("instructor-content")),
        ("get", reverse("instructor-offering", args=[o])),
        ("get", reverse("instructor-preview", args=[o, "vector-add"])),
        ("get", reverse("instructor-preview", args=[o, "ch15-gpu-fundamentals-quiz"])),
        ("get", reverse("instructor-statistics", args=[o, "vector-add"])),
        ("get", reverse("instructor-statistics", args=[o, "ch15-gpu-fundamentals-quiz"])),
        ("get", reverse("instructor-extensions", args=[o])),
        ("post", reverse("instructor-extensions", args=[o])),
        ("post", reverse("instructor-extension-revoke", args=[o, 1])),
        ("get", reverse("instructor-roster", args=[o])),
        ("post", reverse("instructor-roster", args=[o])),
    ]


def fetch(client: Client, method: str, url: str) -> int:
    response = client.post(url, {"action": "sync"}) if method == "post" else client.get(url)
    return response.status_code


def test_every_instructor_page_is_refused_to_students_strangers_and_other_courses_tas(
    cast: Cast, tina: User
) -> None:
    for user in (cast.alice, cast.stranger, tina):
        client = logged_in(user)
        for method, url in every_page(cast):
            assert fetch(client, method, url) in (403, 404), (user.username, method, url)
    for user in (cast.alice, cast.stranger):
        assert logged_in(user).get(reverse("instructor-index")).status_code == 403
    # Tina sees her own course's offering, not this one.
    page = logged_in(tina).get(reverse("instructor-index")).content.decode()
    hers = Enrolment.objects.get(user=tina).offering
    assert reverse("instructor-offering", args=[hers.pk]) in page
    assert reverse("instructor-offering", args=[cast.offering.pk]) not in page
    anonymous = Client().get(reverse("instructor-offering", args=[cast.offering.pk]))
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


def test_the_offerings_ta_may_preview_and_read_statistics_but_not_manage(cast: Cast) -> None:
    client = logged_in(cast.tara)
    o = cast.offering.pk
    assert client.get(reverse("instructor-offering", args=[o])).status_code == 200
    assert client.get(reverse("instructor-preview", args=[o, "vector-add"])).status_code == 200
    assert client.get(reverse("instructor-statistics", args=[o, "vector-add"])).status_code == 200
    assert client.get(reverse("instructor-extensions", args=[o])).status_code == 403
    assert client.get(reverse("instructor-roster", args=[o])).status_code == 403
    assert client.get(reverse("instructor-content")).status_code == 403


def test_the_instructor_opens_every_page(cast: Cast) -> None:
    client = logged_in(cast.ines)
    for method, url in every_page(cast):
        if method == "get":
            assert client.get(url).status_code == 200, url
