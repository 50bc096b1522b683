from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from courseware.authoring.services import content_sync
from graders import SpecError


class Command(BaseCommand):
    help = "Load exercises, quizzes and notebooks from the exercises/ folder into the site."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--check", action="store_true", help="Validate only; write nothing.")
        parser.add_argument("--root", help="The content folder (default: GRADERS_EXERCISES_ROOT).")

    def handle(self, *args: object, check: bool, root: str | None, **options: object) -> None:
        try:
            summary = content_sync(root=Path(root) if root else None, check_only=check)
        except SpecError as exc:
            raise CommandError(f"Content not loaded: {exc}") from exc
        verb = "Checked" if check else "Synced"
        self.stdout.write(f"{verb}: {summary.line()}")
