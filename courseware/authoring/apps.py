from django.apps import AppConfig


class AuthoringConfig(AppConfig):
    name = "courseware.authoring"
    label = "authoring"
