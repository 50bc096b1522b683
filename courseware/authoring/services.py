"""Sync authored content from `exercises/` into the site's Item rows."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.db import transaction

from courseware.authoring.chapter_order import chapter_positions
from courseware.courses.models import Course, Item, ItemKind
from courseware.quizzes.services import quizzes_sync
from courseware.quizzes.short_spec import load_short_questions
from courseware.quizzes.spec import QuizSpec, load_quizzes
from graders import ExerciseSpec, iter_exercises
from graders.authoring.meta import load_meta
from graders.authoring.validate import validation_status
from graders.notebooks import NotebookExerciseSpec, iter_notebook_exercises
from graders.spec.content import SlugRegistry

DEFAULT_COURSE_SLUG = "gpu-fundamentals"
DEFAULT_COURSE_TITLE = "GPU Fundamentals"


@dataclass
class SyncSummary:
    exercises: int = 0
    quiz_questions: int = 0
    notebooks: int = 0
    unpublished: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    # Questions per chapter section ("15.1" -> 3), over every quiz: the coverage an author
    # checks against the chapter (at least 3 per section in chapter 15).
    quiz_sections: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        text = (
            f"{self.exercises} exercises, {self.quiz_questions} quiz questions, "
            f"{self.notebooks} notebooks"
        )
        if self.quiz_sections:
            per_section = ", ".join(
                f"{section} {count}" for section, count in sorted(self.quiz_sections.items())
            )
            text += f"; questions per section: {per_section}"
        if self.withheld:
            text += f"; not published: {', '.join(self.withheld)}"
        if self.unpublished:
            text += f"; no longer in the files, unpublished: {', '.join(self.unpublished)}"
        return text


def course_get_default() -> Course:
    course, _ = Course.objects.get_or_create(
        slug=DEFAULT_COURSE_SLUG, defaults={"title": DEFAULT_COURSE_TITLE}
    )
    return course


def exercise_withheld_because(spec: ExerciseSpec) -> str | None:
    """Why a coding exercise must not be published: a draft, or it failed validation."""
    if load_meta(spec.path).draft:
        return "draft"
    if validation_status(spec) == "failed":
        return "failed validation (python -m graders validate)"
    return None


def _item_upsert(
    *,
    root: Path,
    course: Course,
    kind: ItemKind,
    spec: ExerciseSpec | NotebookExerciseSpec,
    device_kinds: list[str],
    published: bool = True,
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
            "is_published": published,
        },
    )


@dataclass(frozen=True)
class LoadedContent:
    """Everything under the content root, parsed and validated, not yet written."""

    root: Path
    exercises: list[ExerciseSpec]
    notebooks: list[NotebookExerciseSpec]
    quizzes: list[QuizSpec]
    # slug → position in its chapter, from chapter.toml (absent: a chapter without one).
    positions: dict[str, int] = field(default_factory=dict)

    def summary(self) -> SyncSummary:
        return SyncSummary(
            exercises=len(self.exercises),
            quiz_questions=sum(len(q.questions) for q in self.quizzes),
            notebooks=len(self.notebooks),
            quiz_sections=dict(
                Counter(q.section or "(none)" for quiz in self.quizzes for q in quiz.questions)
            ),
        )


def content_load_all(*, root: Path | None = None) -> LoadedContent:
    """Parse and validate all content; SpecError names the file and field that is wrong."""
    root = Path(root or settings.GRADERS_EXERCISES_ROOT)
    exercises = iter_exercises(root)
    notebooks = iter_notebook_exercises(root)
    quizzes = load_quizzes(root)
    # Slugs are unique across chapters and kinds: the API names content by slug alone.
    slugs = SlugRegistry()
    for exercise in exercises:
        slugs.claim(exercise.slug, exercise.path, "exercise.toml")
    for notebook in notebooks:
        slugs.claim(notebook.slug, notebook.path, "notebook.toml")
    for quiz in quizzes:
        slugs.claim(quiz.slug, quiz.path, "quiz.toml")
        load_short_questions(quiz.path)  # short/*.toml: a broken item names its file and field
    positions = chapter_positions(
        [
            *((e.slug, e.path) for e in exercises),
            *((n.slug, n.path) for n in notebooks),
            *((q.slug, q.path) for q in quizzes),
        ]
    )
    return LoadedContent(
        root=root, exercises=exercises, notebooks=notebooks, quizzes=quizzes, positions=positions
    )


def content_write(content: LoadedContent) -> SyncSummary:
    """Mirror loaded content into Item rows; what is gone from the files is unpublished."""
    root, summary = content.root, content.summary()
    course = course_get_default()
    with transaction.atomic():
        for spec in content.exercises:
            reason = exercise_withheld_because(spec)
            if reason:
                summary.withheld.append(f"{spec.slug} ({reason})")
            _item_upsert(
                published=reason is None,
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
        summary.unpublished += quizzes_sync(quizzes=content.quizzes, root=root, course=course)
        items_position(content)
    return summary


def items_position(content: LoadedContent) -> None:
    """Give each loaded item its place in the chapter (0 where the chapter has no order)."""
    loaded = [
        *(e.slug for e in content.exercises),
        *(n.slug for n in content.notebooks),
        *(q.slug for q in content.quizzes),
    ]
    for item in Item.objects.filter(slug__in=loaded):
        position = content.positions.get(item.slug, 0)
        if item.position != position:
            item.position = position
            item.save(update_fields=["position"])


def content_sync(*, root: Path | None = None, check_only: bool = False) -> SyncSummary:
    content = content_load_all(root=root)
    return content.summary() if check_only else content_write(content)
