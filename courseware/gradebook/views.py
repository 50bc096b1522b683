"""The gradebook for TAs and instructors: on screen, and as a CSV for Canvas's import."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.models import Offering
from courseware.courses.selectors import offering_ids_staffed_by, user_is_staff_of
from courseware.gradebook.export import export_filename, write_canvas_csv
from courseware.gradebook.filters import MARKS, GradebookFilterForm, filtered_rows
from courseware.gradebook.selectors import gradebook_for, offerings_for_gradebook
from courseware.gradebook.table import MARK_KINDS, gradebook_table


def _staffed_offering(request: AuthenticatedHttpRequest, offering_id: int) -> Offering:
    """The offering, if this user teaches or assists in it; 404 alike for one that does not
    exist and one of another course, so the id tells a stranger nothing."""
    offering = get_object_or_404(Offering.objects.select_related("course"), pk=offering_id)
    if not user_is_staff_of(user=request.user, offering=offering):
        raise Http404("No such gradebook")
    return offering


@login_required
def gradebook_index(request: AuthenticatedHttpRequest) -> HttpResponse:
    offering_ids = offering_ids_staffed_by(user=request.user)
    if offering_ids == []:
        # Refused outright, not an empty list: only staff have a gradebook to open.
        refusal = _("The gradebook is for the TAs and instructors of a course.")
        return render(request, "courseware/gradebook_index.html", {"refusal": refusal}, status=403)
    offerings = offerings_for_gradebook(offering_ids=offering_ids)
    return render(request, "courseware/gradebook_index.html", {"offerings": offerings})


@login_required
def gradebook_detail(request: AuthenticatedHttpRequest, offering_id: int) -> HttpResponse:
    offering = _staffed_offering(request, offering_id)
    if "format" in request.GET:
        # The address the export had before it had its own.
        if request.GET["format"] == "csv":
            return redirect("gradebook-export", offering_id=offering.pk)
        messages.error(
            request, _("Unknown format: download the CSV with the “Export for Canvas” link.")
        )
        return redirect("gradebook-detail", offering_id=offering.pk)
    book = gradebook_for(offering=offering)
    form = GradebookFilterForm(request.GET)
    rows = filtered_rows(book.rows, form)
    context = {
        "book": book,
        "form": form,
        "table": gradebook_table(book, rows, language=get_language()),
        "shown": len(rows),
        "marks": MARK_KINDS,
        "filter_fields": [(form[m.name], m) for m in MARK_KINDS if m.name in MARKS],
    }
    return render(request, "courseware/gradebook.html", context)


@login_required
def gradebook_export(request: AuthenticatedHttpRequest, offering_id: int) -> HttpResponse:
    book = gradebook_for(offering=_staffed_offering(request, offering_id))
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{export_filename(book)}"'
    write_canvas_csv(book, response)
    return response
