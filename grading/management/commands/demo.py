from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from grading.services.demo import demo_accounts_ensure, sample_load


class Command(BaseCommand):
    help = "Load the project's sample group and create the demo accounts (idempotent)."

    def handle(self, *args: Any, **options: Any) -> None:
        report = sample_load()
        self.stdout.write(f"Sample data: {report.summary()}")
        self.stdout.write("Accounts (kept in var/demo-accounts.json):")
        for account in demo_accounts_ensure():
            role = "staff/admin" if account.is_staff else "reviewer"
            self.stdout.write(f"  {account.username:<10} {account.password:<14} {role}")
