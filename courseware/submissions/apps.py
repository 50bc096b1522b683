from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "courseware.submissions"
    label = "submissions"
