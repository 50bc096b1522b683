from django.contrib import admin
from django.http import HttpRequest

from courseware.submissions.models import Grading, Override, Submission


class GradingInline(admin.TabularInline):
    model = Grading
    extra = 0
    can_delete = False
    fields = ("created_at", "verdict", "score", "max_score", "worker", "duration_s")
    readonly_fields = fields


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "user", "item", "status", "created_at", "is_late")
    list_filter = ("status", "item")
    inlines = [GradingInline]
    readonly_fields = [f.name for f in Submission._meta.fields]

    def has_delete_permission(self, request: HttpRequest, obj: Submission | None = None) -> bool:
        return False


@admin.register(Override)
class OverrideAdmin(admin.ModelAdmin):
    list_display = ("submission", "author", "score", "created_at")
