"""Regrading every submission of an exercise after its tests changed, with the progress shown.

One offering at a time (a TA's work is per offering), and either the latest submission of each
student (the default: quick, and what a student looks at) or every submission (needed when the
gradebook, which counts each student's best, must be redone). The progress page
reloads itself through a small JSON endpoint; without JavaScript it has a reload link.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.selectors import item_list_published
from courseware.refusals import Refused
from courseware.submissions import selectors, services
from courseware.submissions.models import RegradeBatch, RegradeScope
from courseware.submissions.review_views import refused_to_non_staff


def _batch(request: AuthenticatedHttpRequest, batch_id: int) -> RegradeBatch:
    batch = selectors.regrade_batch_visible(user=request.user, batch_id=batch_id)
    if batch is None:
        raise Http404("No such regrade")
    return batch


def _start(request: AuthenticatedHttpRequest) -> HttpResponse | None:
    """Start the batch the form asks for; None (with a message) when the form is not right."""
    offering = (
        selectors.offerings_staffed(user=request.user)
        .filter(pk=request.POST.get("offering") or 0)
        .first()
    )
    if offering is None:
        messages.error(request, _("Choose one of your offerings."))
        return None
    item = item_list_published().filter(slug=request.POST.get("exercise", "")).first()
    if item is None or item.course_id != offering.course_id:
        messages.error(request, _("Choose an exercise of this offering's course."))
        return None
    try:
        batch = services.exercise_regrade(
            item=item,
            offering=offering,
            scope=request.POST.get("scope", ""),
            requested_by=request.user,
        )
    except Refused as refused:
        messages.error(request, refused.message)
        return None
    return redirect("regrade-batch", batch_id=batch.pk)


@login_required
@require_http_methods(["GET", "POST"])
def regrade_start(request: AuthenticatedHttpRequest) -> HttpResponse:
    refusal = refused_to_non_staff(request)
    if refusal is not None:
        return refusal
    if request.method == "POST":
        started = _start(request)
        if started is not None:
            return started
    context = {
        "offerings": selectors.offerings_staffed(user=request.user),
        "exercises": item_list_published(),
        "scopes": RegradeScope.choices,
        "chosen": request.POST,
        "batches": selectors.regrade_batches_for(user=request.user),
    }
    return render(request, "courseware/regrade_start.html", context)


@login_required
def regrade_batch(request: AuthenticatedHttpRequest, batch_id: int) -> HttpResponse:
    batch = _batch(request, batch_id)
    progress = selectors.regrade_progress(batch)
    return render(request, "courseware/regrade_batch.html", {"batch": batch, "progress": progress})


@login_required
def regrade_progress(request: AuthenticatedHttpRequest, batch_id: int) -> JsonResponse:
    return JsonResponse(selectors.regrade_progress(_batch(request, batch_id)).as_json())
