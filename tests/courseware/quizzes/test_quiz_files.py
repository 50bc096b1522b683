# ruff: noqa: E501  (the table of broken files reads best as one case per line)
"""The quiz file format: the chapter bank loads, and every kind of mistake names file and field."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from courseware.quizzes.spec import LANGUAGES, QuizFileError, load_quiz
from graders.errors import SpecError
from tests.courseware.quizzes.conftest import question

BANK = Path(settings.GRADERS_EXERCISES_ROOT) / "ch15" / "quiz"


def test_the_chapter_bank_covers_every_section_in_both_languages() -> None:
    quiz = load_quiz(BANK)
    assert len(quiz.questions) >= 25
    sections = Counter(q.section for q in quiz.questions)
    assert {f"15.{i}" for i in range(1, 10)} <= set(sections)
    kinds = Counter(q.kind for q in quiz.questions)
    assert kinds["single"] and kinds["multiple"] and kinds["numeric"]
    assert sum(q.is_parameterized for q in quiz.questions) >= 10
    for q in quiz.questions:
        for lang in LANGUAGES:
            assert q.text[lang].strip() and q.explanation[lang].strip()


def test_the_bank_uses_the_checked_figures() -> None:
    quiz = load_quiz(BANK)
    assert question("04-a100-cores-per-sm", quiz).solve({}).answer == 64
    assert question("28-fusion-savings", quiz).solve({}).answer == 40
    unfused = question("27-fusion-unfused-traffic", quiz).solve({"mb": 4})
    assert unfused.answer == 20 and unfused.extra["fused"] == 12
    a100 = {"name": "A100", "bw_tbs": 2.039, "tflops": 312, "sms": 108}
    assert question("13-ridge-point", quiz).solve({"gpu": a100}).answer == pytest.approx(
        153, rel=0.01
    )
    ln = {"b": 8, "s": 512, "d": 4096, "dtype": {"name": "bf16", "bytes": 2}, "gpu": a100}
    solved = question("18-layernorm-memory-time", quiz).solve(ln)
    assert solved.answer == pytest.approx(33, rel=0.01)
    assert solved.extra["compute_us"] == pytest.approx(0.27, rel=0.02)
    assert question("17-layernorm-ai", quiz).solve(ln).answer == pytest.approx(1.25)


def copy_bank(tmp_path: Path) -> Path:
    folder = tmp_path / "ch15" / "quiz"
    shutil.copytree(BANK, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("file", "old", "new", "says"),
    [
        ("quiz.toml", 'reveal = "after_attempts"', 'reveal = "never"', "field 'reveal'"),
        ("quiz.toml", "attempt_scores = [1.0, 0.7, 0.5]", "attempt_scores = [0.5, 1.0]", "field 'attempt_scores'"),
        ("quiz.toml", 'slug = "ch15-gpu-fundamentals-quiz"', 'slug = "Bad Slug"', "field 'slug'"),
        ("questions/04-a100-cores-per-sm.toml", 'type = "numeric"', 'type = "essay"', "field 'type'"),
        ("questions/04-a100-cores-per-sm.toml", "abs_tol = 0.5", "abs_tol = 80", "field 'answer.wrong'"),
        ("questions/04-a100-cores-per-sm.toml", "abs_tol = 0.5", "", "field 'answer.rel_tol'"),
        ("questions/04-a100-cores-per-sm.toml", "value = 64", 'value = "64"', "field 'answer.value'"),
        ("questions/04-a100-cores-per-sm.toml", 'section = "15.3"', 'colour = 1\nsection = "15.3"', "field 'colour'"),
        ("questions/04-a100-cores-per-sm.toml", 'zh = "A100', 'ch = "A100', "field 'text.ch'"),
        ("questions/13-ridge-point.toml", 'function = "ridge_point"', 'function = "nope"', "field 'answer.function'"),
        ("questions/13-ridge-point.toml", 'unit = "FLOP/B"', 'unit = "furlongs"', "field 'answer.unit'"),
        ("questions/13-ridge-point.toml", "rel_tol = 0.03", "rel_tol = 0.03\nsig_figs = 2", "field 'answer.sig_figs'"),
        ("questions/13-ridge-point.toml", "Where is its ridge", "{answer} Where is its ridge", "field 'text.en'"),
        ("questions/13-ridge-point.toml", '"GPUS"', '"NO_SUCH_TABLE"', "field 'variables.gpu.choices_from'"),
        ("questions/13-ridge-point.toml", "**{answer:.3g} FLOP/B**", "{typo}", "field 'explanation.en'"),
        ("questions/13-ridge-point.toml", 'format = ".3g"', 'format = ".0e"', "field 'answer.format'"),
        ("questions/07-warp-size.toml", 'en = "64"\nzh = "64"', 'en = "32"\nzh = "32"', "field 'choices'"),
        ("questions/07-warp-size.toml", 'id = "w64"', 'id = "w32"', "field 'choices'"),
        ("questions/07-warp-size.toml", 'zh = "16"', 'zh = "16"\ncorrect = true', "field 'choices'"),
        ("questions/08-divergence-cycles.toml", "k = { range = [1, 31] }", "k = { range = [31, 1] }", "field 'variables.k.range'"),
        ("questions/14-ai-two-on-a100.toml", 'type = "single"', 'type = "single"\n[answer]\nunit = "us"', "field 'answer.unit'"),
    ],
)  # fmt: skip
def test_a_malformed_file_is_refused_naming_the_file_and_field(
    tmp_path: Path, file: str, old: str, new: str, says: str
) -> None:
    folder = copy_bank(tmp_path)
    edit(folder / file, old, new)
    with pytest.raises(QuizFileError) as caught:
        load_quiz(folder)
    message = str(caught.value)
    assert says in message
    assert str(folder / file) in message or (file == "quiz.toml" and "quiz.toml" in message)


def test_an_answer_function_that_breaks_is_refused_with_its_variables(tmp_path: Path) -> None:
    folder = copy_bank(tmp_path)
    edit(
        folder / "answers.py",
        "ratio = 400 / v",
        'ratio = 1 / (v["level"]["cycles"] - 30) * 400 / v',
    )
    with pytest.raises(
        QuizFileError,
        match=r"11-latency-ratio.toml: field 'answer.function': raised ZeroDivisionError",
    ):
        load_quiz(folder)


def test_a_broken_answers_module_and_bad_toml_are_refused(tmp_path: Path) -> None:
    folder = copy_bank(tmp_path)
    (folder / "answers.py").write_text("def oops(:\n")
    with pytest.raises(QuizFileError, match=r"answers.py: cannot be imported: SyntaxError"):
        load_quiz(folder)
    folder = copy_bank(tmp_path / "again")
    (folder / "questions" / "99-broken.toml").write_text("type = \n")
    with pytest.raises(QuizFileError, match=r"99-broken.toml: not valid TOML"):
        load_quiz(folder)


def test_a_quiz_folder_cannot_also_be_a_coding_exercise(tmp_path: Path) -> None:
    folder = copy_bank(tmp_path)
    (folder / "exercise.toml").write_text('slug = "quiz"\n')
    with pytest.raises(QuizFileError, match=r"both quiz\.toml and exercise\.toml"):
        load_quiz(folder)


@pytest.mark.django_db
def test_sync_content_check_refuses_a_broken_quiz_and_writes_nothing(tmp_path: Path) -> None:
    folder = copy_bank(tmp_path)
    edit(folder / "questions" / "04-a100-cores-per-sm.toml", "abs_tol = 0.5", "abs_tol = 80")
    with pytest.raises(CommandError) as caught:
        call_command("sync_content", "--check", "--root", str(tmp_path))
    assert "04-a100-cores-per-sm.toml" in str(caught.value) and "answer.wrong" in str(caught.value)


def test_quiz_errors_are_content_errors() -> None:
    # One type for every content mistake: callers catching SpecError see quiz files too.
    assert issubclass(QuizFileError, SpecError)


@pytest.mark.django_db
def test_sync_refuses_a_quiz_whose_slug_names_an_exercise_in_the_database() -> None:
    from courseware.authoring.services import course_get_default
    from courseware.courses.models import Item, ItemKind
    from courseware.quizzes.services import quizzes_sync

    quiz = load_quiz(BANK, validate=False)
    root = Path(settings.GRADERS_EXERCISES_ROOT)
    course = course_get_default()
    Item.objects.create(
        slug=quiz.slug,
        course=course,
        kind=ItemKind.EXERCISE,
        chapter="ch15",
        title_en="x",
        source_path="ch15/vector-add",
        content_hash="0" * 64,
        max_score=1,
    )
    with pytest.raises(SpecError) as caught:
        quizzes_sync(quizzes=[quiz], root=root, course=course)
    message = str(caught.value)
    assert message.startswith(f"{BANK / 'quiz.toml'}: field 'slug': '{quiz.slug}' is also used by")
    assert str(root / "ch15" / "vector-add" / "exercise.toml") in message
