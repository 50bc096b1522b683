from django.contrib import admin

from courseware.courses.models import Course, Enrolment, Item, ItemPolicy, Offering


@admin.register(Course)
class CourseAdmin(admin.ModelAdmin):
    list_display = ("slug", "title")


@admin.register(Offering)
class OfferingAdmin(admin.ModelAdmin):
    list_display = ("course", "slug", "title", "is_active")


@admin.register(Enrolment)
class EnrolmentAdmin(admin.ModelAdmin):
    list_display = ("user", "offering", "role")
    list_filter = ("offering", "role")


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ("slug", "kind", "chapter", "is_published", "content_hash")
    readonly_fields = ("content_hash", "source_path", "synced_at")


@admin.register(ItemPolicy)
class ItemPolicyAdmin(admin.ModelAdmin):
    list_display = ("item", "offering", "due_at", "late_until", "max_attempts")
