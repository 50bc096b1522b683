"""Demo students with vector-add submissions in the demo offering, for the similarity report.

Run after seed_demo. dana and eli hand in the same kernel (eli's with the names, comments and
line order changed); fay and gus write their own. The submissions go through the ordinary
submission service, so `make run`'s worker grades them too.
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from courseware.courses.models import Enrolment, Offering, Role
from courseware.similarity.demo_solutions import DEMO_STUDENTS
from courseware.submissions.models import Submission
from courseware.submissions.services import submission_create

EXERCISE = "vector-add"


class Command(BaseCommand):
    help = "Give the demo offering four students with vector-add submissions (two alike)."

    def handle(self, *args: object, **options: object) -> None:
        offering = Offering.objects.filter(slug="demo").first()
        if offering is None:
            raise CommandError("No demo offering: run `manage.py seed_demo` first.")
        User = get_user_model()
        for username, code in DEMO_STUDENTS:
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_unusable_password()
                user.save()
            Enrolment.objects.get_or_create(
                user=user, offering=offering, defaults={"role": Role.STUDENT}
            )
            if Submission.objects.filter(user=user, item__slug=EXERCISE).exists():
                continue  # seeded before: one submission each is enough
            submission_create(user=user, exercise_slug=EXERCISE, code=code)
            self.stdout.write(f"  {username:<6} submitted {EXERCISE}")
