"""An LMS user whose email an existing password account uses is offered to link it, and it is
linked only once they type that account's password: an email alone never links."""

from __future__ import annotations

from courseware.courses.models import Enrolment, Role
from courseware.lti.models import LtiIdentity
from tests.lti.conftest import Browser, World
from tests.lti.platform import LEARNER


def launched_as_alice_in_the_lms(world: World) -> tuple[Browser, str]:
    """alice's LMS account carries the email of her password account here."""
    world.cast.alice.email = "alice@uni.example"
    world.cast.alice.save()
    world.link_course()
    world.lms.add_user("lms-alice", "Alice Liddell", "ALICE@uni.example", LEARNER)
    link = world.lms.add_link("Vector add", custom={"item": "vector-add"})
    browser = world.browser()
    page = browser.launch(world.lms.login_initiation_url("lms-alice", link=link))
    assert page.status_code == 200 and page.url.endswith("/lti/link-account/"), page.text[:500]
    assert "alice@uni.example" in page.text.lower() and 'id="link-form"' in page.text
    return browser, page.text


def test_the_account_is_linked_only_after_its_password_is_typed(world: World) -> None:
    browser, _ = launched_as_alice_in_the_lms(world)
    assert browser.signed_in_as() is None  # offered, not signed in
    assert not LtiIdentity.objects.exists()

    wrong = browser.submit(browser.pages[-1], "link-form", action="link", password="guess")
    assert wrong.status_code == 400 and 'id="link-error"' in wrong.text
    assert browser.signed_in_as() is None and not LtiIdentity.objects.exists()

    right = browser.submit(browser.pages[-1], "link-form", action="link", password="pw-alice")
    assert right.status_code == 200 and right.url.endswith("/exercises/vector-add/")
    identity = LtiIdentity.objects.get(sub="lms-alice")
    assert identity.user == world.cast.alice and identity.linked_existing_account
    assert browser.signed_in_as() == "alice"

    # From now on her LMS signs her straight into her account.
    again = world.browser()
    link = world.lms.links["link-1"]
    page = again.launch(world.lms.login_initiation_url("lms-alice", link=link))
    assert page.url.endswith("/exercises/vector-add/") and again.signed_in_as() == "alice"


def test_declining_makes_a_new_account_and_leaves_the_old_one_alone(world: World) -> None:
    browser, _ = launched_as_alice_in_the_lms(world)
    page = browser.submit(browser.pages[-1], "new-account-form", action="new")
    assert page.status_code == 200 and page.url.endswith("/exercises/vector-add/")
    user = LtiIdentity.objects.get(sub="lms-alice").user
    assert user != world.cast.alice and not user.has_usable_password()
    assert browser.signed_in_as() == user.username
    assert Enrolment.objects.get(user=user, offering=world.cast.offering).role == Role.STUDENT
    world.cast.alice.refresh_from_db()
    assert world.cast.alice.check_password("pw-alice")


def test_too_many_wrong_passwords_leave_only_the_new_account(world: World) -> None:
    browser, _ = launched_as_alice_in_the_lms(world)
    for _ in range(5):
        browser.submit(browser.pages[-1], "link-form", action="link", password="guess")
    page = browser.pages[-1]
    assert 'id="link-form"' not in page.text and 'id="new-account-form"' in page.text
    # Even the right password is not taken now.
    browser.request(
        "POST",
        browser.base_url + "/lti/link-account/",
        {"action": "link", "password": "pw-alice", "csrfmiddlewaretoken": csrf_of(page.text)},
    )
    assert browser.signed_in_as() is None and not LtiIdentity.objects.exists()


def csrf_of(html: str) -> str:
    marker = 'name="csrfmiddlewaretoken" value="'
    start = html.index(marker) + len(marker)
    return html[start : html.index('"', start)]
