"""The instructor pages. Views only translate HTTP: access.py says who may, the services and
selectors of this app do the work.

TAs of an offering may open its overview, previews and statistics (they help the students with
the same items); extensions, the roster and content sync are for its instructors.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import SetPasswordForm
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from courseware.accounts.auth import AuthenticatedHttpRequest
from courseware.courses.models import Item, ItemKind, Role
from courseware.courses.selectors import policies_for
from courseware.instructor import access
from courseware.instructor.content_report import content_report
from courseware.instructor.extensions import extension_grant, extension_list, extension_revoke
from courseware.instructor.forms import ExtensionForm, QuizVariantForm, RosterForm
from courseware.instructor.preview import Variant, exercise_preview, quiz_preview
from courseware.instructor.roster import roster_import, roster_text
from courseware.instructor.statistics import exercise_statistics, quiz_statistics
from courseware.refusals import Refused
from courseware.submissions.models import Submission


@login_required
def index(request: AuthenticatedHttpRequest) -> HttpResponse:
    staffed = access.refuse_unless_staff(user=request.user)
    context = {
        "staffed": staffed,
        "can_sync": access.can_manage_content(user=request.user),
    }
    return render(request, "instructor/index.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def content(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Check the content files, or sync them into the site, and show the report."""
    if not access.can_manage_content(user=request.user):
        raise PermissionDenied(_("Only instructors may sync the course content."))
    report = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action not in ("check", "sync"):
            messages.error(request, _("Press “Check the files” or “Sync into the site”."))
        else:
            report = content_report(write=action == "sync")
    context = {"report": report, "items": Item.objects.order_by("kind", "chapter", "slug")}
    return render(request, "instructor/content.html", context)


def _item_of(offering_course_id: int, slug: str) -> Item:
    item = Item.objects.filter(slug=slug, course_id=offering_course_id).first()
    if item is None:
        raise Http404("No such item")
    return item


@login_required
def offering_home(request: AuthenticatedHttpRequest, offering_id: int) -> HttpResponse:
    staffed = access.offering_for_staff(user=request.user, offering_id=offering_id, manage=False)
    offering = staffed.offering
    items = list(Item.objects.filter(course_id=offering.course_id, is_published=True))
    policies = policies_for(offering=offering, items=items)
    students = offering.enrolments.filter(role=Role.STUDENT)
    counts = dict(
        Submission.objects.filter(offering=offering, user_id__in=students.values("user_id"))
        .values_list("item_id")
        .annotate(n=Count("user_id", distinct=True))
    )
    rows = [(item, policies[item.pk], counts.get(item.pk)) for item in items]
    context = {
        "staffed": staffed,
        "offering": offering,
        "rows": rows,
        "students": students.count(),
        "extensions": offering.extensions.count(),
    }
    return render(request, "instructor/offering.html", context)


@login_required
def preview(request: AuthenticatedHttpRequest, offering_id: int, slug: str) -> HttpResponse:
    staffed = access.offering_for_staff(user=request.user, offering_id=offering_id, manage=False)
    offering = staffed.offering
    item = _item_of(offering.course_id, slug)
    language = get_language()
    context: dict[str, object] = {
        "offering": offering,
        "item": item,
        "title": item.title(language),
    }
    if item.kind != ItemKind.QUIZ:
        context["preview"] = exercise_preview(offering=offering, item=item, language=language)
        return render(request, "instructor/preview_exercise.html", context)
    form = QuizVariantForm(request.GET or None, offering=offering)
    variant = Variant()
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        variant = Variant(
            student=data["student"], attempt=data["attempt"] or 1, seed=data["seed"] or 0
        )
    context["form"] = form
    if not form.is_bound or form.is_valid():
        context["preview"] = quiz_preview(item=item, variant=variant, language=language)
    return render(request, "instructor/preview_quiz.html", context)


@login_required
def statistics(request: AuthenticatedHttpRequest, offering_id: int, slug: str) -> HttpResponse:
    staffed = access.offering_for_staff(user=request.user, offering_id=offering_id, manage=False)
    offering = staffed.offering
    item = _item_of(offering.course_id, slug)
    language = get_language()
    context: dict[str, object] = {"offering": offering, "item": item, "title": item.title(language)}
    if item.kind == ItemKind.QUIZ:
        context["quiz"] = quiz_statistics(offering=offering, item=item, language=language)
    else:
        context["exercise"] = exercise_statistics(offering=offering, item=item)
    return render(request, "instructor/statistics.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def extensions(request: AuthenticatedHttpRequest, offering_id: int) -> HttpResponse:
    staffed = access.offering_for_staff(user=request.user, offering_id=offering_id, manage=True)
    offering = staffed.offering
    form = ExtensionForm(request.POST or None, offering=offering)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            extension = extension_grant(
                offering=offering,
                item=data["item"],
                student=data["student"],
                due_at=data["due_at"],
                late_until=data["late_until"],
                reason=data["reason"],
                granted_by=request.user,
            )
        except Refused as refused:
            form.add_error(None, refused.message)
        else:
            messages.success(
                request,
                _("Extension saved: %(user)s, %(item)s.")
                % {"user": extension.user.username, "item": extension.item.slug},
            )
            return redirect("instructor-extensions", offering_id=offering.pk)
    context = {"offering": offering, "form": form, "extensions": extension_list(offering=offering)}
    return render(request, "instructor/extensions.html", context)


@login_required
@require_POST
def extension_remove(
    request: AuthenticatedHttpRequest, offering_id: int, extension_id: int
) -> HttpResponse:
    staffed = access.offering_for_staff(user=request.user, offering_id=offering_id, manage=True)
    try:
        extension = extension_revoke(offering=staffed.offering, extension_id=extension_id)
    except Refused as refused:
        messages.error(request, refused.message)
    else:
        messages.success(
            request,
            _("Extension revoked: %(user)s, %(item)s. Their deadline is the item's again.")
            % {"user": extension.user.username, "item": extension.item.slug},
        )
    return redirect("instructor-extensions", offering_id=offering_id)


@login_required
@require_http_methods(["GET", "POST"])
def roster(request: AuthenticatedHttpRequest, offering_id: int) -> HttpResponse:
    staffed = access.offering_for_staff(user=request.user, offering_id=offering_id, manage=True)
    offering = staffed.offering
    form = RosterForm(request.POST or None, request.FILES or None)
    report = None
    if request.method == "POST" and form.is_valid():
        try:
            text = roster_text(form.cleaned_data["file"].read())
            report = roster_import(offering=offering, text=text)
        except Refused as refused:
            form.add_error("file", refused.message)
    links = {}
    if report is not None:
        for row in report.created:
            assert row.set_password is not None
            path = reverse("instructor-set-password", args=list(row.set_password))
            links[row.line] = request.build_absolute_uri(path)
    enrolments = offering.enrolments.select_related("user").order_by("role", "user__username")
    context = {
        "offering": offering,
        "form": form,
        "report": report,
        "links": links,
        "enrolments": enrolments,
    }
    return render(request, "instructor/roster.html", context)


class SetPasswordView(auth_views.PasswordResetConfirmView):
    """Where a person enrolled from a roster chooses their first password (the link works once)."""

    template_name = "instructor/set_password.html"
    success_url = reverse_lazy("login")
    post_reset_login = False

    def form_valid(self, form: SetPasswordForm) -> HttpResponse:
        response = super().form_valid(form)
        messages.success(self.request, _("Your password is set. Log in with it."))
        return response
