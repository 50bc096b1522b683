"""A local LTI 1.3 platform (an LMS) that the tests run: a real HTTP server on a free port.

It does what an LMS does for a tool: starts logins (third-party initiated login), answers the
OIDC authentication request with an id_token it signs with its own RSA key (made here, RS256,
with a kid) as a form post to the tool, publishes its JWKS, issues OAuth2 access tokens for a
JWT client assertion (verified with the tool's JWKS fetched over HTTP), keeps line items and
takes scores (AGS), lists the course's members (NRPS) and takes deep linking responses.

Every message the tool sends is checked against the specifications (spec_checks.py). A
message with problems is answered 400 and its problems are kept in `violations`; the tests'
fixture fails any test that leaves one.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.lti import spec_checks as spec
from tests.lti.spec_checks import CLAIM

LIS = "http://purl.imsglobal.org/vocab/lis/v2/"
LEARNER = [LIS + "membership#Learner"]
INSTRUCTOR = [LIS + "membership#Instructor", LIS + "institution/person#Faculty"]
# How LMSes send a TA: the principal role with the TeachingAssistant sub-role.
TEACHING_ASSISTANT = [
    LIS + "membership#Instructor",
    LIS + "membership/Instructor#TeachingAssistant",
]
MENTOR = [LIS + "membership#Mentor"]
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
MEMBERS_PER_PAGE = 2  # small, so that the tool must follow the Link: rel="next" pages


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def private_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass
class LmsUser:
    sub: str
    name: str
    email: str
    roles: list[str]
    status: str = "Active"

    @property
    def given_name(self) -> str:
        return self.name.split(" ")[0]

    @property
    def family_name(self) -> str:
        return self.name.partition(" ")[2]


@dataclass
class LmsLink:
    """A placement of the tool in the course (what deep linking makes)."""

    id: str
    title: str
    url: str
    custom: dict[str, str] = field(default_factory=dict)
    lineitem: str | None = None  # the URL of its gradebook column


@dataclass
class Intent:
    """A launch the platform started and will sign when the tool asks."""

    sub: str
    link: LmsLink | None
    deep_linking: bool
    tamper: str | None
    login_hint: str = ""


@dataclass
class Received:
    at: float
    method: str
    path: str
    status: int


class LmsPlatform:
    def __init__(
        self, *, client_id: str = "tool-client-1", deployment_id: str = "deploy-1"
    ) -> None:
        self.key = new_key()
        self.kid = "platform-key-" + uuid.uuid4().hex[:8]
        self.client_id = client_id
        self.deployment_id = deployment_id
        self.users: dict[str, LmsUser] = {}
        self.links: dict[str, LmsLink] = {}
        self.lineitems: dict[str, dict[str, Any]] = {}  # URL → line item
        self.scores: list[dict[str, Any]] = []  # accepted, in order: {"lineitem", **score}
        self.ignored_scores: list[dict[str, Any]] = []  # older than the last (AGS 3.4.6)
        self.violations: list[str] = []
        self.deep_link_data = "opaque-" + uuid.uuid4().hex[:8]
        self.deep_link_results: list[list[dict[str, Any]]] = []
        self.log: list[Received] = []
        self.down_for = 0  # answer the next N service requests with 503 ("LMS down")
        self.intents: dict[str, Intent] = {}
        self.tokens: dict[str, frozenset[str]] = {}
        self.jtis: set[str] = set()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.issuer = self.url
        self.course = {"id": "course-101", "label": "GPU101", "title": "GPU Fundamentals (LMS)"}
        self.tool_login_url = self.tool_launch_url = self.tool_jwks_url = ""
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    # --- lifecycle and set-up --------------------------------------------------------------

    def start(self) -> LmsPlatform:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def register_tool(self, *, base_url: str) -> None:
        """What the LMS admin types in: the tool's login, launch (redirect) and JWKS URLs."""
        base = base_url.rstrip("/")
        self.tool_login_url = base + "/lti/login/"
        self.tool_launch_url = base + "/lti/launch/"
        self.tool_jwks_url = base + "/lti/jwks/"

    def add_user(self, sub: str, name: str, email: str, roles: list[str]) -> LmsUser:
        self.users[sub] = LmsUser(sub, name, email, roles)
        return self.users[sub]

    def add_link(
        self,
        title: str,
        *,
        custom: dict[str, str] | None = None,
        lineitem: dict[str, Any] | None = None,
    ) -> LmsLink:
        """A placement made in the LMS by hand (or by deep linking, with its line item)."""
        link = LmsLink(
            id=f"link-{len(self.links) + 1}",
            title=title,
            url=self.tool_launch_url,
            custom=dict(custom or {}),
        )
        if lineitem is not None:
            link.lineitem = self.lineitem_create({**lineitem, "resourceLinkId": link.id})["id"]
        self.links[link.id] = link
        return link

    def lineitem_create(self, body: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.url}/lineitems/{len(self.lineitems) + 1}"
        item = {**body, "id": url}
        self.lineitems[url] = item
        return item

    # --- what the tests read ------------------------------------------------------------------

    def scores_for(self, lineitem: str | None, user_sub: str) -> list[dict[str, Any]]:
        return [s for s in self.scores if s["lineitem"] == lineitem and s["userId"] == user_sub]

    def received(self, path_start: str) -> list[Received]:
        return [r for r in self.log if r.path.startswith(path_start)]

    # --- launches -----------------------------------------------------------------------------

    def login_initiation_url(
        self,
        sub: str,
        *,
        link: LmsLink | None = None,
        deep_linking: bool = False,
        tamper: str | None = None,
        issuer: str | None = None,
    ) -> str:
        """Where the LMS sends the browser to start a launch (LTI Core 5.1.1)."""
        hint = uuid.uuid4().hex
        intent = Intent(
            sub=sub, link=link, deep_linking=deep_linking, tamper=tamper, login_hint=sub
        )
        with self.lock:
            self.intents[hint] = intent
        params = {
            "iss": issuer or self.issuer,
            "login_hint": sub,
            "target_link_uri": link.url if link else self.tool_launch_url,
            "lti_message_hint": hint,
            "lti_deployment_id": self.deployment_id,
            "client_id": self.client_id,
        }
        return self.tool_login_url + "?" + urlencode(params)

    def auth_response(self, params: dict[str, str]) -> tuple[int, str]:
        """The OIDC authentication response: a page that posts the id_token to the tool."""
        problems = spec.auth_request_problems(
            params,
            client_id=self.client_id,
            redirect_uris=[self.tool_launch_url],
            login_hints=set(self.users),
        )
        intent = self.intents.get(params.get("lti_message_hint", ""))
        if intent is None:
            problems.append("lti_message_hint must be returned as the platform sent it")
        if problems:
            return self.refuse("OIDC authentication request", problems)
        assert intent is not None
        token = self.id_token(intent, nonce=params["nonce"])
        page = (
            f'<form id="lti-launch" method="post" action="{escape(params["redirect_uri"])}">'
            f'<input type="hidden" name="id_token" value="{escape(token)}">'
            f'<input type="hidden" name="state" value="{escape(params["state"])}">'
            "</form><script>document.forms[0].submit()</script>"
        )
        return 200, page

    def id_token(self, intent: Intent, *, nonce: str) -> str:
        """An id_token as LTI Core 5.3 and 5.4 describe it (and Deep Linking 2.0, 4.4)."""
        user = self.users[intent.sub]
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.client_id,
            "azp": self.client_id,
            "sub": user.sub,
            "exp": now + 300,
            "iat": now,
            "nonce": nonce,
            "name": user.name,
            "given_name": user.given_name,
            "family_name": user.family_name,
            "email": user.email,
            "locale": "en-US",
            CLAIM + "version": "1.3.0",
            CLAIM + "deployment_id": self.deployment_id,
            CLAIM + "roles": user.roles,
            CLAIM + "context": {
                **self.course,
                "type": [LIS + "course#CourseOffering"],
            },
            CLAIM + "tool_platform": {
                "guid": "test-lms-" + self.kid,
                "name": "Test LMS",
                "product_family_code": "courseware-tests",
                "version": "1.0",
            },
            CLAIM + "launch_presentation": {
                "document_target": "iframe",
                "return_url": self.url + "/return",
            },
            NRPS_CLAIM: {
                "context_memberships_url": self.url + "/memberships",
                "service_versions": ["2.0"],
            },
        }
        if intent.deep_linking:
            claims[CLAIM + "message_type"] = "LtiDeepLinkingRequest"
            claims[CLAIM + "target_link_uri"] = self.tool_launch_url
            claims[DL_SETTINGS] = self.deep_linking_settings()
        else:
            link = intent.link
            assert link is not None, "a resource link launch needs a link"
            claims[CLAIM + "message_type"] = "LtiResourceLinkRequest"
            claims[CLAIM + "target_link_uri"] = link.url
            claims[CLAIM + "resource_link"] = {"id": link.id, "title": link.title}
            claims[CLAIM + "custom"] = link.custom
            claims[AGS_CLAIM] = {
                "scope": [
                    spec.LINEITEM_SCOPE,
                    spec.LINEITEM_READ_SCOPE,
                    spec.RESULT_READ_SCOPE,
                    spec.SCORE_SCOPE,
                ],
                "lineitems": self.url + "/lineitems",
                **({"lineitem": link.lineitem} if link.lineitem else {}),
            }
        return self.sign(self.tampered(claims, intent.tamper), intent.tamper)

    def deep_linking_settings(self) -> dict[str, Any]:
        return {
            "deep_link_return_url": self.url + "/deep-link-return",
            "accept_types": ["ltiResourceLink"],
            "accept_presentation_document_targets": ["iframe", "window"],
            "accept_multiple": True,
            "accept_lineitem": True,
            "auto_create": True,
            "title": "Add from GPU Fundamentals",
            "data": self.deep_link_data,
        }

    def tampered(self, claims: dict[str, Any], tamper: str | None) -> dict[str, Any]:
        """Bad launches, for the tests of refusals."""
        if tamper == "expired":
            claims["iat"], claims["exp"] = claims["iat"] - 900, claims["iat"] - 600
        elif tamper == "unknown_deployment":
            claims[CLAIM + "deployment_id"] = "deployment-nobody-registered"
        elif tamper == "unknown_issuer":
            claims["iss"] = "https://rogue-lms.example"
        elif tamper == "no_role_here":
            claims[CLAIM + "roles"] = MENTOR
        return claims

    def sign(self, claims: dict[str, Any], tamper: str | None) -> str:
        # "wrong_key": signed by someone else's key under this platform's kid.
        key = new_key() if tamper == "wrong_key" else self.key
        return jwt.encode(
            claims, private_pem(key), algorithm="RS256", headers={"kid": self.kid, "typ": "JWT"}
        )

    def jwks(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**jwk, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    # --- services -----------------------------------------------------------------------------

    def refuse(self, what: str, problems: list[str], status: int = 400) -> tuple[int, str]:
        with self.lock:
            self.violations += [f"{what}: {p}" for p in problems]
        return status, json.dumps({"error": "invalid_request", "problems": problems})

    def tool_key(self, kid: str | None) -> Any:
        """The tool's public key for this kid, from its JWKS fetched over HTTP (as an LMS does
        with the keyset URL its admin registered)."""
        keys = requests.get(self.tool_jwks_url, timeout=10).json()["keys"]
        found = next((k for k in keys if k.get("kid") == kid), None)
        return jwt.PyJWK(found).key if found else None

    def token(self, form: dict[str, str], content_type: str | None) -> tuple[int, str]:
        problems = spec.token_request_form_problems(form, content_type)
        if problems:
            return self.refuse("token request", problems)
        assertion = form["client_assertion"]
        try:
            key = self.tool_key(jwt.get_unverified_header(assertion).get("kid"))
            if key is None:
                return self.refuse("token request", ["client assertion kid is not in the JWKS"])
            claims = jwt.decode(
                assertion,
                key,
                algorithms=["RS256"],
                audience=self.url + "/token",
                options={"require": ["exp", "iat", "iss", "sub", "aud", "jti"]},
            )
        except jwt.InvalidTokenError as exc:
            return self.refuse("token request", [f"client assertion: {exc}"])
        problems = spec.client_assertion_problems(
            claims, client_id=self.client_id, token_url=self.url + "/token"
        )
        with self.lock:
            if claims.get("jti") in self.jtis:
                problems.append("client assertion jti was used before")
            self.jtis.add(str(claims.get("jti")))
        if problems:
            return self.refuse("token request", problems)
        scopes = frozenset(form["scope"].split())
        access_token = uuid.uuid4().hex
        with self.lock:
            self.tokens[access_token] = scopes
        body = {
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": " ".join(sorted(scopes)),
        }
        return 200, json.dumps(body)

    def authorized(self, headers: Any, scope: str, what: str) -> tuple[int, str] | None:
        problems = spec.bearer_problems(headers.get("Authorization"), self.tokens, scope)
        return self.refuse(what, problems, status=401) if problems else None

    def lineitems_list(self, headers: Any, query: dict[str, str]) -> tuple[int, str, str]:
        refused = self.authorized(headers, spec.LINEITEM_READ_SCOPE, "line items") or (
            None
            if spec.accepts(headers.get("Accept"), spec.LINEITEMS_MEDIA_TYPE)
            else self.refuse("line items", [f"Accept must include {spec.LINEITEMS_MEDIA_TYPE}"])
        )
        if refused:
            return (*refused, "application/json")
        filters = {
            "resourceLinkId": query.get("resource_link_id"),
            "tag": query.get("tag"),
            "resourceId": query.get("resource_id"),
        }
        found = [
            item
            for item in self.lineitems.values()
            if all(v is None or item.get(k) == v for k, v in filters.items())
        ]
        return 200, json.dumps(found), spec.LINEITEMS_MEDIA_TYPE

    def lineitem_post(self, headers: Any, body: Any) -> tuple[int, str, str]:
        refused = self.authorized(headers, spec.LINEITEM_SCOPE, "new line item")
        problems = spec.lineitem_problems(body, headers.get("Content-Type"))
        if refused or problems:
            return (*(refused or self.refuse("new line item", problems)), "application/json")
        return 201, json.dumps(self.lineitem_create(body)), spec.LINEITEM_MEDIA_TYPE

    def score_post(self, lineitem: str, headers: Any, body: Any) -> tuple[int, str]:
        refused = self.authorized(headers, spec.SCORE_SCOPE, "score")
        if refused:
            return refused
        problems = spec.score_problems(body, headers.get("Content-Type"))
        if lineitem not in self.lineitems:
            problems.append(f"no line item {lineitem}")
        if isinstance(body, dict) and body.get("userId") not in self.users:
            problems.append(f"userId {body.get('userId')!r} is no member of the course")
        if problems:
            return self.refuse("score", problems)
        score = {"lineitem": lineitem, **body}
        with self.lock:
            earlier = [
                s for s in self.scores if (s["lineitem"], s["userId"]) == (lineitem, body["userId"])
            ]
            # AGS 3.4.6: a score older than the last one taken is not taken.
            if earlier and parse_time(body["timestamp"]) <= parse_time(earlier[-1]["timestamp"]):
                self.ignored_scores.append(score)
            else:
                self.scores.append(score)
        return 204, ""

    def memberships(self, headers: Any, query: dict[str, str]) -> tuple[int, str, dict[str, str]]:
        refused = self.authorized(headers, spec.NRPS_SCOPE, "memberships") or (
            None
            if spec.accepts(headers.get("Accept"), spec.MEMBERSHIPS_MEDIA_TYPE)
            else self.refuse("memberships", [f"Accept must include {spec.MEMBERSHIPS_MEDIA_TYPE}"])
        )
        if refused:
            return (*refused, {"Content-Type": "application/json"})
        page = int(query.get("page", "1"))
        everyone = list(self.users.values())
        shown = everyone[(page - 1) * MEMBERS_PER_PAGE : page * MEMBERS_PER_PAGE]
        body = {
            "id": self.url + "/memberships",
            "context": {k: self.course[k] for k in ("id", "label", "title")},
            "members": [
                {
                    "status": u.status,
                    "name": u.name,
                    "given_name": u.given_name,
                    "family_name": u.family_name,
                    "email": u.email,
                    "user_id": u.sub,
                    "roles": u.roles,
                }
                for u in shown
            ],
        }
        headers_out = {"Content-Type": spec.MEMBERSHIPS_MEDIA_TYPE}
        if page * MEMBERS_PER_PAGE < len(everyone):
            headers_out["Link"] = f'<{self.url}/memberships?page={page + 1}>; rel="next"'
        return 200, json.dumps(body), headers_out

    def deep_link_return(self, form: dict[str, str]) -> tuple[int, str]:
        """Takes the tool's LtiDeepLinkingResponse and makes a link per content item."""
        token = form.get("JWT", "")
        try:
            key = self.tool_key(jwt.get_unverified_header(token).get("kid"))
            if key is None:
                return self.refuse("deep linking response", ["its kid is not in the tool's JWKS"])
            claims = jwt.decode(token, key, algorithms=["RS256"], audience=self.issuer)
        except jwt.InvalidTokenError as exc:
            return self.refuse("deep linking response", [str(exc)])
        problems = spec.deep_linking_response_problems(
            claims,
            client_id=self.client_id,
            issuer=self.issuer,
            deployment_id=self.deployment_id,
            request_settings=self.deep_linking_settings(),
        )
        if problems:
            return self.refuse("deep linking response", problems)
        items = claims[spec.DL_CLAIM + "content_items"]
        for item in items:
            self.add_link(
                item.get("title") or "Untitled",
                custom=item.get("custom"),
                lineitem=item.get("lineItem"),
            )
        self.deep_link_results.append(items)
        return 200, f"<p id='added'>{len(items)} added</p>"


def parse_time(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class PlatformHandler(BaseHTTPRequestHandler):
    """The platform's HTTP endpoints; `platform` is set on a subclass per server."""

    platform: LmsPlatform

    def log_message(self, format: str, *args: Any) -> None:  # quiet in the test output
        pass

    def reply(
        self,
        status: int,
        body: str,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        data = body.encode()
        extra = dict(headers or {})
        self.send_response(status)
        self.send_header("Content-Type", extra.pop("Content-Type", content_type))
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.platform.log.append(Received(time.monotonic(), self.command, self.path, status))

    def lms_down(self) -> bool:
        """While `down_for` lasts, every service request (not the browser's pages) gets 503."""
        with self.platform.lock:
            if self.platform.down_for <= 0:
                return False
            self.platform.down_for -= 1
        self.reply(503, '{"error": "temporarily unavailable"}')
        return True

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = dict(parse_qsl(parts.query))
        lms = self.platform
        if parts.path == "/jwks":
            self.reply(200, json.dumps(lms.jwks()))
        elif parts.path == "/auth":
            self.reply(*lms.auth_response(query), content_type="text/html")
        elif self.lms_down():
            return
        elif parts.path == "/lineitems":
            status, body, media = lms.lineitems_list(self.headers, query)
            self.reply(status, body, media)
        elif parts.path == "/memberships":
            status, body, headers = lms.memberships(self.headers, query)
            self.reply(status, body, headers=headers)
        else:
            item = lms.lineitems.get(lms.url + parts.path)
            self.reply(200 if item else 404, json.dumps(item or {}), spec.LINEITEM_MEDIA_TYPE)

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        form = dict(parse_qsl(raw.decode(errors="replace")))
        lms = self.platform
        if path == "/auth":  # the authentication request may be a form post too
            self.reply(*lms.auth_response(form), content_type="text/html")
        elif path == "/deep-link-return":
            self.reply(*lms.deep_link_return(form), content_type="text/html")
        elif self.lms_down():
            return
        elif path == "/token":
            self.reply(*lms.token(form, self.headers.get("Content-Type")))
        elif path == "/lineitems":
            status, body, media = lms.lineitem_post(self.headers, json_or_none(raw))
            self.reply(status, body, media)
        elif path.startswith("/lineitems/") and path.endswith("/scores"):
            lineitem = lms.url + path.removesuffix("/scores")
            self.reply(*lms.score_post(lineitem, self.headers, json_or_none(raw)))
        else:
            self.reply(404, "{}")


def make_handler(platform: LmsPlatform) -> type[BaseHTTPRequestHandler]:
    return type("BoundPlatformHandler", (PlatformHandler,), {"platform": platform})


def json_or_none(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None
