"""The staff's LTI pages: registering an LMS (with the addresses its administrator needs), and
an offering's LMS page (linked courses, what each LMS link opens, the roster sync and every
score sent to the LMS).

Registering an LMS is for instructors; an offering's page is for its staff (TAs see what was
sent), and changing what it links is for its instructors.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.models import Offering
from courseware.instructor import access
from courseware.lti.addresses import tool_addresses
from courseware.lti.deep_linking import items_to_offer
from courseware.lti.forms import DeploymentForm, PlatformForm
from courseware.lti.keys import NoToolKey, public_jwk, signing_key
from courseware.lti.models import (
    Deployment,
    LtiContext,
    Platform,
    ResourceLink,
    ScoreSend,
    SendStatus,
)
from courseware.lti.passback import score_send_again
from courseware.lti.provisioning import context_link, course_item
from courseware.lti.roster import roster_sync
from courseware.refusals import Refused

SENDS_SHOWN = 200


@login_required
@require_http_methods(["GET", "POST"])
def platforms(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Register an LMS; add a deployment ID to one; read the tool's addresses and key."""
    if not access.can_manage_content(user=request.user):
        raise PermissionDenied(_("Only instructors may register an LMS."))
    form = PlatformForm(request.POST if request.POST.get("action") == "register" else None)
    deployment_form = DeploymentForm(
        request.POST if request.POST.get("action") == "deployment" else None
    )
    if form.is_bound and form.is_valid():
        with transaction.atomic():
            platform = form.save(commit=False)
            platform.registered_by = request.user
            platform.save()
            for deployment_id in form.deployment_list():
                Deployment.objects.create(platform=platform, deployment_id=deployment_id)
        messages.success(request, _("%(name)s is registered.") % {"name": platform.name})
        return redirect("lti-platforms")
    if deployment_form.is_bound and deployment_form.is_valid():
        data = deployment_form.cleaned_data
        Deployment.objects.create(platform=data["platform"], deployment_id=data["deployment_id"])
        messages.success(request, _("Deployment ID added."))
        return redirect("lti-platforms")
    try:
        key = signing_key()
        jwk, public_pem = public_jwk(key.public_key_pem), key.public_key_pem
    except NoToolKey:
        jwk, public_pem = None, ""
    context = {
        "form": form,
        "deployment_form": deployment_form,
        "platforms": Platform.objects.prefetch_related("deployments"),
        "addresses": tool_addresses(request),
        "jwk": jwk,
        "public_pem": public_pem,
    }
    status = 400 if (form.is_bound or deployment_form.is_bound) else 200
    return render(request, "lti/platforms.html", context, status=status)


@login_required
def offering_page(request: AuthenticatedHttpRequest, offering_id: int) -> HttpResponse:
    staffed = access.offering_for_staff(user=request.user, offering_id=offering_id, manage=False)
    offering = staffed.offering
    contexts = list(
        LtiContext.objects.filter(offering=offering)
        .select_related("platform")
        .prefetch_related("links__item", "syncs")
    )
    sends = (
        ScoreSend.objects.filter(offering=offering)
        .select_related("user", "item", "link__context")
        .order_by("-created_at", "-id")
    )
    page = {
        "offering": offering,
        "can_manage": staffed.can_manage,
        "contexts": contexts,
        "unlinked": (
            LtiContext.objects.filter(offering__isnull=True).select_related("platform")
            if staffed.can_manage
            else []
        ),
        "items": items_to_offer(offering),
        "sends": sends[:SENDS_SHOWN],
        "send_count": sends.count(),
        "language": get_language(),
    }
    return render(request, "lti/offering.html", page)


def managed_offering(request: AuthenticatedHttpRequest, offering_id: int) -> Offering:
    return access.offering_for_staff(
        user=request.user, offering_id=offering_id, manage=True
    ).offering


