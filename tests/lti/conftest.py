"""The LTI tests' world: a running test platform (tests/lti/platform.py) registered with the
site as an LMS administrator and an instructor would register them, and a browser that goes
through the real OIDC login → platform authentication → launch post.

Two kinds of world: `world` reaches the site in-process over HTTPS (Django's test client; the
platform is still a real HTTP server the site calls), fast, for launches; `live_world` serves
the site over real HTTP (pytest-django's live_server), for what needs the platform to call the
site back (its JWKS, to verify the tool's signed messages).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from html import unescape
from typing import Any, Protocol
from urllib.parse import urlsplit

import pytest
import requests
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from courseware.lti.models import Deployment, LtiContext, Platform
from tests.conftest import Cast, make_cast
from tests.lti.platform import LmsPlatform

IN_PROCESS_BASE = "https://testserver"


@pytest.fixture
def lms() -> Iterator[LmsPlatform]:
    platform = LmsPlatform().start()
    yield platform
    platform.stop()
    # The platform checked every message the tool sent against the specifications.
    assert platform.violations == [], "\n".join(platform.violations)


def register(lms: LmsPlatform, tool_base_url: str) -> Platform:
    """Both sides of the registration: the tool's URLs typed into the LMS, and the LMS's
    issuer, client id, deployment id and URLs typed into the site (and the tool's key)."""
    lms.register_tool(base_url=tool_base_url)
    call_command("lti_generate_key", "--if-missing", stdout=io.StringIO())
    platform = Platform.objects.create(
        name="Test LMS",
        issuer=lms.issuer,
        client_id=lms.client_id,
        auth_login_url=lms.url + "/auth",
        auth_token_url=lms.url + "/token",
        key_set_url=lms.url + "/jwks",
    )
    Deployment.objects.create(platform=platform, deployment_id=lms.deployment_id)
    return platform


@dataclass
class Page:
    status_code: int
    text: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    set_cookies: Mapping[str, Any] = field(default_factory=dict)  # name → its Set-Cookie morsel


class Transport(Protocol):
    def request(self, method: str, url: str, data: dict[str, Any] | None) -> Page: ...
    def cookie_names(self) -> set[str]: ...
    def drop_cookie(self, name: str) -> None: ...
    def set_header(self, name: str, value: str) -> None: ...


class RequestsTransport:
    def __init__(self) -> None:
        self.session = requests.Session()

    def request(self, method: str, url: str, data: dict[str, Any] | None) -> Page:
        r = self.session.request(method, url, data=data, allow_redirects=False)
        return Page(r.status_code, r.text, url, r.headers)

    def cookie_names(self) -> set[str]:
        return {c.name for c in self.session.cookies}

    def drop_cookie(self, name: str) -> None:
        self.session.cookies.pop(name, None)

    def set_header(self, name: str, value: str) -> None:
        self.session.headers[name] = value


class ClientTransport:
    """Django's test client, as a browser on https://testserver."""

    def __init__(self) -> None:
        self.client = Client()
        self.headers: dict[str, str] = {}

    def request(self, method: str, url: str, data: dict[str, Any] | None) -> Page:
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        call = self.client.post if method == "POST" else self.client.get
        r = call(path, data=data, secure=parts.scheme == "https", headers=self.headers)
        return Page(
            r.status_code,
            r.content.decode(errors="replace"),
            url,
            {k: v for k, v in r.items()},
            dict(r.cookies),
        )

    def cookie_names(self) -> set[str]:
        return {name for name, morsel in self.client.cookies.items() if morsel.value}

    def drop_cookie(self, name: str) -> None:
        self.client.cookies.pop(name, None)

    def set_header(self, name: str, value: str) -> None:
        self.headers[name] = value


@dataclass
class LaunchForm:
    """An auto-posting form (the platform's, or the tool's deep linking answer), as parsed."""

    action: str
    fields: dict[str, str]


FORM_INPUT = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')
FORM_ACTION = re.compile(r'<form[^>]*action="([^"]+)"')


def parse_form(html: str, form_id: str | None = None) -> LaunchForm:
    """The page's first form, or the one with this id."""
    if form_id is not None:
        start = html.index(f'id="{form_id}"')
        html = html[html.rindex("<form", 0, start + 1) :]
        html = html[: html.index("</form>")]
    action = FORM_ACTION.search(html)
    assert action is not None, html[:500]
    fields = {name: unescape(value) for name, value in FORM_INPUT.findall(html)}
    return LaunchForm(action=unescape(action.group(1)), fields=fields)


class Browser:
    """A person's browser: the tool's site (its cookies), the LMS's site, and what the pages'
    scripts would do (pylti1p3's cookie check reloads; the platform's form posts itself)."""

    def __init__(self, base_url: str, tool: Transport) -> None:
        self.base_url = base_url
        self.tool = tool
        self.lms = requests.Session()
        self.pages: list[Page] = []  # every page the tool answered, in order

    def request(self, method: str, url: str, data: dict[str, Any] | None = None) -> Page:
        """One request to the tool, following its redirects within the site."""
        page = self.tool.request(method, url, data)
        self.pages.append(page)
        while page.status_code in (301, 302, 303) and self.on_site(page.headers["Location"]):
            url = self.absolute(page.headers["Location"])
            page = self.tool.request("GET", url, None)
            self.pages.append(page)
        return page

    def get(self, path_or_url: str) -> Page:
        return self.request("GET", self.absolute(path_or_url))

    def on_site(self, location: str) -> bool:
        return location.startswith("/") or location.startswith(self.base_url)

    def absolute(self, location: str) -> str:
        return self.base_url + location if location.startswith("/") else location

    def start_launch(self, login_url: str) -> LaunchForm:
        """From the LMS's link to the platform's auto-posting form."""
        check = self.request("GET", login_url)
        # pylti1p3's cookie check page; its script reloads with lti1p3_new_window=1.
        assert check.status_code == 200 and "lti1p3-warning-msg" in check.text, check.text[:300]
        to_platform = self.request("GET", login_url + "&lti1p3_new_window=1")
        assert to_platform.status_code == 302, to_platform.text[:300]
        auth = self.lms.get(to_platform.headers["Location"])
        assert auth.status_code == 200, auth.text
        return parse_form(auth.text)

    def post(self, form: LaunchForm, **changes: str) -> Page:
        return self.request("POST", form.action, {**form.fields, **changes})

    def launch(self, login_url: str) -> Page:
        return self.post(self.start_launch(login_url))

    def submit(self, page: Page, form_id: str, **data: Any) -> Page:
        """Submit a form of a tool's page, with its CSRF token."""
        html = page.text
        start = html.index(f'id="{form_id}"')
        form_html = html[html.rindex("<form", 0, start + 1) :]
        action = FORM_ACTION.search(form_html.split(">", 1)[0] + ">")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form_html)
        fields = {"csrfmiddlewaretoken": token.group(1) if token else "", **data}
        url = self.absolute(unescape(action.group(1))) if action else page.url
        return self.request("POST", url, fields)

    def signed_in_as(self) -> str | None:
        """Who the site says is signed in (the header's user name), or None."""
        page = self.tool.request("GET", self.base_url + "/", None)
        if page.status_code != 200:
            return None
        found = re.search(r'<span class="user">([^<]+)</span>', page.text)
        return unescape(found.group(1)) if found else None


