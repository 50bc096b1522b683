"""The passback task: a ScoreSend id in, one attempt out, retried with back-off.

It runs on the LTI queue (settings.LTI_PASSBACK_QUEUE, "lti"; CELERY_TASK_ROUTES sends it
there), so `celery -A config worker -Q lti` serves it and grading workers never wait on an LMS.
"""

from __future__ import annotations

import logging

from celery import Task, shared_task
from django.conf import settings

from courseware.lti import passback

logger = logging.getLogger(__name__)


@shared_task(bind=True, name=passback.SEND_TASK_NAME, max_retries=None, ignore_result=True)
def send_score(self: Task[[int], None], send_id: int) -> None:
    outcome = passback.score_send_attempt(send_id=send_id)
    if not outcome.retry:
        return
    retries = self.request.retries
    if retries >= int(settings.LTI_PASSBACK_MAX_RETRIES):
        passback.score_send_given_up(send_id=send_id)
        return
    countdown = passback.backoff_s(retries)
    passback.score_send_retry_scheduled(send_id=send_id, countdown=countdown)
    raise self.retry(countdown=countdown)
