"""Reads about courses: who may do what, and which policy applies to an item."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.contrib.auth.models import User
from django.db.models import QuerySet

from courseware.courses.models import Enrolment, Item, ItemKind, ItemPolicy, Offering, Role


@dataclass(frozen=True)
class EffectivePolicy:
    opens_at: datetime | None
    due_at: datetime | None
    late_until: datetime | None
    max_attempts: int | None
    late_penalty_per_day: Decimal

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


def policy_for(*, offering: Offering, item: Item) -> EffectivePolicy:
    return effective_policy(
        offering=offering, policy=ItemPolicy.objects.filter(offering=offering, item=item).first()
    )


def policies_for(*, offering: Offering, items: list[Item]) -> dict[int, EffectivePolicy]:
    """policy_for for many items of one offering in one query: item id → its policy."""
    own = {
        p.item_id: p
        for p in ItemPolicy.objects.filter(offering=offering, item__in=[i.pk for i in items])
    }
    return {item.pk: effective_policy(offering=offering, policy=own.get(item.pk)) for item in items}


def effective_policy(*, offering: Offering, policy: ItemPolicy | None) -> EffectivePolicy:
    """An item's own policy with the offering's defaults filled in where it leaves a gap."""
    max_attempts = offering.default_max_attempts
    penalty = offering.default_late_penalty_per_day
    if policy is None:
        return EffectivePolicy(None, None, None, max_attempts, penalty)
    return EffectivePolicy(
        opens_at=policy.opens_at,
        due_at=policy.due_at,
        late_until=policy.late_until,
        max_attempts=policy.max_attempts if policy.max_attempts is not None else max_attempts,
        late_penalty_per_day=(
            policy.late_penalty_per_day if policy.late_penalty_per_day is not None else penalty
        ),
    )


def offering_ids_staffed_by(*, user: User) -> list[int] | None:
    """The offerings this user teaches or assists in; None means all (a site superuser)."""
    if getattr(user, "is_superuser", False):
        return None
    return list(
        Enrolment.objects.filter(user=user, role__in=[Role.TA, Role.INSTRUCTOR]).values_list(
            "offering_id", flat=True
        )
    )
