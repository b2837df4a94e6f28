"""Every flag and argument of the project's management commands says what it does."""

from __future__ import annotations

import argparse

from django.core.management import get_commands, load_command_class


def _actions(parser: argparse.ArgumentParser, where: str):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _actions(sub, f"{where} {name}")
        elif not isinstance(action, argparse._HelpAction):
            yield where, action


def test_every_flag_of_our_commands_has_help_text():
    ours = {n: app for n, app in get_commands().items() if app in ("grading", "review")}
    assert {"import", "grade", "export_advantages", "export_labels", "export_package"} <= set(ours)
    missing = []
    for name, app in sorted(ours.items()):
        command = load_command_class(app, name)
        parser = command.create_parser("manage.py", name)
        for where, action in _actions(parser, name):
            # Django's own options (--verbosity, --settings, …) come documented.
            if action.dest in (
                "verbosity",
                "settings",
                "pythonpath",
                "traceback",
                "no_color",
                "force_color",
                "skip_checks",
                "version",
            ):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{where}: {'/'.join(action.option_strings) or action.dest}")
    assert not missing, missing
