"""The admin as a course's staff see it: only the rows of the offerings they teach.

Instructors reach the admin through the "Course instructors" group, whose model permissions
are not per offering; without this, an instructor of one offering could read and change
another's deadlines, enrolments and submissions there. Site superusers see everything.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import ForeignKey, QuerySet
from django.forms import ModelChoiceField
from django.http import HttpRequest

from courseware.courses.models import Enrolment, Offering, Role
from courseware.courses.selectors import offering_ids_staffed_by


class OfferingScopedAdmin(admin.ModelAdmin):
    """``offering_lookup`` is the path from this model to its Offering ("" for Offering)."""

    offering_lookup = "offering"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        rows = super().get_queryset(request)
        ids = offering_ids_staffed_by(user=request.user)  # type: ignore[arg-type]
        if ids is None:
            return rows
        return rows.filter(**{f"{self.offering_lookup or 'pk'}__in": ids})

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> ModelChoiceField[Any] | None:
        # A new row can only name an offering its author teaches.
        ids = offering_ids_staffed_by(user=request.user)  # type: ignore[arg-type]
        if db_field.related_model is Offering and ids is not None:
            kwargs["queryset"] = Offering.objects.filter(pk__in=ids)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        # Whoever opens an offering teaches it, or it would vanish from their own lists.
        if isinstance(obj, Offering) and not change and not request.user.is_superuser:
            Enrolment.objects.get_or_create(
                user=request.user, offering=obj, defaults={"role": Role.INSTRUCTOR}
            )
