"""Short answers to a quiz's "explain your reasoning" items, and the TAs' grades of them.

The items themselves live in the quiz's files (courseware/quizzes/short_spec.py), keyed by the
quiz Item and the item's id. A student has one answer per item and offering, which they may
rewrite until it is graded or the quiz closes; each grade a TA saves is a new row (the latest
counts), with the points per criterion, so the history of who graded what stays.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from courseware.courses.models import Item, Offering


class ShortAnswer(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="short_answers"
    )
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="short_answers")
    offering = models.ForeignKey(
        Offering, on_delete=models.PROTECT, null=True, blank=True, related_name="short_answers"
    )
    key = models.SlugField(_("item id"), max_length=80)
    text = models.TextField(_("answer"))
    is_late = models.BooleanField(_("late"), default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["item", "key", "user"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "item", "offering", "key"], name="one_short_answer_per_item"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.item.slug}/{self.key}"


class ShortAnswerGrade(models.Model):
    answer = models.ForeignKey(ShortAnswer, on_delete=models.CASCADE, related_name="grades")
    grader = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="short_answer_grades"
    )
    points = models.JSONField(_("points per criterion"))  # {criterion id: "1.0"}
    score = models.DecimalField(_("score"), max_digits=8, decimal_places=3)
    comment = models.TextField(_("comment"), blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["answer", "-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.answer} {self.score}"
