"""Demo people for a local site: a student, a TA and an instructor in one offering.

The instructor is staff in the "Course instructors" group, so /admin/ lets them set deadlines.
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from courseware.accounts.services import instructor_access_grant, token_issue
from courseware.authoring.services import course_get_default
from courseware.courses.models import Enrolment, Offering, Role

DEMO_PEOPLE = (
    ("student", "student-demo-pw", Role.STUDENT),
    ("ta", "ta-demo-pw", Role.TA),
    ("instructor", "instructor-demo-pw", Role.INSTRUCTOR),
)


class Command(BaseCommand):
    help = "Create (or reuse) the demo accounts and print their passwords and API tokens."

    def handle(self, *args: object, **options: object) -> None:
        course = course_get_default()
        offering, _ = Offering.objects.get_or_create(
            course=course, slug="demo", defaults={"title": "Demo term"}
        )
        User = get_user_model()
        for username, password, role in DEMO_PEOPLE:
            user, created = User.objects.get_or_create(username=username)
            if created or not user.check_password(password):
                user.set_password(password)
                user.is_staff = role == Role.INSTRUCTOR
                user.save()
            Enrolment.objects.get_or_create(user=user, offering=offering, defaults={"role": role})
            if role == Role.INSTRUCTOR:
                # Also for a database seeded before instructors had a group: admin and pages.
                instructor_access_grant(user=user)
            token = token_issue(user=user).key
            self.stdout.write(
                f"  {role:<10} user {username:<10} password {password:<20} token {token}"
            )
