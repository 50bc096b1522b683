"""Inside the LMS's iframe: the launch's cookies are SameSite=None; Secure, the pages of an LTI
session may be framed by the LMS that launched it (and no other site), and everyone else keeps
Django's defaults (X-Frame-Options: DENY, SameSite=Lax)."""

from __future__ import annotations

from django.test import Client

from courseware.lti.models import Platform
from tests.lti.conftest import Page, World
from tests.lti.platform import LEARNER


def cross_site(page: Page, name: str) -> bool:
    morsel = page.set_cookies[name]
    return morsel["samesite"] == "None" and bool(morsel["secure"])


def frame_ancestors(page: Page) -> str | None:
    policy = page.headers.get("Content-Security-Policy", "")
    found = [d.strip() for d in policy.split(";") if d.strip().startswith("frame-ancestors")]
    return found[0] if found else None


def test_an_lti_session_is_framed_by_its_lms_only_and_its_cookies_cross_sites(world: World) -> None:
    lms = world.lms
    world.link_course()
    lms.add_user("lms-sam", "Sam Student", "sam@uni.example", LEARNER)
    link = lms.add_link("Vector add", custom={"item": "vector-add"})
    browser = world.browser()

    form = browser.start_launch(lms.login_initiation_url("lms-sam", link=link))
    login = browser.pages[-1]  # the redirect to the platform, setting the state cookies
    lti_cookies = [name for name in login.set_cookies if name.startswith("lti1p3-")]
    assert len(lti_cookies) == 2 and all(cross_site(login, name) for name in lti_cookies)
    assert frame_ancestors(login) == f"frame-ancestors 'self' {lms.url}"

    landed = browser.post(form)
    launch = browser.pages[-2]  # the launch's answer: signed in, redirecting to the item
    assert launch.status_code == 302 and landed.url.endswith("/exercises/vector-add/")
    assert cross_site(launch, "sessionid") and cross_site(launch, "csrftoken")
    for page in (launch, landed):
        assert "X-Frame-Options" not in page.headers
        assert frame_ancestors(page) == f"frame-ancestors 'self' {lms.url}"


def test_the_lms_web_addresses_registered_are_the_ones_allowed_to_frame(world: World) -> None:
    Platform.objects.update(frame_origins="https://lms.uni.example\nhttps://cdn.lms.example")
    world.link_course()
    world.lms.add_user("lms-sam", "Sam Student", "sam@uni.example", LEARNER)
    link = world.lms.add_link("Vector add", custom={"item": "vector-add"})
    landed = world.browser().launch(world.lms.login_initiation_url("lms-sam", link=link))
    assert frame_ancestors(landed) == (
        "frame-ancestors 'self' https://cdn.lms.example https://lms.uni.example"
    )


def test_other_sessions_keep_djangos_defaults(world: World) -> None:
    client = Client()
    client.post("/login/", {"username": "alice", "password": "pw-alice"}, secure=True)
    page = client.get("/exercises/vector-add/", secure=True)
    assert page.status_code == 200 and page["X-Frame-Options"] == "DENY"
    assert "Content-Security-Policy" not in page
    assert client.cookies["sessionid"]["samesite"] == "Lax"
