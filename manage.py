#!/usr/bin/env python
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_site.settings")
    from django.core.management import execute_from_command_line

    from gagar_site.env import ImproperlyConfiguredEnv

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfiguredEnv as exc:
        # A setting the environment got wrong: one line naming it, not a traceback.
        sys.exit(f"manage.py: {exc}")


if __name__ == "__main__":
    main()
