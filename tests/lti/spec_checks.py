"""What the LTI 1.3 specifications require of the messages a TOOL sends, written from the
specifications themselves (not from the tool's code), for the test platform to check.

* LTI Security Framework 1.0, 5.1.1.2: the OIDC authentication request.
* LTI Security Framework 1.0, 4.1 (RFC 6749 4.4, RFC 7523): the token request with a signed
  JWT client assertion.
* Assignment and Grade Services 2.0, 3.2 and 3.4: line items and the score publish service.
* Names and Role Provisioning Services 2.0, 2.2: the membership request.
* Deep Linking 2.0, 4.2: the LtiDeepLinkingResponse.

Each function returns the problems found (empty: the message is right), so the platform can
answer 400 with them and the test can show every one.
"""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import urlsplit

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
LINEITEM_READ_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
RESULT_READ_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
SCOPES = frozenset(
    {SCORE_SCOPE, LINEITEM_SCOPE, LINEITEM_READ_SCOPE, RESULT_READ_SCOPE, NRPS_SCOPE}
)

SCORE_MEDIA_TYPE = "application/vnd.ims.lis.v1.score+json"
LINEITEM_MEDIA_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS_MEDIA_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
MEMBERSHIPS_MEDIA_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

# AGS 2.0, 3.4.7 and 3.4.8.
ACTIVITY_PROGRESS = frozenset({"Initialized", "Started", "InProgress", "Submitted", "Completed"})
GRADING_PROGRESS = frozenset({"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"})
SCORE_FIELDS = frozenset(
    {
        "userId",
        "scoreGiven",
        "scoreMaximum",
        "comment",
        "timestamp",
        "activityProgress",
        "gradingProgress",
        "submission",
    }
)
# ISO 8601 date and time with the time zone (AGS 3.4.6: "MUST ... include the time zone").
ISO_8601_WITH_OFFSET = re.compile(
    r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
)
CLOCK_SKEW_S = 60


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def media_type(header: str | None) -> str:
    return (header or "").split(";")[0].strip().lower()


def auth_request_problems(
    params: dict[str, str], *, client_id: str, redirect_uris: list[str], login_hints: set[str]
) -> list[str]:
    """The tool's OIDC authentication request (Security Framework 5.1.1.2)."""
    problems = []
    expected = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": client_id,
    }
    for name, value in expected.items():
        if params.get(name) != value:
            problems.append(f"{name} must be {value!r}, got {params.get(name)!r}")
    if params.get("redirect_uri") not in redirect_uris:
        problems.append(f"redirect_uri {params.get('redirect_uri')!r} is not registered")
    if params.get("login_hint") not in login_hints:
        problems.append("login_hint is not one the platform issued")
    for name in ("state", "nonce"):
        if not params.get(name):
            problems.append(f"{name} is required")
    return problems


def token_request_form_problems(form: dict[str, str], content_type: str | None) -> list[str]:
    """The access token request (Security Framework 4.1.1; RFC 6749 4.4.2; RFC 7523 2.2)."""
    problems = []
    if media_type(content_type) != "application/x-www-form-urlencoded":
        problems.append(f"token request must be form-encoded, not {content_type!r}")
    if form.get("grant_type") != "client_credentials":
        problems.append(f"grant_type must be client_credentials, got {form.get('grant_type')!r}")
    if form.get("client_assertion_type") != JWT_BEARER:
        problems.append(f"client_assertion_type must be {JWT_BEARER}")
    if not form.get("client_assertion"):
        problems.append("client_assertion is required")
    scopes = (form.get("scope") or "").split()
    if not scopes:
        problems.append("scope is required (space-separated)")
    problems += [f"unknown scope {s!r}" for s in scopes if s not in SCOPES]
    return problems


def client_assertion_problems(
    claims: dict[str, Any], *, client_id: str, token_url: str
) -> list[str]:
    """The JWT client assertion's claims (Security Framework 4.1.1, RFC 7523 3); its signature
    was verified with the tool's JWKS before this."""
    problems = []
    if claims.get("iss") != client_id:
        problems.append("client assertion iss must be the client id")
    if claims.get("sub") != client_id:
        problems.append("client assertion sub must be the client id")
    aud = claims.get("aud")
    if token_url not in (aud if isinstance(aud, list) else [aud]):
        problems.append("client assertion aud must name the token endpoint")
    for name in ("iat", "exp"):
        if not is_number(claims.get(name)):
            problems.append(f"client assertion needs a numeric {name}")
    if not claims.get("jti"):
        problems.append("client assertion needs a jti")
    return problems


def bearer_problems(
    authorization: str | None, tokens: dict[str, frozenset[str]], scope: str
) -> list[str]:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme != "Bearer" or token not in tokens:
        return ["service requests need Authorization: Bearer <a token the platform issued>"]
    if scope not in tokens[token]:
        return [f"the access token was not granted {scope}"]
    return []


