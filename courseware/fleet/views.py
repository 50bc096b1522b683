"""The fleet page, for instructors: every worker with its state, and the queues per kind."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.fleet.selectors import fleet_overview
from courseware.instructor import access


@login_required
def fleet(request: AuthenticatedHttpRequest) -> HttpResponse:
    # The fleet grades every offering's work, so it is for instructors of any offering (the
    # rule of the content sync page); it shows which submission a worker grades, not whose.
    if not access.can_manage_content(user=request.user):
        raise PermissionDenied(_("Only instructors may see the grading workers."))
    return render(request, "fleet/fleet.html", {"fleet": fleet_overview()})
