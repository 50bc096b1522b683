"""Sync authored content from `exercises/` into the site's Item rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import transaction

from courseware.courses.models import Course, Item, ItemKind
from courseware.quizzes.services import quizzes_sync
from courseware.quizzes.spec import QuizFileError, QuizSpec, load_quizzes
from graders import ExerciseSpec, SpecError, iter_exercises
from graders.notebooks import NotebookExerciseSpec, iter_notebook_exercises

DEFAULT_COURSE_SLUG = "gpu-fundamentals"
DEFAULT_COURSE_TITLE = "GPU Fundamentals"


@dataclass
class SyncSummary:
    exercises: int = 0
    quiz_questions: int = 0
    notebooks: int = 0
    unpublished: list[str] = field(default_factory=list)

    def line(self) -> str:
        text = (
            f"{self.exercises} exercises, {self.quiz_questions} quiz questions, "
            f"{self.notebooks} notebooks"
        )
        if self.unpublished:
            text += f"; no longer in the files, unpublished: {', '.join(self.unpublished)}"
        return text


def course_get_default() -> Course:
    course, _ = Course.objects.get_or_create(
        slug=DEFAULT_COURSE_SLUG, defaults={"title": DEFAULT_COURSE_TITLE}
    )
    return course


def content_load(*, root: Path) -> list[ExerciseSpec]:
    """Every exercise under root, or SpecError naming the file and field that is wrong."""
    specs = iter_exercises(root)
    seen: dict[str, Path] = {}
    for spec in specs:
        if spec.slug in seen:
            raise SpecError(
                f"{spec.path / 'exercise.toml'}: slug '{spec.slug}' is also used by "
                f"{seen[spec.slug]}; slugs must be unique across chapters"
            )
        seen[spec.slug] = spec.path
    return specs


def quizzes_load(*, root: Path, exercise_slugs: set[str]) -> list[QuizSpec]:
    """Every quiz under root, validated; SpecError naming the file and field that is wrong."""
    try:
        quizzes = load_quizzes(root)
    except QuizFileError as exc:
        raise SpecError(str(exc)) from exc
    for quiz in quizzes:
        if quiz.slug in exercise_slugs:
            raise SpecError(
                f"{quiz.path / 'quiz.toml'}: slug '{quiz.slug}' is also an exercise's slug; "
                "slugs must be unique across all content"
            )
    return quizzes


def notebooks_load(*, root: Path, taken: dict[str, Path]) -> list[NotebookExerciseSpec]:
    notebooks = iter_notebook_exercises(root)
    for notebook in notebooks:
        if notebook.slug in taken:
            raise SpecError(
                f"{notebook.path / 'notebook.toml'}: slug '{notebook.slug}' is also used by "
                f"{taken[notebook.slug]}; slugs must be unique across all content"
            )
        taken[notebook.slug] = notebook.path
    return notebooks


def _item_upsert(
    *,
    root: Path,
    course: Course,
    kind: ItemKind,
    spec: ExerciseSpec | NotebookExerciseSpec,
    device_kinds: list[str],
) -> None:
    Item.objects.update_or_create(
        slug=spec.slug,
        defaults={
            "course": course,
            "kind": kind,
            "chapter": spec.chapter,
            "title_en": spec.title.get("en", spec.slug),
            "title_zh": spec.title.get("zh", ""),
            "source_path": str(spec.path.resolve().relative_to(root.resolve())),
            "content_hash": spec.content_hash,
            "max_score": Decimal(str(spec.max_score)),
            "device_kinds": device_kinds,
            "is_published": True,
        },
    )


@dataclass(frozen=True)
class LoadedContent:
    """Everything under the content root, parsed and validated, not yet written."""

    root: Path
    exercises: list[ExerciseSpec]
    notebooks: list[NotebookExerciseSpec]
    quizzes: list[QuizSpec]

    def summary(self) -> SyncSummary:
        return SyncSummary(
            exercises=len(self.exercises),
            quiz_questions=sum(len(q.questions) for q in self.quizzes),
            notebooks=len(self.notebooks),
        )


def content_load_all(*, root: Path | None = None) -> LoadedContent:
    """Parse and validate all content; SpecError names the file and field that is wrong."""
    root = Path(root or settings.GRADERS_EXERCISES_ROOT)
    specs = content_load(root=root)
    notebooks = notebooks_load(root=root, taken={s.slug: s.path for s in specs})
    quizzes = quizzes_load(
        root=root, exercise_slugs={s.slug for s in specs} | {n.slug for n in notebooks}
    )
    return LoadedContent(root=root, exercises=specs, notebooks=notebooks, quizzes=quizzes)


def content_write(content: LoadedContent) -> SyncSummary:
    """Mirror loaded content into Item rows; what is gone from the files is unpublished."""
    root, summary = content.root, content.summary()
    course = course_get_default()
    with transaction.atomic():
        for spec in content.exercises:
            _item_upsert(
                root=root,
                course=course,
                kind=ItemKind.EXERCISE,
                spec=spec,
                device_kinds=list(spec.devices),
            )
        for notebook in content.notebooks:
            # The notebook kernel runs on the CPU in the sandbox.
            _item_upsert(
                root=root,
                course=course,
                kind=ItemKind.NOTEBOOK,
                spec=notebook,
                device_kinds=["cpu"],
            )
        slugs = [s.slug for s in content.exercises] + [n.slug for n in content.notebooks]
        gone = Item.objects.filter(
            kind__in=(ItemKind.EXERCISE, ItemKind.NOTEBOOK), is_published=True
        ).exclude(slug__in=slugs)
        summary.unpublished = sorted(gone.values_list("slug", flat=True))
        gone.update(is_published=False)  # never deleted: submissions point at them
        try:
            summary.unpublished += quizzes_sync(quizzes=content.quizzes, root=root, course=course)
        except QuizFileError as exc:
            raise SpecError(str(exc)) from exc
    return summary


def content_sync(*, root: Path | None = None, check_only: bool = False) -> SyncSummary:
    content = content_load_all(root=root)
    return content.summary() if check_only else content_write(content)
