"""An LMS role (LTI 1.3 Core, appendix A.2: LIS vocabulary) → the role in the offering.

Only context (membership) roles count: they say what the person does in this course, while
institution and system roles say what they are at the school (a professor may take a course).
A sub-role is written `.../membership/Instructor#TeachingAssistant`; a platform sends the
principal role beside it (`...membership#Instructor`), so the teaching-assistant sub-roles are
looked at first, or every TA would become an instructor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from courseware.courses.models import Role

LIS = "http://purl.imsglobal.org/vocab/lis/v2/"
MEMBERSHIP = "membership"

# Sub-roles of Instructor that grade and help but do not run the course.
TA_SUB_ROLES = frozenset(
    {
        "TeachingAssistant",
        "TeachingAssistantGroup",
        "TeachingAssistantOffering",
        "TeachingAssistantSection",
        "TeachingAssistantSectionAssociation",
        "TeachingAssistantTemplate",
        "Grader",
    }
)
INSTRUCTOR_ROLES = frozenset({"Instructor", "Administrator"})
LEARNER_ROLES = frozenset({"Learner", "Member"})


@dataclass(frozen=True)
class LisRole:
    vocabulary: str  # "membership", "institution", "system"
    principal: str
    sub: str | None = None


def parse_role(uri: str) -> LisRole:
    """`http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant` →
    (membership, Instructor, TeachingAssistant). A bare name ("Learner"), which the Core
    specification still allows for context roles, is a membership role."""
    if not uri.startswith(LIS):
        return LisRole(MEMBERSHIP, uri.strip())
    path, _, name = uri[len(LIS) :].partition("#")
    parts = path.split("/")
    vocabulary = parts[0]
    if len(parts) >= 2 and parts[1] not in ("", "person"):
        return LisRole(vocabulary, parts[1], name or None)  # a sub-role under its principal
    return LisRole(vocabulary, name)


def course_role(roles: Iterable[str]) -> Role | None:
    """The offering role for these LMS roles, or None when none of them has one here (a
    mentor, an observer, a launch with no context role)."""
    membership = [r for r in map(parse_role, roles) if r.vocabulary == MEMBERSHIP]
    if any(r.sub in TA_SUB_ROLES or r.principal == "TeachingAssistant" for r in membership):
        return Role.TA
    # Other Instructor sub-roles (Lecturer, PrimaryInstructor...) teach: instructors.
    if any(r.principal in INSTRUCTOR_ROLES for r in membership):
        return Role.INSTRUCTOR
    if any(r.principal in LEARNER_ROLES for r in membership):
        return Role.STUDENT
    return None
