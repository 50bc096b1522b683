"""The similarity run as a Celery task (routed to the staff-work queue in settings)."""

from __future__ import annotations

from celery import shared_task

from courseware.similarity import services


@shared_task(name="similarity.run", ignore_result=True)
def similarity_run(run_id: int) -> None:
    services.run_execute(run_id)
