"""The gradebook for TAs and instructors, on screen and as CSV."""

from __future__ import annotations

import csv

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.models import Offering
from courseware.courses.selectors import offering_ids_staffed_by, user_is_staff_of
from courseware.gradebook.selectors import Gradebook, gradebook_for, offerings_for_gradebook


@login_required
def gradebook_index(request: AuthenticatedHttpRequest) -> HttpResponse:
    offerings = offerings_for_gradebook(offering_ids=offering_ids_staffed_by(user=request.user))
    return render(request, "courseware/gradebook_index.html", {"offerings": offerings})


@login_required
def gradebook_detail(request: AuthenticatedHttpRequest, offering_id: int) -> HttpResponse:
    offering = get_object_or_404(Offering, pk=offering_id)
    if not user_is_staff_of(user=request.user, offering=offering):
        raise Http404("No such gradebook")
    book = gradebook_for(offering=offering)
    if request.GET.get("format") == "csv":
        return _as_csv(book)
    table = [(row, [row.scores.get(slug) for slug, _ in book.columns]) for row in book.rows]
    return render(request, "courseware/gradebook.html", {"book": book, "table": table})


def _as_csv(book: Gradebook) -> HttpResponse:
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = f"grades-{book.offering.course.slug}-{book.offering.slug}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    writer = csv.writer(response)
    writer.writerow(["username", *[slug for slug, _ in book.columns], "total", "pending_review"])
    writer.writerow(["(max)", *[str(top) for _, top in book.columns], "", ""])
    for row in book.rows:
        scores = [row.scores.get(slug) for slug, _ in book.columns]
        writer.writerow(
            [
                row.username,
                *["" if s is None else str(s) for s in scores],
                str(row.total()),
                row.pending_review,
            ]
        )
    return response
