from django.apps import AppConfig


class QuizzesConfig(AppConfig):
    name = "courseware.quizzes"
    label = "quizzes"
