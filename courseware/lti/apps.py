from django.apps import AppConfig


class LtiConfig(AppConfig):
    """The site as an LTI 1.3 tool: launches from an LMS, deep linking, grade passback (AGS)
    and roster sync (NRPS)."""

    name = "courseware.lti"
    label = "lti"
    verbose_name = "LTI"

    def ready(self) -> None:
        # Score changes anywhere (the grading worker, a TA's override, a quiz answer) queue the
        # passback; receivers, so the apps that change scores need not know about LMSes.
        from courseware.lti.signals import connect

        connect()
