"""Bad launches are refused with a message (in the reader's language), logged, and never sign
anyone in: a bad signature, an expired token, an unknown platform, an unknown deployment, a
replayed nonce, a bad state, a role with no counterpart here."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User

from courseware.lti.models import LtiIdentity
from tests.lti.conftest import Browser, Page, World
from tests.lti.platform import LEARNER, LmsLink


@dataclass(frozen=True)
class BadLaunch:
    status: int
    kind: str  # the refusal's name in the log
    message: str  # part of the page's message
    attempt: Callable[[World, Browser], Page]


def tampered(tamper: str) -> Callable[[World, Browser], Page]:
    def attempt(world: World, browser: Browser) -> Page:
        return browser.launch(
            world.lms.login_initiation_url("lms-eve", link=world_link(world), tamper=tamper)
        )

    return attempt


def world_link(world: World) -> LmsLink:
    return world.lms.links.get("link-1") or world.lms.add_link(
        "Vector add", custom={"item": "vector-add"}
    )


def unknown_issuer_login(world: World, browser: Browser) -> Page:
    url = world.lms.login_initiation_url(
        "lms-eve", link=world_link(world), issuer="https://other-lms.example"
    )
    return browser.get(url)


def replayed(world: World, browser: Browser) -> Page:
    form = browser.start_launch(world.lms.login_initiation_url("lms-eve", link=world_link(world)))
    first = browser.post(form)
    assert first.status_code == 200  # the first post is a good launch; signed out again…
    for name in ("sessionid", "csrftoken"):
        browser.tool.drop_cookie(name)
    return browser.post(form)  # …the same browser posts the same id_token again


def bad_state(world: World, browser: Browser) -> Page:
    form = browser.start_launch(world.lms.login_initiation_url("lms-eve", link=world_link(world)))
    return browser.post(form, state="state-" + "0" * 36)


BAD_LAUNCHES = {
    "bad signature": BadLaunch(403, "BAD_SIGNATURE", "signature", tampered("wrong_key")),
    "expired token": BadLaunch(403, "EXPIRED", "expired", tampered("expired")),
    "unknown platform at login": BadLaunch(
        403, "UNKNOWN_PLATFORM", "not registered", unknown_issuer_login
    ),
    "unknown platform in the token": BadLaunch(
        403, "UNKNOWN_PLATFORM", "not registered", tampered("unknown_issuer")
    ),
    "unknown deployment": BadLaunch(
        403, "UNKNOWN_DEPLOYMENT", "deployment", tampered("unknown_deployment")
    ),
    "replayed nonce": BadLaunch(403, "REPLAYED", "already used", replayed),
    "bad state": BadLaunch(403, "BAD_STATE", "sign-in your browser started", bad_state),
    "no role here": BadLaunch(403, "NO_ROLE", "no counterpart", tampered("no_role_here")),
}


@pytest.mark.parametrize("case", BAD_LAUNCHES, ids=list(BAD_LAUNCHES))
def test_a_bad_launch_is_refused_logged_and_signs_nobody_in(
    world: World, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    bad = BAD_LAUNCHES[case]
    world.link_course()
    world.lms.add_user("lms-eve", "Eve Learner", "eve@uni.example", LEARNER)
    browser = world.browser()
    identities_before = set(LtiIdentity.objects.values_list("pk", flat=True))
    caplog.set_level(logging.WARNING, logger="courseware.lti.launch")

    response = bad.attempt(world, browser)

    assert response.status_code == bad.status, response.text[:500]
    assert bad.message in response.text and 'id="lti-refusal"' in response.text
    assert any(f"refused ({bad.kind})" in r.getMessage() for r in caplog.records), caplog.text
    if case != "replayed nonce":  # there, the first (good) launch made the account
        assert set(LtiIdentity.objects.values_list("pk", flat=True)) == identities_before
    assert browser.signed_in_as() is None


def test_the_refusal_speaks_the_readers_language(world: World) -> None:
    world.lms.add_user("lms-eve", "Eve Learner", "eve@uni.example", LEARNER)
    browser = world.browser()
    browser.tool.set_header("Accept-Language", "zh-hans")
    response = tampered("expired")(world, browser)
    assert response.status_code == 403
    assert "已过期" in response.text and 'lang="zh-hans"' in response.text


def test_a_disabled_account_is_not_signed_in(world: World) -> None:
    world.lms.add_user("lms-eve", "Eve Learner", "eve@uni.example", LEARNER)
    assert (
        world.browser()
        .launch(world.lms.login_initiation_url("lms-eve", link=world_link(world)))
        .status_code
        == 200
    )
    User.objects.filter(lti_identities__sub="lms-eve").update(is_active=False)
    browser = world.browser()
    page = browser.launch(world.lms.login_initiation_url("lms-eve", link=world_link(world)))
    assert page.status_code == 403 and "disabled" in page.text
    assert browser.signed_in_as() is None
