from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from grading.services.tokens import (
    DEFAULT_SCOPES,
    SCOPES,
    api_token_create,
    service_account_create,
)


class Command(BaseCommand):
    help = (
        "Create an API token for a staff or service account; the secret is printed once and "
        "never stored."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("username", help="a staff account, or a service account")
        parser.add_argument("--name", default="training-loop", help="a label for the token")
        parser.add_argument(
            "--scope",
            action="append",
            choices=SCOPES,
            dest="scopes",
            help=f"repeat for several (default: {' and '.join(DEFAULT_SCOPES)})",
        )
        parser.add_argument(
            "--service-account",
            action="store_true",
            help="create the account as a service account (no password) if it does not exist, "
            "or make an existing password-less account one",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"]
        user = get_user_model().objects.filter(username=username).first()
        if options["service_account"]:
            if user is not None and user.has_usable_password():
                raise CommandError(f"{username!r} has a password: a service account cannot")
            user = service_account_create(username=username)
        if user is None:
            raise CommandError(f"no user {username!r} (add --service-account to create one)")
        try:
            _, secret = api_token_create(
                user=user, name=options["name"], scopes=options["scopes"] or DEFAULT_SCOPES
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(secret)
