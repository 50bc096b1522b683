from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from courseware.accounts.services import token_issue


class Command(BaseCommand):
    help = "Print the API token of a user, making one if they have none."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")

    def handle(self, *args: object, username: str, **options: object) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}. Create one first (createsuperuser).")
        self.stdout.write(token_issue(user=user).key)
