"""The TA's similarity pages: start a run, follow its progress, read the ranked pairs and one
pair side by side. Course staff only; a student gets the review pages' 403 (or a 404 for a run
of another offering, which does not say whether it exists)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.models import ItemKind
from courseware.courses.selectors import item_list_published
from courseware.refusals import Refused
from courseware.similarity import compare, selectors, services
from courseware.similarity.models import SimilarityRun
from courseware.submissions.review_views import refused_to_non_staff
from courseware.submissions.selectors import offerings_staffed


def visible_run(request: AuthenticatedHttpRequest, run_id: int) -> SimilarityRun:
    run = selectors.run_visible(user=request.user, run_id=run_id)
    if run is None:
        raise Http404("No such similarity report")
    return run


def start(request: AuthenticatedHttpRequest) -> HttpResponse | None:
    offering = offerings_staffed(user=request.user).filter(pk=request.POST.get("offering") or 0)
    item = item_list_published().filter(slug=request.POST.get("exercise", "")).first()
    if not offering.exists():
        messages.error(request, _("Choose one of your offerings."))
        return None
    if item is None:
        messages.error(request, _("Choose a coding exercise of this offering's course."))
        return None
    try:
        run = services.run_start(item=item, offering=offering.get(), requested_by=request.user)
    except Refused as refused:
        messages.error(request, refused.message)
        return None
    return redirect("similarity-run", run_id=run.pk)


@login_required
@require_http_methods(["GET", "POST"])
def similarity_index(request: AuthenticatedHttpRequest) -> HttpResponse:
    refusal = refused_to_non_staff(request)
    if refusal is not None:
        return refusal
    if request.method == "POST":
        started = start(request)
        if started is not None:
            return started
    context = {
        "offerings": offerings_staffed(user=request.user),
        "exercises": item_list_published().filter(kind=ItemKind.EXERCISE),
        "chosen": request.POST,
        "runs": selectors.runs_for(user=request.user),
        "flag_at": round(compare.FLAG_AT * 100),
    }
    return render(request, "similarity/index.html", context)


@login_required
def similarity_run(request: AuthenticatedHttpRequest, run_id: int) -> HttpResponse:
    run = visible_run(request, run_id)
    context = {
        "run": run,
        "progress": selectors.progress_of(run),
        "pairs": selectors.pairs_of(run),
        "flag_at": round(compare.FLAG_AT * 100),
        "list_at": round(compare.LIST_AT * 100),
    }
    return render(request, "similarity/run.html", context)


@login_required
def similarity_progress(request: AuthenticatedHttpRequest, run_id: int) -> JsonResponse:
    return JsonResponse(selectors.progress_of(visible_run(request, run_id)).as_json())


@login_required
def similarity_pair(request: AuthenticatedHttpRequest, run_id: int, pair_id: int) -> HttpResponse:
    run = visible_run(request, run_id)
    pair = get_object_or_404(selectors.pairs_of(run), pk=pair_id)
    context = {
        "run": run,
        "pair": pair,
        "first_pieces": compare.marked(pair.first.source, pair.first_spans),
        "second_pieces": compare.marked(pair.second.source, pair.second_spans),
    }
    return render(request, "similarity/pair.html", context)
