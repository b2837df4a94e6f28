from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from grading.services.tokens import api_token_create


class Command(BaseCommand):
    help = "Create an API token for a user; the secret is printed once and never stored."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="training-loop")

    def handle(self, *args: Any, **options: Any) -> None:
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"no user {options['username']!r}")
        try:
            _, secret = api_token_create(user=user, name=options["name"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(secret)
