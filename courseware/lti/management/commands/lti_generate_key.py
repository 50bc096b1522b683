"""Make the tool's RSA key pair for LTI 1.3 (the newest key signs; older ones stay published
until retired, so platforms that cached them keep working). The private key is stored in the
database and never printed."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from courseware.lti.keys import public_jwk, tool_key_generate
from courseware.lti.models import ToolKey


class Command(BaseCommand):
    help = "Generate the LTI tool's RSA key pair (the private key is never shown)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--if-missing",
            action="store_true",
            help="Do nothing when the tool already has an active key.",
        )
        parser.add_argument(
            "--retire-older",
            action="store_true",
            help="After making the new key, stop publishing the older ones.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["if_missing"] and ToolKey.objects.filter(is_active=True).exists():
            self.stdout.write("The tool already has a key; nothing done.")
            return
        key = tool_key_generate()
        if options["retire_older"]:
            ToolKey.objects.exclude(pk=key.pk).update(is_active=False)
        jwk = public_jwk(key.public_key_pem)
        self.stdout.write(self.style.SUCCESS(f"New LTI key {key.kid}; it signs from now on."))
        self.stdout.write("Its public half, as published at /lti/jwks/:")
        self.stdout.write(key.public_key_pem.strip())
        self.stdout.write(f"JWK: {jwk}")
