"""Deep Linking 2.0: an instructor picks items of the offering, and the tool answers the LMS
with a signed LtiDeepLinkingResponse of LtiResourceLink content items, each with a line item so
that the LMS makes a gradebook column for it (which the passback then fills)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from pylti1p3.deep_link import DeepLink
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.lineitem import LineItem

from courseware.courses.models import Offering
from courseware.gradebook.numbers import score_for_export
from courseware.gradebook.selectors import GradebookColumn, gradebook_columns
from courseware.lti.provisioning import ITEM_PARAMETER

SETTINGS_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
DATA_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
MSG_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/msg"


@dataclass(frozen=True)
class PickerSettings:
    """What the LMS accepts back (the request's deep_linking_settings)."""

    accept_multiple: bool
    accept_lineitem: bool
    return_url: str

    @classmethod
    def from_claims(cls, body: dict[str, Any]) -> PickerSettings:
        settings = body.get(SETTINGS_CLAIM) or {}
        return cls(
            accept_multiple=truthy(settings.get("accept_multiple", True)),
            accept_lineitem=truthy(settings.get("accept_lineitem", True)),
            return_url=str(settings.get("deep_link_return_url") or ""),
        )


def truthy(value: object) -> bool:
    # The specification's examples write booleans; some platforms send "true"/"false".
    return value is True or (isinstance(value, str) and value.lower() == "true")


def items_to_offer(offering: Offering) -> list[GradebookColumn]:
    """What can be linked: the gradebook's items (published exercises, notebooks, quizzes), in
    the order students meet them, since each link's score is that item's gradebook score."""
    return gradebook_columns(offering)


def content_item(
    column: GradebookColumn, *, launch_url: str, language: str | None, with_lineitem: bool
) -> DeepLinkResource:
    title = column.title(language)
    resource = (
        DeepLinkResource()
        .set_type("ltiResourceLink")
        .set_title(title)
        .set_url(launch_url)
        .set_custom_params({ITEM_PARAMETER: column.slug})
    )
    maximum = float(score_for_export(column.max_score))
    if with_lineitem and maximum > 0:
        resource.set_lineitem(
            LineItem()
            .set_score_maximum(maximum)
            .set_label(title)
            .set_resource_id(column.slug)
            .set_tag(column.slug)
        )
    return resource


def response_jwt(deep_link: DeepLink, resources: list[DeepLinkResource]) -> str:
    """The signed response. The data claim is echoed only when the request had one (pylti1p3
    would send null), and `msg` tells the instructor in the LMS what was added."""
    message = deep_link.get_message_jwt(resources)
    if message.get(DATA_CLAIM) is None:
        del message[DATA_CLAIM]
    message[MSG_CLAIM] = ngettext(
        "%(n)d item added from GPU Fundamentals.",
        "%(n)d items added from GPU Fundamentals.",
        len(resources),
    ) % {"n": len(resources)}
    return str(deep_link.encode_jwt(message))


def nothing_chosen() -> str:
    return _("Choose at least one item.")