def score_problems(body: object, content_type: str | None) -> list[str]:
    """A score publish (AGS 2.0, 3.4)."""
    if media_type(content_type) != SCORE_MEDIA_TYPE:
        return [f"Content-Type must be {SCORE_MEDIA_TYPE}, got {content_type!r}"]
    if not isinstance(body, dict):
        return ["the score must be a JSON object"]
    problems = []
    if not isinstance(body.get("userId"), str) or not body["userId"]:
        problems.append("userId (the LTI user id, a string) is required")
    if body.get("activityProgress") not in ACTIVITY_PROGRESS:
        problems.append(f"activityProgress {body.get('activityProgress')!r} is not allowed")
    if body.get("gradingProgress") not in GRADING_PROGRESS:
        problems.append(f"gradingProgress {body.get('gradingProgress')!r} is not allowed")
    timestamp = body.get("timestamp")
    if not isinstance(timestamp, str) or not ISO_8601_WITH_OFFSET.match(timestamp):
        problems.append(f"timestamp {timestamp!r} is not ISO 8601 with a time zone")
    if "scoreGiven" in body:
        if not is_number(body["scoreGiven"]) or body["scoreGiven"] < 0:
            problems.append("scoreGiven must be a number >= 0")
        if "scoreMaximum" not in body:
            problems.append("scoreMaximum is required with scoreGiven")
    if "scoreMaximum" in body and (
        not is_number(body["scoreMaximum"]) or body["scoreMaximum"] <= 0
    ):
        problems.append("scoreMaximum must be a number > 0")
    # Extensions are allowed, named by a fully qualified URL (AGS 3.4.1).
    problems += [
        f"unknown score field {key!r} (extensions are named by a URL)"
        for key in body
        if key not in SCORE_FIELDS and not key.startswith(("http://", "https://"))
    ]
    return problems


def lineitem_problems(body: object, content_type: str | None) -> list[str]:
    """A new line item (AGS 2.0, 3.2)."""
    if media_type(content_type) != LINEITEM_MEDIA_TYPE:
        return [f"Content-Type must be {LINEITEM_MEDIA_TYPE}, got {content_type!r}"]
    if not isinstance(body, dict):
        return ["the line item must be a JSON object"]
    problems = []
    if not is_number(body.get("scoreMaximum")) or body["scoreMaximum"] <= 0:
        problems.append("scoreMaximum must be a number > 0")
    if not isinstance(body.get("label"), str) or not body["label"].strip():
        problems.append("label is required")
    return problems


def accepts(accept: str | None, wanted: str) -> bool:
    return any(media_type(part) in (wanted, "*/*") for part in (accept or "").split(","))


def deep_linking_response_problems(
    claims: dict[str, Any],
    *,
    client_id: str,
    issuer: str,
    deployment_id: str,
    request_settings: dict[str, Any],
) -> list[str]:
    """The LtiDeepLinkingResponse (Deep Linking 2.0, 4.2), its signature already verified."""
    problems = jwt_claims_problems(claims, issuer=client_id, audience=issuer)
    if claims.get(CLAIM + "message_type") != "LtiDeepLinkingResponse":
        problems.append("message_type must be LtiDeepLinkingResponse")
    if claims.get(CLAIM + "version") != "1.3.0":
        problems.append("version must be 1.3.0")
    if claims.get(CLAIM + "deployment_id") != deployment_id:
        problems.append("deployment_id must be the request's")
    if "data" in request_settings and claims.get(DL_CLAIM + "data") != request_settings["data"]:
        problems.append("data must be returned exactly as the request sent it")
    items = claims.get(DL_CLAIM + "content_items")
    if not isinstance(items, list):
        return [*problems, "content_items must be an array"]
    if len(items) > 1 and request_settings.get("accept_multiple") is False:
        problems.append("several content items, but the request accepts one")
    for n, item in enumerate(items):
        problems += [
            f"content item {n}: {p}" for p in content_item_problems(item, request_settings)
        ]
    return problems


def jwt_claims_problems(claims: dict[str, Any], *, issuer: str, audience: str) -> list[str]:
    """The claims every LTI message JWT carries (LTI Core 5.1.2; Deep Linking 2.0, 4.2)."""
    problems = []
    if claims.get("iss") != issuer:
        problems.append("iss must be the tool's client id")
    aud = claims.get("aud")
    if audience not in (aud if isinstance(aud, list) else [aud]):
        problems.append("aud must be the platform's issuer")
    now = time.time()
    if not is_number(claims.get("exp")) or claims["exp"] < now - CLOCK_SKEW_S:
        problems.append("exp is missing or past")
    if not is_number(claims.get("iat")) or claims["iat"] > now + CLOCK_SKEW_S:
        problems.append("iat is missing or in the future")
    if not claims.get("nonce"):
        problems.append("nonce is required")
    return problems


def content_item_problems(item: object, request_settings: dict[str, Any]) -> list[str]:
    """One content item (Deep Linking 2.0, 3: types; 3.4: ltiResourceLink)."""
    if not isinstance(item, dict):
        return ["must be an object"]
    problems = []
    if item.get("type") not in request_settings.get("accept_types", []):
        problems.append(f"type {item.get('type')!r} is not one the request accepts")
    if item.get("type") != "ltiResourceLink":
        return problems
    url = item.get("url")
    if url is not None and (
        not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https")
    ):
        problems.append("url must be an absolute URL")
    if "title" in item and not isinstance(item["title"], str):
        problems.append("title must be a string")
    custom = item.get("custom", {})
    if not isinstance(custom, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in custom.items()
    ):
        problems.append("custom must map strings to strings")
    if item.get("lineItem") is not None:
        problems += line_item_problems(item["lineItem"], request_settings)
    return problems


def line_item_problems(line_item: object, request_settings: dict[str, Any]) -> list[str]:
    """A content item's lineItem: the LMS makes a gradebook column of it."""
    problems = []
    if request_settings.get("accept_lineitem") is False:
        problems.append("lineItem sent, but the request does not accept line items")
    if not isinstance(line_item, dict) or not is_number(line_item.get("scoreMaximum")):
        return [*problems, "lineItem.scoreMaximum is required"]
    if line_item["scoreMaximum"] <= 0:
        problems.append("lineItem.scoreMaximum must be > 0")
    problems += [
        f"lineItem.{name} must be a string"
        for name in ("label", "resourceId", "tag")
        if name in line_item and not isinstance(line_item[name], str)
    ]
    return problems
