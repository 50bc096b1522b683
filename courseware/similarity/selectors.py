"""What a staff member may see of similarity runs: only those of offerings they staff."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import QuerySet

from courseware.courses.selectors import user_is_staff_of
from courseware.similarity.models import RunStatus, SimilarityRun, SimilarPair
from courseware.submissions.selectors import offerings_staffed


def run_visible(*, user: User, run_id: int) -> SimilarityRun | None:
    run = (
        SimilarityRun.objects.select_related("item", "offering", "requested_by")
        .filter(pk=run_id)
        .first()
    )
    if run is None or not user_is_staff_of(user=user, offering=run.offering):
        return None
    return run


def runs_for(*, user: User) -> QuerySet[SimilarityRun]:
    """The latest runs in the offerings this user staffs: the log of who asked for what."""
    qs = SimilarityRun.objects.select_related("item", "offering", "requested_by")
    return qs.filter(offering__in=offerings_staffed(user=user))[:50]


def pairs_of(run: SimilarityRun) -> QuerySet[SimilarPair]:
    return run.pairs.select_related("first__user", "second__user")


@dataclass(frozen=True)
class Progress:
    status: str
    done: int
    total: int

    @property
    def finished(self) -> bool:
        return self.status in (RunStatus.DONE, RunStatus.FAILED)

    def as_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "done": self.done,
            "total": self.total,
            "finished": self.finished,
        }


def progress_of(run: SimilarityRun) -> Progress:
    return Progress(status=run.status, done=run.pairs_done, total=run.pairs_total)
