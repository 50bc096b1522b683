"""Reads about courses: who may do what, and which policy applies to an item."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.contrib.auth.models import User
from django.db.models import QuerySet

from courseware.courses.models import (
    Enrolment,
    Extension,
    Item,
    ItemKind,
    ItemPolicy,
    Offering,
    Role,
)


@dataclass(frozen=True)
class EffectivePolicy:
    opens_at: datetime | None
    due_at: datetime | None
    late_until: datetime | None
    max_attempts: int | None
    late_penalty_per_day: Decimal
    # The student's own extension moved due_at/late_until (the page may say so).
    extended: bool = False

    @property
    def closes_at(self) -> datetime | None:
        return closes_at(due_at=self.due_at, late_until=self.late_until)


def closes_at(*, due_at: datetime | None, late_until: datetime | None) -> datetime | None:
    """The last moment work is accepted: the end of the late window, if any, else the due
    date; None when there is no deadline."""
    if due_at is None:
        return None
    if late_until is not None and late_until > due_at:
        return late_until
    return due_at


SUBMITTABLE_KINDS = (ItemKind.EXERCISE, ItemKind.NOTEBOOK)


def item_list_published(*, kinds: tuple[str, ...] = SUBMITTABLE_KINDS) -> QuerySet[Item]:
    """Published items that take submissions (coding and notebook exercises) by default."""
    return Item.objects.filter(is_published=True, kind__in=kinds)


def item_get_published(*, slug: str) -> Item | None:
    return Item.objects.filter(slug=slug, is_published=True).select_related("course").first()


def enrolment_for_item(*, user: User, item: Item) -> Enrolment | None:
    """The user's enrolment in an active offering of the item's course (the newest if several)."""
    return (
        Enrolment.objects.filter(
            user=user, offering__course_id=item.course_id, offering__is_active=True
        )
        .select_related("offering")
        .order_by("-offering_id")
        .first()
    )


def enrolment_exists(*, user: User) -> bool:
    """Whether the user takes part in any running offering (else the dashboard says so)."""
    return Enrolment.objects.filter(user=user, offering__is_active=True).exists()


def user_is_staff_of(*, user: User, offering: Offering | None) -> bool:
    """TAs and instructors of the offering (and site superusers) see everyone's work."""
    if getattr(user, "is_superuser", False):
        return True
    if offering is None:
        return False
    return Enrolment.objects.filter(
        user=user, offering=offering, role__in=[Role.TA, Role.INSTRUCTOR]
    ).exists()


def policy_for(*, offering: Offering, item: Item, user: User | None = None) -> EffectivePolicy:
    """The item's policy in the offering; for `user`, with their own extension applied."""
    return effective_policy(
        offering=offering,
        policy=ItemPolicy.objects.filter(offering=offering, item=item).first(),
        extension=extension_for(offering=offering, item=item, user=user),
    )


def extension_for(*, offering: Offering, item: Item, user: User | None) -> Extension | None:
    if user is None or user.pk is None:
        return None
    return Extension.objects.filter(offering=offering, item=item, user=user).first()


def policies_for(
    *, offering: Offering, items: list[Item], user: User | None = None
) -> dict[int, EffectivePolicy]:
    """policy_for for many items of one offering in two queries: item id → its policy."""
    ids = [i.pk for i in items]
    own = {p.item_id: p for p in ItemPolicy.objects.filter(offering=offering, item__in=ids)}
    extensions: dict[int, Extension] = {}
    if user is not None and user.pk is not None:
        extensions = {
            e.item_id: e
            for e in Extension.objects.filter(offering=offering, item__in=ids, user=user)
        }
    return {
        item.pk: effective_policy(
            offering=offering, policy=own.get(item.pk), extension=extensions.get(item.pk)
        )
        for item in items
    }


def effective_policy(
    *, offering: Offering, policy: ItemPolicy | None, extension: Extension | None = None
) -> EffectivePolicy:
    """An item's own policy with the offering's defaults filled in where it leaves a gap, and a
    student's extension over its dates."""
    max_attempts = offering.default_max_attempts
    penalty = offering.default_late_penalty_per_day
    if policy is None:
        return EffectivePolicy(None, None, None, max_attempts, penalty)
    due_at, late_until = policy.due_at, policy.late_until
    extended = False
    if extension is not None and due_at is not None:
        due_at, late_until = extended_dates(
            due_at=due_at,
            late_until=late_until,
            extended_due=extension.due_at,
            extended_late=extension.late_until,
        )
        extended = (due_at, late_until) != (policy.due_at, policy.late_until)
    return EffectivePolicy(
        opens_at=policy.opens_at,
        due_at=due_at,
        late_until=late_until,
        max_attempts=policy.max_attempts if policy.max_attempts is not None else max_attempts,
        late_penalty_per_day=(
            policy.late_penalty_per_day if policy.late_penalty_per_day is not None else penalty
        ),
        extended=extended,
    )


def extended_dates(
    *,
    due_at: datetime,
    late_until: datetime | None,
    extended_due: datetime | None,
    extended_late: datetime | None,
) -> tuple[datetime, datetime | None]:
    """The student's (due, late until): each date the later of the policy's and the
    extension's, so an extension never takes time away (an item with no deadline keeps none)."""
    due = max(due_at, extended_due) if extended_due is not None else due_at
    if extended_late is None:
        return due, late_until
    return due, max(late_until, extended_late) if late_until is not None else extended_late


def offering_ids_staffed_by(*, user: User) -> list[int] | None:
    """The offerings this user teaches or assists in; None means all (a site superuser)."""
    if getattr(user, "is_superuser", False):
        return None
    return list(
        Enrolment.objects.filter(user=user, role__in=[Role.TA, Role.INSTRUCTOR]).values_list(
            "offering_id", flat=True
        )
    )
