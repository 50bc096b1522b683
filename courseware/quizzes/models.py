"""Quizzes: their questions (mirrored from files) and every attempt a student makes.

A quiz is an Item of kind `quiz`; its deadlines, attempt limit and late penalty come from the
same ItemPolicy/Offering defaults as any item. QuizSettings adds what only quizzes have (the
score per attempt and when the explanation shows) for one offering. An Attempt is never changed
once written: it keeps the answer as typed, the variables drawn and the score.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from courseware.courses.models import Item, Offering


class RevealMode(models.TextChoices):
    AFTER_ATTEMPTS = "after_attempts", _("When answered right or out of attempts")
    AFTER_DEADLINE = "after_deadline", _("After the deadline")


class QuestionKind(models.TextChoices):
    SINGLE = "single", _("Single choice")
    MULTIPLE = "multiple", _("Multiple choice")
    NUMERIC = "numeric", _("Numeric")


class Quiz(models.Model):
    item = models.OneToOneField(Item, on_delete=models.CASCADE, related_name="quiz")
    reveal = models.CharField(_("explanation shows"), max_length=20, choices=RevealMode.choices)
    attempt_scores = models.JSONField(
        _("score per attempt"), default=list, help_text=_("Fractions, e.g. [1.0, 0.7, 0.5].")
    )

    class Meta:
        verbose_name_plural = _("quizzes")

    def __str__(self) -> str:
        return self.item.slug


class Question(models.Model):
    quiz = models.ForeignKey(Quiz, on_delete=models.CASCADE, related_name="questions")
    key = models.SlugField(_("id"), max_length=80)
    position = models.PositiveIntegerField(_("position"))
    kind = models.CharField(_("type"), max_length=16, choices=QuestionKind.choices)
    section = models.CharField(_("section"), max_length=50, blank=True)
    points = models.DecimalField(_("points"), max_digits=8, decimal_places=3)
    # Kept as a record of what was asked; grading reads the quiz's files, which hold the code.
    text_en = models.TextField(_("text (English)"))
    text_zh = models.TextField(_("text (Chinese)"), blank=True)
    # A question removed from the files stays (attempts point at it) but is no longer asked.
    is_active = models.BooleanField(_("active"), default=True)

    class Meta:
        ordering = ["quiz", "position"]
        constraints = [
            models.UniqueConstraint(fields=["quiz", "key"], name="question_key_unique_per_quiz")
        ]

    def __str__(self) -> str:
        return f"{self.quiz.item.slug}/{self.key}"


class QuizSettings(models.Model):
    """One offering's choices for one quiz; an empty field keeps the quiz file's default."""

    offering = models.ForeignKey(Offering, on_delete=models.CASCADE, related_name="quiz_settings")
    quiz = models.ForeignKey(Quiz, on_delete=models.CASCADE, related_name="settings")
    attempt_scores = models.JSONField(_("score per attempt"), null=True, blank=True)
    reveal = models.CharField(
        _("explanation shows"), max_length=20, choices=RevealMode.choices, blank=True
    )

    class Meta:
        verbose_name_plural = _("quiz settings")
        constraints = [
            models.UniqueConstraint(
                fields=["offering", "quiz"], name="one_quiz_settings_per_offering"
            )
        ]


class Attempt(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="quiz_attempts"
    )
    question = models.ForeignKey(Question, on_delete=models.PROTECT, related_name="attempts")
    offering = models.ForeignKey(
        Offering, on_delete=models.PROTECT, null=True, blank=True, related_name="quiz_attempts"
    )
    number = models.PositiveIntegerField(_("attempt number"))
    raw_answer = models.TextField(_("answer as typed"))
    answer = models.JSONField(_("answer as read"))  # a number in the question's unit, or ids
    variables = models.JSONField(_("variables drawn"), default=dict)
    expected = models.JSONField(_("correct answer"))  # what it was graded against
    is_correct = models.BooleanField(_("correct"))
    attempt_factor = models.DecimalField(max_digits=4, decimal_places=3)
    is_late = models.BooleanField(_("late"), default=False)
    late_days = models.PositiveIntegerField(default=0)
    score = models.DecimalField(_("score"), max_digits=8, decimal_places=3)
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["question", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "question", "offering", "number"], name="one_attempt_per_number"
            )
        ]
        indexes = [models.Index(fields=["offering", "question"])]

    def __str__(self) -> str:
        return f"{self.user} {self.question} #{self.number}"


# Short answers and their hand grades live in their own module; imported here so that Django
# finds them with the app's models.
from courseware.quizzes.short_answer_models import (  # noqa: E402, F401
    ShortAnswer,
    ShortAnswerGrade,
)
