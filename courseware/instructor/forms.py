"""The instructor pages' forms: they read and check the input; the services decide."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.utils.translation import gettext_lazy as _

from courseware.courses.models import Item, Offering, Role


class LocalDateTimeInput(forms.DateTimeInput):
    """The browser's date-and-time picker; the value is read in the viewer's time zone."""

    input_type = "datetime-local"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(format="%Y-%m-%dT%H:%M", **kwargs)


class StudentChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        name = obj.get_full_name()
        return f"{obj.username} ({name})" if name else obj.username


class ItemChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.slug} · {obj.get_kind_display()}"


class ExtensionForm(forms.Form):
    student = StudentChoiceField(queryset=User.objects.none(), label=_("Student"))
    item = ItemChoiceField(queryset=Item.objects.none(), label=_("Exercise or quiz"))
    due_at = forms.DateTimeField(
        label=_("New due date"),
        required=False,
        widget=LocalDateTimeInput(),
        help_text=_("Lateness and the late penalty count from this date."),
    )
    late_until = forms.DateTimeField(
        label=_("Late work accepted until"),
        required=False,
        widget=LocalDateTimeInput(),
        help_text=_("Empty: the item's own late window, if it ends after the new due date."),
    )
    reason = forms.CharField(
        label=_("Reason"), max_length=2000, widget=forms.Textarea(attrs={"rows": 2})
    )

    def __init__(self, *args: Any, offering: Offering, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        student_field = self.fields["student"]
        item_field = self.fields["item"]
        assert isinstance(student_field, forms.ModelChoiceField)
        assert isinstance(item_field, forms.ModelChoiceField)
        student_field.queryset = User.objects.filter(
            enrolments__offering=offering, enrolments__role=Role.STUDENT
        ).order_by("username")
        item_field.queryset = Item.objects.filter(
            course_id=offering.course_id, is_published=True
        ).order_by("chapter", "position", "slug")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("due_at") and not data.get("late_until") and not self.errors:
            raise forms.ValidationError(_("Set a new due date, a new end of late work, or both."))
        return data


class RosterForm(forms.Form):
    file = forms.FileField(
        label=_("CSV file"),
        help_text=_(
            "Columns: username,email,first_name,last_name and optionally role "
            "(student, ta or instructor; empty: student)."
        ),
    )


class QuizVariantForm(forms.Form):
    """Whose numbers to show: a student's attempt, else a seed."""

    student = forms.CharField(
        label=_("Student's username"),
        required=False,
        max_length=150,
        help_text=_("Shows the numbers this student gets; empty: use the seed."),
    )
    attempt = forms.IntegerField(
        label=_("Attempt number"), min_value=1, max_value=99, initial=1, required=False
    )
    seed = forms.IntegerField(
        label=_("Seed"), min_value=0, max_value=2**63 - 1, initial=1, required=False
    )

    def __init__(self, *args: Any, offering: Offering, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.offering = offering

    def clean_student(self) -> User | None:
        username = (self.cleaned_data.get("student") or "").strip()
        if not username:
            return None
        user = User.objects.filter(username=username, enrolments__offering=self.offering).first()
        if user is None:
            raise forms.ValidationError(
                _("Nobody named %(name)s is enrolled in this offering."),
                params={"name": username},
            )
        return user
