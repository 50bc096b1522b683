"""The admin's view of submissions: for looking, never for changing what graders or people did.

Gradings are written only by the grading task, and hand grades and overrides only through the
site's forms (services.manual_grade_record / override_record), which check the score's range,
set the author and move the submission's status. Here they are read-only; saved comments are
the one thing staff may tidy up by hand.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from courseware.courses.admin_scope import OfferingScopedAdmin
from courseware.submissions.models import (
    Grading,
    ManualGrade,
    Override,
    RegradeBatch,
    SavedComment,
    Submission,
)


class ReadOnlyAdmin(OfferingScopedAdmin):
    """Rows that record what happened: shown, never added, changed or deleted by hand, and
    only to the staff of their offering."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class GradingInline(ReadOnlyInline):
    model = Grading
    fields = ("created_at", "verdict", "score", "max_score", "worker", "duration_s")
    readonly_fields = fields


class OverrideInline(ReadOnlyInline):
    model = Override
    fields = ("created_at", "author", "score", "comment")
    readonly_fields = fields


class ManualGradeInline(ReadOnlyInline):
    model = ManualGrade
    fields = ("created_at", "grade_id", "author", "score", "comment")
    readonly_fields = fields


@admin.register(Submission)
class SubmissionAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "user", "item", "status", "created_at", "is_late")
    list_filter = ("status", "item")
    list_select_related = ("user", "item")
    search_fields = ("user__username", "item__slug")
    inlines = [GradingInline, ManualGradeInline, OverrideInline]
    readonly_fields = [f.name for f in Submission._meta.fields]


@admin.register(Grading)
class GradingAdmin(ReadOnlyAdmin):
    offering_lookup = "submission__offering"
    list_display = ("__str__", "verdict", "score", "max_score", "created_at", "worker")
    list_filter = ("verdict",)
    list_select_related = ("submission__item", "submission__user")
    readonly_fields = [f.name for f in Grading._meta.fields]


@admin.register(Override)
class OverrideAdmin(ReadOnlyAdmin):
    offering_lookup = "submission__offering"
    """Overrides are made on the submission's page, which sets the author to whoever is
    logged in and checks the score; here they are listed."""

    list_display = ("__str__", "author", "score", "comment", "created_at")
    list_select_related = ("submission__item", "author")
    readonly_fields = [f.name for f in Override._meta.fields]


@admin.register(ManualGrade)
class ManualGradeAdmin(ReadOnlyAdmin):
    offering_lookup = "submission__offering"
    list_display = ("submission", "grade_id", "author", "score", "created_at")
    list_select_related = ("submission__item", "submission__user", "author")
    readonly_fields = [f.name for f in ManualGrade._meta.fields]


@admin.register(RegradeBatch)
class RegradeBatchAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "requested_by", "created_at")
    list_select_related = ("item", "offering", "requested_by")
    readonly_fields = ("item", "offering", "scope", "requested_by", "created_at")
    exclude = ("submissions",)


@admin.register(SavedComment)
class SavedCommentAdmin(admin.ModelAdmin):
    list_display = ("item", "grade_id", "text", "author", "times_used")
    list_filter = ("item",)
    list_select_related = ("item", "author")
    readonly_fields = ("author", "times_used", "created_at")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # kept from the grading form, which sets the author; edited or removed here
