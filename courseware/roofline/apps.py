from django.apps import AppConfig


class RooflineConfig(AppConfig):
    name = "courseware.roofline"
    label = "roofline"
