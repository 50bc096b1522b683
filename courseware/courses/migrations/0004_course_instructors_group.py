"""The "Course instructors" group: what an instructor needs to run a course in the admin.

Every instructor enrolment puts its user in this group (courseware.accounts.signals), so an
instructor can set deadlines, attempt limits, enrolments and extensions in /admin/, see items,
submissions and gradings, and override scores, but never delete a submission or a grading.

The list is written out here rather than imported, so this migration means the same thing
whatever the code says later; a later change to the group is a migration of its own.
"""

from typing import Any

from django.db import migrations

GROUP_NAME = "Course instructors"

# app label → model → the actions an instructor gets on it.
GRANTS: dict[str, dict[str, tuple[str, ...]]] = {
    "courses": {
        "course": ("view",),
        "offering": ("view", "add", "change"),
        "item": ("view",),
        "itempolicy": ("view", "add", "change", "delete"),
        "enrolment": ("view", "add", "change"),
        "extension": ("view", "add", "change", "delete"),
    },
    "submissions": {
        "submission": ("view",),
        "grading": ("view",),
        "override": ("view", "add", "change"),
        "manualgrade": ("view",),
    },
    "quizzes": {
        "quiz": ("view",),
        "question": ("view",),
        "quizsettings": ("view", "add", "change"),
        "attempt": ("view",),
    },
    "auth": {"user": ("view",)},
}


def _make_permissions(apps: Any) -> None:
    """Permissions are normally made after all migrations ran (post_migrate); on a fresh
    database they do not exist yet at this point, so make them now."""
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None


def group_create(apps: Any, schema_editor: Any) -> None:
    _make_permissions(apps)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=GROUP_NAME)
    for app_label, models in GRANTS.items():
        for model, actions in models.items():
            codenames = [f"{action}_{model}" for action in actions]
            group.permissions.add(
                *Permission.objects.filter(
                    content_type__app_label=app_label, codename__in=codenames
                )
            )


def group_delete(apps: Any, schema_editor: Any) -> None:
    apps.get_model("auth", "Group").objects.filter(name=GROUP_NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("courses", "0003_extension_and_verbose_names"),
        ("submissions", "0002_manualgrade"),
        ("quizzes", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(group_create, group_delete)]
