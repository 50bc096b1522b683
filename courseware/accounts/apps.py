from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class AccountsConfig(AppConfig):
    name = "courseware.accounts"
    label = "accounts"

    def ready(self) -> None:
        from courseware.accounts import signals
        from courseware.courses.models import Enrolment

        post_save.connect(signals.enrolment_saved, sender=Enrolment, dispatch_uid="instructor-in")
        post_delete.connect(
            signals.enrolment_deleted, sender=Enrolment, dispatch_uid="instructor-out"
        )
