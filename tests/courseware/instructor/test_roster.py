"""Enrol people from a CSV file: good rows done, bad rows reported with why, nothing half-done."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from courseware.accounts.services import INSTRUCTORS_GROUP
from courseware.courses.models import Enrolment, Role
from tests.conftest import Cast
from tests.courseware.instructor.conftest import logged_in

pytestmark = pytest.mark.django_db

CSV = """username,email,first_name,last_name,role
carol,carol@example.edu,Carol,Chen,
dave,dave@example.edu,Dave,Ma,ta
erin,erin@example.edu,Erin,Li,instructor
bob,bob@example.edu,Bob,Old,student
stranger,,,,
frank,not-an-email,Frank,Wu,
gina,gina@example.edu,Gina,Xu,professor
carol,carol2@example.edu,Carol,Again,
,nobody@example.edu,No,Name,
tara,,,,student
"""


def upload(cast: Cast, text: str | bytes, name: str = "roster.csv") -> str:
    data = text.encode() if isinstance(text, str) else text
    url = reverse("instructor-roster", args=[cast.offering.pk])
    response = logged_in(cast.ines).post(url, {"file": SimpleUploadedFile(name, data)})
    assert response.status_code == 200
    return response.content.decode()


def row(page: str, line: int) -> str:
    start = page.index(f'data-line="{line}"')
    return page[start : page.index("</tr>", start)]


def test_good_rows_are_enrolled_and_bad_rows_say_why(cast: Cast) -> None:
    page = upload(cast, CSV)
    assert "5 rows done, 5 rows not done" in page
    carol = User.objects.get(username="carol")
    assert (carol.email, carol.first_name) == ("carol@example.edu", "Carol")
    assert not carol.has_usable_password()  # nobody logs in before choosing a password
    roles = dict(
        Enrolment.objects.filter(offering=cast.offering).values_list("user__username", "role")
    )
    assert roles["carol"] == Role.STUDENT and roles["dave"] == Role.TA
    assert roles["stranger"] == Role.STUDENT and roles["bob"] == Role.STUDENT
    erin = User.objects.get(username="erin")
    assert erin.is_staff and erin.groups.filter(name=INSTRUCTORS_GROUP).exists()
    assert "already enrolled" in row(page, 5)
    assert User.objects.get(username="bob").last_name == ""  # an existing account is kept
    assert "not a valid email" in row(page, 7)
    assert "Unknown role" in row(page, 8) and "professor" in row(page, 8)
    assert "already on line 2" in row(page, 9)
    assert "username is empty" in row(page, 10)
    assert "already enrolled as Teaching assistant" in row(page, 11)
    # A failed row leaves nothing behind: no account, no enrolment.
    assert not User.objects.filter(username__in=["frank", "gina"]).exists()
    assert User.objects.get(username="carol").email == "carol@example.edu"
    assert roles["tara"] == Role.TA


def test_a_new_account_chooses_its_password_through_the_link(cast: Cast) -> None:
    page = upload(cast, "username,email,first_name,last_name\ncarol,c@example.edu,Carol,Chen\n")
    link = re.search(r'value="(http://testserver/instructor/set-password/[^"]+)"', page)
    assert link is not None
    client = Client()
    form_page = client.get(link.group(1), follow=True)
    assert "Choose your password" in form_page.content.decode()
    done = client.post(
        form_page.redirect_chain[-1][0],
        {"new_password1": "a-long-pass-42x", "new_password2": "a-long-pass-42x"},
        follow=True,
    )
    assert "Your password is set" in done.content.decode()
    assert Client().login(username="carol", password="a-long-pass-42x")
    # The link works once.
    again = Client().get(link.group(1), follow=True).content.decode()
    assert "used already or has expired" in again


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"name,mail\nx,y\n", "missing: username, email, first_name, last_name"),
        (b"username,email,first_name,last_name\n", "no rows of people"),
        ("username,email,first_name,last_name\nz\u00e9,a@b.cd,Z,E\n".encode("latin-1"), "UTF-8"),
    ],
)
def test_a_file_that_is_not_a_roster_is_refused_with_a_message(
    cast: Cast, data: bytes, message: str
) -> None:
    before = User.objects.count()
    assert message in upload(cast, data)
    assert User.objects.count() == before
