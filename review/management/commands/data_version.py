from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from grading.services.data_version import data_version_renew
from review.analytics.snapshots import data_fingerprint


class Command(BaseCommand):
    help = (
        "Print the data version the cached statistics are keyed by; --renew gives it a new token "
        "after a database restore or an edit made outside the product (raw SQL, shell, data "
        "migrations), so nothing cached before is taken for current."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--renew", action="store_true", help="give the data version a new token"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["renew"]:
            before = data_fingerprint()
            after = data_version_renew()
            self.stdout.write(f"data version renewed: {before} -> {after}")
            self.stdout.write("cached statistics and consensus tables will be computed again")
        else:
            self.stdout.write(f"data version {data_fingerprint()}")
