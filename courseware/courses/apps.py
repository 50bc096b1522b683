from django.apps import AppConfig


class CoursesConfig(AppConfig):
    name = "courseware.courses"
    label = "courses"
