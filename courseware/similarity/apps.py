from django.apps import AppConfig


class SimilarityConfig(AppConfig):
    name = "courseware.similarity"
    label = "similarity"
    default_auto_field = "django.db.models.BigAutoField"
