from django.apps import AppConfig


class InstructorConfig(AppConfig):
    """Pages for running a course from the site: content sync, previews, extensions,
    item statistics and the roster."""

    name = "courseware.instructor"
    label = "instructor"
