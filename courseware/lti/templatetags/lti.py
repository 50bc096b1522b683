"""{% lti_sent_link offering %}: the gradebook's link to what was sent to the LMS, shown only
for an offering linked to an LMS course."""

from __future__ import annotations

from decimal import Decimal

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from courseware.courses.models import Offering, Role
from courseware.gradebook.numbers import score_for_people
from courseware.lti.models import LtiContext

register = template.Library()


@register.simple_tag
def lti_sent_link(offering: Offering) -> SafeString | str:
    if not LtiContext.objects.filter(offering=offering).exists():
        return ""
    return format_html(
        '<a href="{}#sends" id="lti-sent-link">{}</a>',
        reverse("lti-offering", args=[offering.pk]),
        _("Scores sent to the LMS"),
    )


@register.filter
def score(value: Decimal | None) -> str:
    """A score written as the gradebook writes it (5.7, 9.38, 10)."""
    return score_for_people(value)


@register.filter
def role_label(code: str) -> str:
    """A role's code ("ta") in the reader's language ("Teaching assistant")."""
    return str(Role(code).label) if code in Role.values else code


@register.simple_tag
def lti_offering_link(offering: Offering) -> SafeString:
    """The instructor pages' link to an offering's LMS page."""
    return format_html(
        '<a href="{}" id="lti-offering-link">{}</a>',
        reverse("lti-offering", args=[offering.pk]),
        _("LMS (LTI)"),
    )


@register.simple_tag
def lti_platforms_link() -> SafeString:
    return format_html(
        '<a class="button secondary" href="{}" id="lti-platforms-link">{}</a>',
        reverse("lti-platforms"),
        _("LMS platforms (LTI 1.3)"),
    )
