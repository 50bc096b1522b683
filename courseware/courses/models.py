"""Courses, their terms (offerings), who takes part in them, and the gradable items.

Course → Offering (one term of a course) → Enrolment (a user's role in that offering).
An Item is one gradable piece of course content (a coding exercise, a notebook or a quiz),
synced from files under `exercises/`. ItemPolicy sets deadlines, attempts and lateness for one
item in one offering; where it leaves a field empty, the offering's default applies.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _


class Course(models.Model):
    slug = models.SlugField(_("slug"), unique=True)
    title = models.CharField(_("title"), max_length=200)

    class Meta:
        verbose_name = _("course")
        verbose_name_plural = _("courses")

    def __str__(self) -> str:
        return self.title


class Offering(models.Model):
    """One term of a course, with the default policy for its items."""

    course = models.ForeignKey(Course, on_delete=models.PROTECT, related_name="offerings")
    slug = models.SlugField(_("slug"), help_text=_("The term, e.g. 2026-fall."))
    title = models.CharField(_("title"), max_length=200)
    is_active = models.BooleanField(_("active"), default=True)
    default_max_attempts = models.PositiveIntegerField(
        _("default attempt limit"), null=True, blank=True, help_text=_("Empty: unlimited.")
    )
    default_late_penalty_per_day = models.DecimalField(
        _("default late penalty per day"),
        max_digits=4,
        decimal_places=3,
        default=0,
        help_text=_("Fraction of the score taken off per day late, e.g. 0.1."),
    )
    max_pending_per_student = models.PositiveIntegerField(
        _("pending submissions allowed per student"),
        null=True,
        blank=True,
        help_text=_("Empty: the site's default."),
    )

    class Meta:
        verbose_name = _("offering")
        verbose_name_plural = _("offerings")
        constraints = [
            models.UniqueConstraint(fields=["course", "slug"], name="offering_unique_per_course")
        ]

    def __str__(self) -> str:
        return f"{self.course.slug}/{self.slug}"


class Role(models.TextChoices):
    STUDENT = "student", _("Student")
    TA = "ta", _("Teaching assistant")
    INSTRUCTOR = "instructor", _("Instructor")


class Enrolment(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrolments"
    )
    offering = models.ForeignKey(Offering, on_delete=models.CASCADE, related_name="enrolments")
    role = models.CharField(_("role"), max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("enrolment")
        verbose_name_plural = _("enrolments")
        constraints = [
            models.UniqueConstraint(fields=["user", "offering"], name="one_role_per_offering")
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.role} in {self.offering}"


class ItemKind(models.TextChoices):
    EXERCISE = "exercise", _("Coding exercise")
    NOTEBOOK = "notebook", _("Notebook exercise")
    QUIZ = "quiz", _("Quiz")


class Item(models.Model):
    """A gradable piece of content, mirrored from its folder under `exercises/`."""

    course = models.ForeignKey(Course, on_delete=models.PROTECT, related_name="items")
    kind = models.CharField(_("kind"), max_length=16, choices=ItemKind.choices)
    # Slugs are unique across chapters so that the API can name an item by its slug alone.
    slug = models.SlugField(_("slug"), max_length=100, unique=True)
    chapter = models.CharField(_("chapter"), max_length=50)
    # Where students meet it within its chapter: set by sync_content from the chapter's
    # chapter.toml (0 for a chapter without one, which then lists its items by slug).
    position = models.PositiveIntegerField(_("position in the chapter"), default=0)
    title_en = models.CharField(_("title (English)"), max_length=200)
    title_zh = models.CharField(_("title (Chinese)"), max_length=200, blank=True)
    source_path = models.CharField(
        _("folder"), max_length=500, help_text=_("Relative to the exercises root.")
    )
    content_hash = models.CharField(_("content hash"), max_length=64)
    max_score = models.DecimalField(_("maximum score"), max_digits=8, decimal_places=3)
    device_kinds = models.JSONField(_("device kinds that may grade it"), default=list)
    is_published = models.BooleanField(_("published"), default=False)
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("item")
        verbose_name_plural = _("items")
        ordering = ["chapter", "position", "slug"]

    def __str__(self) -> str:
        return self.slug

    def title(self, language: str | None) -> str:
        if language and language.startswith("zh") and self.title_zh:
            return self.title_zh
        return self.title_en


class ItemPolicy(models.Model):
    """Deadline, attempts and lateness for one item in one offering."""

    offering = models.ForeignKey(Offering, on_delete=models.CASCADE, related_name="policies")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="policies")
    opens_at = models.DateTimeField(_("opens at"), null=True, blank=True)
    due_at = models.DateTimeField(_("due at"), null=True, blank=True)
    late_until = models.DateTimeField(
        _("late submissions accepted until"),
        null=True,
        blank=True,
        help_text=_("Empty: nothing is accepted after the deadline."),
    )
    max_attempts = models.PositiveIntegerField(
        _("attempt limit"), null=True, blank=True, help_text=_("Empty: the offering's default.")
    )
    late_penalty_per_day = models.DecimalField(
        _("late penalty per day"), max_digits=4, decimal_places=3, null=True, blank=True
    )

    class Meta:
        verbose_name = _("item policy")
        verbose_name_plural = _("item policies")
        constraints = [
            models.UniqueConstraint(fields=["offering", "item"], name="one_policy_per_item")
        ]

    def __str__(self) -> str:
        return f"{self.item} in {self.offering}"


class Extension(models.Model):
    """One student's own deadline for one item in one offering, granted by its staff.

    Where it sets a date, that date replaces the item's policy for this student only, but never
    moves a deadline earlier: an extension cannot cost the student anything, even after the
    policy itself is later moved.
    """

    offering = models.ForeignKey(Offering, on_delete=models.CASCADE, related_name="extensions")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="extensions")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="extensions",
        verbose_name=_("student"),
    )
    due_at = models.DateTimeField(_("extended due date"), null=True, blank=True)
    late_until = models.DateTimeField(
        _("late work accepted until"),
        null=True,
        blank=True,
        help_text=_("Empty: the item's own late window, if any."),
    )
    reason = models.TextField(_("reason"))
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("granted by"),
    )
    granted_at = models.DateTimeField(_("granted at"), auto_now_add=True)

    class Meta:
        verbose_name = _("extension")
        verbose_name_plural = _("extensions")
        ordering = ["-granted_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["offering", "item", "user"], name="one_extension_per_student_and_item"
            )
        ]

    def __str__(self) -> str:
        return f"{self.item} for {self.user} in {self.offering}"

    def clean(self) -> None:
        if self.due_at is None and self.late_until is None:
            raise ValidationError(_("Set a new due date, a new end of late work, or both."))
        if self.due_at and self.late_until and self.late_until < self.due_at:
            raise ValidationError(
                {"late_until": _("Late work must end on or after the extended due date.")}
            )
