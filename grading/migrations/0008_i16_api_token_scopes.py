from typing import Any

from django.db import migrations, models


def scopes_for_existing_tokens(apps: Any, schema_editor: Any) -> None:
    # Tokens made before scopes existed were training-loop tokens: they submitted and fetched.
    ApiToken = apps.get_model("grading", "ApiToken")
    ApiToken.objects.all().update(scopes=["submit", "read"])


def service_accounts_group(apps: Any, schema_editor: Any) -> None:
    Group = apps.get_model("auth", "Group")
    Group.objects.get_or_create(name="service accounts")


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("grading", "0007_i11_task_sources"),
    ]

    operations = [
        migrations.AddField(
            model_name="apitoken",
            name="scopes",
            field=models.JSONField(default=list, help_text="Any of submit, read, export."),
        ),
        migrations.RunPython(scopes_for_existing_tokens, migrations.RunPython.noop),
        migrations.RunPython(service_accounts_group, migrations.RunPython.noop),
    ]