@dataclass
class World:
    cast: Cast
    lms: LmsPlatform
    platform: Platform
    base_url: str
    live: bool

    def browser(self) -> Browser:
        transport: Transport = RequestsTransport() if self.live else ClientTransport()
        return Browser(self.base_url, transport)

    def link_course(self) -> LtiContext:
        """The LMS course linked to the offering, as its instructor links it."""
        context, _ = LtiContext.objects.update_or_create(
            platform=self.platform,
            context_id=self.lms.course["id"],
            defaults={
                "offering": self.cast.offering,
                "linked_by": self.cast.ines,
                "deployment_id": self.lms.deployment_id,
            },
        )
        return context


@pytest.fixture
def world(db: None, lms: LmsPlatform) -> World:
    """The site in-process over HTTPS."""
    cast = make_cast()
    return World(cast, lms, register(lms, IN_PROCESS_BASE), IN_PROCESS_BASE, live=False)


@pytest.fixture(autouse=True)
def lti_queue_empty() -> None:
    """Each test starts with the broker's `lti` queue empty: a message another test left there
    names rows of that test's database, and would run here against this one's."""
    from config.celery_app import app

    with app.connection_for_write() as connection:
        queue = app.amqp.queues[settings.LTI_PASSBACK_QUEUE].bind(connection.default_channel)
        queue.queue_declare()
        queue.purge()


@pytest.fixture
def live_world(live_server: Any, lms: LmsPlatform) -> World:
    """The site over real HTTP, for the platform to call back."""
    cast = make_cast()
    return World(cast, lms, register(lms, live_server.url), live_server.url, live=True)
