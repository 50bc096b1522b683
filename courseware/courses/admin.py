"""The admin for running a course: offerings, deadlines (item policies), enrolments and
per-student extensions. Instructors reach it through the "Course instructors" group."""

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from courseware.courses.admin_scope import OfferingScopedAdmin
from courseware.courses.models import Course, Enrolment, Extension, Item, ItemPolicy, Offering


@admin.register(Course)
class CourseAdmin(admin.ModelAdmin):
    list_display = ("slug", "title")


@admin.register(Offering)
class OfferingAdmin(OfferingScopedAdmin):
    offering_lookup = ""
    list_display = ("course", "slug", "title", "is_active", "default_max_attempts")
    list_filter = ("course", "is_active")


@admin.register(Enrolment)
class EnrolmentAdmin(OfferingScopedAdmin):
    list_display = ("user", "user_email", "offering", "role", "created_at")
    list_filter = ("offering", "role")
    search_fields = ("user__username", "user__email", "user__first_name", "user__last_name")
    list_select_related = ("user", "offering__course")

    @admin.display(description=_("email"), ordering="user__email")
    def user_email(self, enrolment: Enrolment) -> str:
        return enrolment.user.email


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("slug", "kind", "chapter", "is_published", "content_hash")
    list_filter = ("kind", "chapter", "is_published")
    readonly_fields = ("content_hash", "source_path", "synced_at")


@admin.register(ItemPolicy)
class ItemPolicyAdmin(OfferingScopedAdmin):
    list_display = (
        "item",
        "offering",
        "opens_at",
        "due_at",
        "late_until",
        "max_attempts",
        "late_penalty_per_day",
    )
    list_filter = ("offering", "item__kind", "item__chapter")
    search_fields = ("item__slug", "item__title_en")
    list_select_related = ("item", "offering__course")
    ordering = ("offering", "due_at")


@admin.register(Extension)
class ExtensionAdmin(OfferingScopedAdmin):
    list_display = ("user", "item", "offering", "due_at", "late_until", "granted_by", "granted_at")
    list_filter = ("offering", "item")
    search_fields = ("user__username", "item__slug", "reason")
    list_select_related = ("user", "item", "offering__course", "granted_by")
    readonly_fields = ("granted_by", "granted_at")

    def save_model(self, request: HttpRequest, obj: Extension, form: object, change: bool) -> None:
        # Who granted it is whoever saved it here, never a field to type in.
        if obj.granted_by_id is None and request.user.is_authenticated:
            obj.granted_by = request.user
        super().save_model(request, obj, form, change)
