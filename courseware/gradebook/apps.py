from django.apps import AppConfig


class GradebookConfig(AppConfig):
    name = "courseware.gradebook"
    label = "gradebook"
