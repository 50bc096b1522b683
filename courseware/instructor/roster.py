"""Enrol people from a CSV file: username,email,first_name,last_name[,role].

Each row is done whole or not at all (its own savepoint); a failed row says why and the rows
around it still go in. A person without an account gets one with an unusable password: nobody
can log in with it until they choose a password through the set-password link the report
gives the instructor to send them (Django's password-reset token: it works once, and for
PASSWORD_RESET_TIMEOUT). An existing account is enrolled as it is; its name and email are
not changed from a file.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.contrib.auth.tokens import default_token_generator
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _

from courseware.courses.models import Enrolment, Offering, Role
from courseware.refusals import Refused

REQUIRED_COLUMNS = ("username", "email", "first_name", "last_name")
MAX_ROWS = 5000
MAX_BYTES = 1024 * 1024


class RowFailed(Exception):
    """This row is not done; the message says why and what to fix."""


@dataclass(frozen=True)
class RowResult:
    line: int  # in the file, counting the header as line 1
    username: str
    ok: bool
    message: str
    # For a new account: the pair its set-password link is made of (uidb64, token).
    set_password: tuple[str, str] | None = None


@dataclass
class RosterReport:
    rows: list[RowResult] = field(default_factory=list)

    @property
    def failed(self) -> list[RowResult]:
        return [r for r in self.rows if not r.ok]

    @property
    def done(self) -> list[RowResult]:
        return [r for r in self.rows if r.ok]

    @property
    def created(self) -> list[RowResult]:
        return [r for r in self.rows if r.set_password is not None]


def roster_text(data: bytes) -> str:
    """The file as text, or Refused saying what to upload instead."""
    if len(data) > MAX_BYTES:
        raise Refused(_("The file is larger than 1 MiB; split it and upload the parts."))
    try:
        return data.decode("utf-8-sig")  # a spreadsheet's UTF-8 export starts with a BOM
    except UnicodeDecodeError:
        raise Refused(
            _("The file is not UTF-8 text. Save it from your spreadsheet as “CSV UTF-8”.")
        ) from None


def roster_import(*, offering: Offering, text: str) -> RosterReport:
    reader = csv.DictReader(io.StringIO(text))
    columns = [c.strip().lower() for c in reader.fieldnames or []]
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise Refused(
            _(
                "The first line must name the columns username,email,first_name,last_name "
                "(and optionally role); missing: %(missing)s."
            )
            % {"missing": ", ".join(missing)}
        )
    reader.fieldnames = columns
    report = RosterReport()
    seen: dict[str, int] = {}
    for row in reader:
        line = reader.line_num
        if len(report.rows) >= MAX_ROWS:
            raise Refused(_("More than %(n)d rows; split the file.") % {"n": MAX_ROWS})
        values = {k: (v or "").strip() for k, v in row.items() if isinstance(k, str)}
        username = values.get("username", "")
        try:
            earlier = seen.get(username.lower())
            if username and earlier is not None:
                raise RowFailed(
                    _("%(name)s is already on line %(line)d of this file.")
                    % {"name": username, "line": earlier}
                )
            seen[username.lower()] = line
            with transaction.atomic():
                result = _row_enrol(offering=offering, line=line, values=values)
        except RowFailed as failed:
            result = RowResult(line, username, False, str(failed))
        report.rows.append(result)
    if not report.rows:
        raise Refused(_("The file has a header but no rows of people."))
    return report


ROLE_NAMES = {
    "student": Role.STUDENT,
    "ta": Role.TA,
    "instructor": Role.INSTRUCTOR,
}


def _row_role(text: str) -> Role:
    role = ROLE_NAMES.get(text.lower()) if text else Role.STUDENT
    if role is None:
        raise RowFailed(
            _("Unknown role “%(role)s”: use student, ta or instructor (empty: student).")
            % {"role": text[:40]}
        )
    return role


def _row_enrol(*, offering: Offering, line: int, values: dict[str, str]) -> RowResult:
    username, email = values.get("username", ""), values.get("email", "")
    if not username:
        raise RowFailed(_("The username is empty."))
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError:
        raise RowFailed(
            _("“%(name)s” is not a valid username: use letters, digits and @ . + - _ only.")
            % {"name": username[:40]}
        ) from None
    if len(username) > 150:
        raise RowFailed(_("The username is longer than 150 characters."))
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise RowFailed(
                _("“%(email)s” is not a valid email address.") % {"email": email[:80]}
            ) from None
    role = _row_role(values.get("role", ""))
    user = User.objects.filter(username=username).first()
    created = user is None
    if user is None:
        if email and User.objects.filter(email__iexact=email).exists():
            raise RowFailed(_("The email %(email)s belongs to another account.") % {"email": email})
        user = User(
            username=username,
            email=email,
            first_name=values.get("first_name", "")[:150],
            last_name=values.get("last_name", "")[:150],
        )
        user.set_unusable_password()
        user.save()
    enrolment = Enrolment.objects.filter(user=user, offering=offering).first()
    if enrolment is not None:
        if enrolment.role != role:
            raise RowFailed(
                _(
                    "%(name)s is already enrolled as %(old)s; change the role in the admin "
                    "if that is wrong."
                )
                % {"name": username, "old": enrolment.get_role_display()}
            )
        message = _("already enrolled; nothing changed")
    else:
        Enrolment.objects.create(user=user, offering=offering, role=role)
        if created:
            message = _("account created and enrolled as %(role)s") % _role(role)
        else:
            message = _("existing account enrolled as %(role)s") % _role(role)
    # Anyone who has never chosen a password gets a link (again, if the first one was lost).
    link = None
    if not user.has_usable_password():
        link = (
            urlsafe_base64_encode(force_bytes(user.pk)),
            default_token_generator.make_token(user),
        )
    return RowResult(line, username, True, message, set_password=link)


def _role(role: Role) -> dict[str, str]:
    return {"role": str(role.label)}
