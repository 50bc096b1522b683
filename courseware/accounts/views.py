"""The signed-in user's own account pages: their API token."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from courseware.accounts.api_tokens import token_of, token_replace
from courseware.accounts.auth import AuthenticatedHttpRequest


@login_required
@require_http_methods(["GET", "POST"])
def api_token(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Show the user's token, for the command-line client; a POST makes one or replaces it.

    A GET never makes a token, so opening the page (or a crawler following the link) leaves
    nothing behind; the student asks for one with the button."""
    if request.method == "POST":
        had_one = token_of(user=request.user) is not None
        token_replace(user=request.user)
        messages.success(
            request,
            _("Your new token is below. The old one no longer works: log in again with it.")
            if had_one
            else _("Your token is below."),
        )
        return redirect("api-token")
    context = {
        "token": token_of(user=request.user),
        "server": request.build_absolute_uri("/").rstrip("/"),
    }
    return render(request, "accounts/api_token.html", context)
