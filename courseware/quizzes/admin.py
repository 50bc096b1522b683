from django.contrib import admin
from django.http import HttpRequest

from courseware.courses.admin_scope import OfferingScopedAdmin
from courseware.quizzes.models import Attempt, Question, Quiz, QuizSettings


class QuestionInline(admin.TabularInline):
    model = Question
    extra = 0
    can_delete = False
    fields = ("position", "key", "kind", "section", "points", "is_active")
    readonly_fields = fields


@admin.register(Quiz)
class QuizAdmin(admin.ModelAdmin):
    list_display = ("item", "reveal")
    inlines = [QuestionInline]


@admin.register(QuizSettings)
class QuizSettingsAdmin(OfferingScopedAdmin):
    list_display = ("quiz", "offering", "reveal", "attempt_scores")


@admin.register(Attempt)
class AttemptAdmin(OfferingScopedAdmin):
    list_display = ("user", "question", "number", "raw_answer", "is_correct", "score", "is_late")
    list_filter = ("question__quiz", "is_correct")
    readonly_fields = [f.name for f in Attempt._meta.fields]

    def has_delete_permission(self, request: HttpRequest, obj: Attempt | None = None) -> bool:
        return False
