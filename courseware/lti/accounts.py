"""Which site account an LMS user signs in as.

An LMS user is known by the platform's `sub` (LtiIdentity). A new one gets an account of its
own, with no password (it signs in through the LMS) — unless an account with a password already
uses the same email: then the person is offered to link it, and it is linked only once they
type that account's password. An email alone never links an account: anyone can type any email
into an LMS profile.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any

from django.contrib.auth.models import User
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction

from courseware.lti.models import LtiIdentity, Platform


@dataclass(frozen=True)
class LmsPerson:
    """Who the LMS says the user is (LTI Core 5.3.6: the OpenID Connect standard claims)."""

    sub: str
    email: str = ""
    given_name: str = ""
    family_name: str = ""
    name: str = ""

    def as_json(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LmsPerson:
        return cls(
            **{
                k: str(data.get(k) or "")
                for k in ("sub", "email", "given_name", "family_name", "name")
            }
        )


def person_from_claims(claims: dict[str, Any]) -> LmsPerson:
    email = str(claims.get("email") or "").strip()
    try:
        validate_email(email)
    except ValidationError:
        email = ""
    return LmsPerson(
        sub=str(claims.get("sub") or claims.get("user_id") or ""),
        email=email[:254],
        given_name=str(claims.get("given_name") or "")[:150],
        family_name=str(claims.get("family_name") or "")[:150],
        name=str(claims.get("name") or "")[:300],
    )


def identity_user(*, platform: Platform, sub: str) -> User | None:
    identity = LtiIdentity.objects.select_related("user").filter(platform=platform, sub=sub).first()
    return identity.user if identity is not None else None


def account_to_offer(*, platform: Platform, person: LmsPerson) -> User | None:
    """The password account with the person's email that they may link, if exactly one has it
    and it is not already the account of another user of this LMS."""
    if not person.email:
        return None
    matches = list(
        User.objects.filter(email__iexact=person.email, is_active=True)
        .exclude(lti_identities__platform=platform)
        .order_by("pk")[:2]
    )
    if len(matches) != 1 or not matches[0].has_usable_password():
        return None
    return matches[0]


def account_link(*, platform: Platform, person: LmsPerson, user: User, password: str) -> bool:
    """Link the LMS user to `user` if `password` is that account's; False when it is not."""
    if not user.has_usable_password() or not user.check_password(password):
        return False
    if LtiIdentity.objects.filter(platform=platform, user=user).exists():
        return False  # linked to another user of this LMS meanwhile
    LtiIdentity.objects.create(
        platform=platform, sub=person.sub, user=user, linked_existing_account=True
    )
    return True


def account_create(*, platform: Platform, person: LmsPerson) -> User:
    """A new account for the LMS user, signing in only through the LMS (no usable password)."""
    with transaction.atomic():
        user = User(
            username=free_username(platform, person),
            email=person.email,
            first_name=person.given_name or person.name.partition(" ")[0][:150],
            last_name=person.family_name or person.name.partition(" ")[2][:150],
        )
        user.set_unusable_password()
        user.save()
        LtiIdentity.objects.create(platform=platform, sub=person.sub, user=user)
    return user


def identity_user_or_create(*, platform: Platform, person: LmsPerson) -> User:
    """For a roster sync: the member's account, made if new. (Two syncs at once may race.)"""
    user = identity_user(platform=platform, sub=person.sub)
    if user is not None:
        return user
    try:
        return account_create(platform=platform, person=person)
    except IntegrityError:
        found = identity_user(platform=platform, sub=person.sub)
        if found is None:
            raise
        return found


def free_username(platform: Platform, person: LmsPerson) -> str:
    """The email when it makes a free, valid username (what people know themselves by), else a
    stable name made from the LMS and its user id."""
    if person.email and len(person.email) <= 150:
        try:
            UnicodeUsernameValidator()(person.email)
        except ValidationError:
            pass
        else:
            if not User.objects.filter(username__iexact=person.email).exists():
                return person.email
    digest = hashlib.sha256(f"{platform.pk}:{person.sub}".encode()).hexdigest()[:12]
    base = f"lti-{digest}"
    name, n = base, 1
    while User.objects.filter(username=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name