def back(offering: Offering, anchor: str) -> HttpResponse:
    return redirect(reverse("lti-offering", args=[offering.pk]) + anchor)


@login_required
@require_POST
def offering_link(request: AuthenticatedHttpRequest, offering_id: int) -> HttpResponse:
    """Link an LMS course (seen at a launch) to this offering, or unlink it."""
    offering = managed_offering(request, offering_id)
    context_id = str(request.POST.get("context") or "")
    context = LtiContext.objects.filter(pk=context_id).first() if context_id.isdigit() else None
    if context is None:
        messages.error(request, _("Choose an LMS course from the list."))
        return back(offering, "#courses")
    if request.POST.get("action") == "unlink":
        if context.offering_id == offering.pk:
            LtiContext.objects.filter(pk=context.pk).update(offering=None, linked_by=None)
            messages.success(request, _("%(course)s is unlinked.") % {"course": context})
        return back(offering, "#courses")
    try:
        context_link(context=context, offering=offering, user=request.user)
    except Refused as refused:
        messages.error(request, refused.message)
    else:
        messages.success(request, _("%(course)s is linked to this offering.") % {"course": context})
    return back(offering, "#courses")


@login_required
@require_POST
def resource_link(request: AuthenticatedHttpRequest, offering_id: int) -> HttpResponse:
    """Choose which item an LMS link of this offering's courses opens."""
    offering = managed_offering(request, offering_id)
    link_id = str(request.POST.get("link") or "")
    link = (
        ResourceLink.objects.filter(pk=link_id, context__offering=offering).first()
        if link_id.isdigit()
        else None
    )
    item = course_item(offering, str(request.POST.get("item") or ""))
    if link is None or item is None:
        messages.error(request, _("Choose a link and the item it opens."))
        return back(offering, "#links")
    if link.item_id != item.pk:
        # Another item is another gradebook column: the LMS's column is found again.
        link.item, link.lineitem_url = item, ""
        link.save(update_fields=["item", "lineitem_url"])
    messages.success(
        request, _("The LMS link %(link)s opens %(item)s.") % {"link": link, "item": item.slug}
    )
    return back(offering, "#links")


@login_required
@require_POST
def roster_sync_view(request: AuthenticatedHttpRequest, offering_id: int) -> HttpResponse:
    offering = managed_offering(request, offering_id)
    context_id = str(request.POST.get("context") or "")
    context = (
        LtiContext.objects.filter(pk=context_id, offering=offering)
        .select_related("platform")
        .first()
        if context_id.isdigit()
        else None
    )
    if context is None:
        messages.error(request, _("Choose a linked LMS course to sync."))
        return back(offering, "#courses")
    try:
        sync = roster_sync(context=context, requested_by=request.user)
    except Refused as refused:
        messages.error(request, refused.message)
        return back(offering, "#courses")
    if sync.error:
        messages.error(
            request,
            _("The LMS did not give the roster (%(error)s). Nothing was changed; try again later.")
            % {"error": sync.error[:200]},
        )
    else:
        messages.success(request, _("Roster synced; the report is below."))
    return back(offering, f"#sync-{sync.pk}" if not sync.error else "#courses")


@login_required
@require_POST
def send_again(request: AuthenticatedHttpRequest, offering_id: int) -> HttpResponse:
    """Send a score that failed (or waits on a lost message) again, as the gradebook has it."""
    staffed = access.offering_for_staff(user=request.user, offering_id=offering_id, manage=False)
    send_id = str(request.POST.get("send") or "")
    send = (
        ScoreSend.objects.filter(pk=send_id, offering=staffed.offering).first()
        if send_id.isdigit()
        else None
    )
    if send is None or send.status in (SendStatus.SENT, SendStatus.SKIPPED):
        messages.error(request, _("Only a score not sent yet can be sent again."))
    else:
        score_send_again(send=send)
        messages.success(request, _("Sending again: the new line is at the top."))
    return back(staffed.offering, "#sends")
