"""Quiz files under `exercises/`: the format, loading, and validation. No Django models here.

A quiz is a folder (it must not hold an exercise.toml, which marks a coding exercise):

    exercises/ch15/quiz/
        quiz.toml          slug, chapter, titles, reveal mode, score per attempt
        answers.py         the answer functions and shared tables (trusted, run on the server)
        questions/*.toml   one question per file, loaded in file-name order

See exercises/ch15/quiz/README.md for every field. Any mistake raises QuizFileError (the
content kernel's SpecError) with a message naming the file and the field, in the one form
"<file>: field '<dotted.key>': <problem>", so an author can fix it without reading this code.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import itertools
import json
import math
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from courseware.quizzes import units
from courseware.quizzes.marking import DEFAULT_DIGITS, Tolerance, round_significant
from graders.errors import SpecError
from graders.spec.content import SlugRegistry, Table, field_error, read_toml
from graders.spec.content import content_hash as folder_hash

LANGUAGES = ("en", "zh")
KINDS = ("single", "multiple", "numeric")
REVEAL_MODES = ("after_attempts", "after_deadline")
DEFAULT_ATTEMPT_SCORES = (1.0, 0.7, 0.5)
VALIDATION_VARIANTS = 100
_KEY = re.compile(r"^[a-z0-9][a-z0-9-]{0,79}$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# Quiz files are content like any other: one error type and one message form for all of it.
# The name stays for the callers that catch "a quiz file is broken".
QuizFileError = SpecError


def _texts(table: Table, key: str) -> dict[str, str]:
    """``key = { en = "...", zh = "..." }``: every language, none empty."""
    texts_table = table.sub(key)
    texts_table.only(LANGUAGES)
    texts = {lang: texts_table.get(lang, str) for lang in LANGUAGES}
    for lang, text in texts.items():
        if not text.strip():
            raise texts_table.fail(lang, "is empty")
    return texts


@dataclass(frozen=True)
class Variable:
    name: str
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    step: int = 1
    decimals: int | None = None  # None with integer bounds: draw integers

    def draw(self, rng: random.Random) -> Any:
        if self.choices:
            # A fresh copy, so an answer function can never alter the shared table.
            return json.loads(json.dumps(rng.choice(self.choices)))
        assert self.low is not None and self.high is not None
        if self.decimals is None:
            return rng.randrange(int(self.low), int(self.high) + 1, self.step)
        return round(rng.uniform(self.low, self.high), self.decimals)


@dataclass(frozen=True)
class Choice:
    id: str
    text: dict[str, str]
    correct: bool


@dataclass(frozen=True)
class Solution:
    """The answer for one variant, with what the explanation may quote."""

    answer: float | frozenset[str]
    wrong: tuple[float, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Question:
    key: str
    kind: str
    file: Path
    section: str
    points: float
    text: dict[str, str]
    explanation: dict[str, str]
    variables: tuple[Variable, ...] = ()
    choices: tuple[Choice, ...] = ()
    shuffle: bool = True
    function: Callable[[dict[str, Any]], Any] | None = None
    value: float | None = None
    unit: str | None = None
    tolerance: Tolerance | None = None
    wrong: tuple[float, ...] = ()
    answer_format: str = ".4g"

    @property
    def is_parameterized(self) -> bool:
        return bool(self.variables)

    def draw(self, seed: int) -> dict[str, Any]:
        rng = random.Random(seed)
        return {v.name: v.draw(rng) for v in self.variables}

    def solve(self, variables: Mapping[str, Any]) -> Solution:
        """The answer for these variables. Raises QuizFileError when the function misbehaves."""
        fail = functools.partial(field_error, self.file, "answer.function")
        if self.function is None:
            if self.kind == "numeric":
                assert self.value is not None
                return Solution(self.value, self.wrong)
            return Solution(frozenset(c.id for c in self.choices if c.correct))
        try:
            result = self.function(dict(variables))
        except Exception as exc:
            raise fail(
                f"raised {type(exc).__name__}: {exc} for variables {dict(variables)}"
            ) from None
        if not isinstance(result, dict):
            result = {"answer": result}
        if "answer" not in result:
            raise fail("must return a number, or a dict with 'answer'")
        extra = {k: v for k, v in result.items() if k not in ("answer", "wrong")}
        if self.kind == "numeric":
            answer = result["answer"]
            if isinstance(answer, bool) or not isinstance(answer, int | float):
                raise fail(f"the answer must be a number, got {answer!r}")
            wrong = tuple(result.get("wrong", ())) + self.wrong
            for w in wrong:
                if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w):
                    raise fail(f"'wrong' must hold numbers, got {w!r}")
            if not math.isfinite(answer):
                raise fail(f"the answer is {answer} for {dict(variables)}")
            return Solution(float(answer), tuple(float(w) for w in wrong), extra)
        ids = result["answer"]
        ids = [ids] if isinstance(ids, str) else ids
        known = {c.id for c in self.choices}
        if not isinstance(ids, list | tuple) or not all(i in known for i in ids):
            raise fail(f"must return choice ids from {sorted(known)}, got {result['answer']!r}")
        return Solution(frozenset(ids), (), extra)

    def answer_text(self, solution: Solution, variables: Mapping[str, Any], lang: str) -> str:
        if isinstance(solution.answer, float):
            text = format(solution.answer, self.answer_format)
            return f"{text} {units.answer_unit(self.unit, lang)}" if self.unit else text
        texts = [render(c.text[lang], variables) for c in self.choices if c.id in solution.answer]
        return "; ".join(texts)

    def explanation_context(
        self, solution: Solution, variables: Mapping[str, Any], lang: str
    ) -> dict[str, Any]:
        return {
            **variables,
            **solution.extra,
            "answer": solution.answer if isinstance(solution.answer, float) else "",
            "answer_text": self.answer_text(solution, variables, lang),
            "unit": units.answer_unit(self.unit, lang) if self.unit else "",
        }


@dataclass(frozen=True)
class QuizSpec:
    slug: str
    chapter: str
    path: Path
    title: dict[str, str]
    reveal: str
    attempt_scores: tuple[float, ...]
    questions: tuple[Question, ...]
    content_hash: str

    def question(self, key: str) -> Question | None:
        return next((q for q in self.questions if q.key == key), None)

    @property
    def max_score(self) -> float:
        return sum(q.points for q in self.questions)


def render(template: str, context: Mapping[str, Any]) -> str:
    """Fill `{name}` fields (with format specs such as `{ai:.2f}`, or `{gpu[name]}`)."""
    return template.format_map(context)


# --------------------------------------------------------------------------- loading


def content_hash(folder: Path) -> str:
    """The digest stored with each published version of a quiz: its TOML files and answers.py
    (not README.md), framed as quizzes always were so stored digests stay valid."""
    return folder_hash(folder, files=_content_files(folder), framing="nul-separated")


def _content_files(folder: Path) -> list[Path]:
    files = [folder / "quiz.toml", folder / "answers.py"]
    files += sorted((folder / "questions").glob("*.toml"))
    return [f for f in files if f.is_file()]


def _import_answers(file: Path, slug: str, digest: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"quiz_answers_{slug}_{digest[:12]}", file)
    if spec is None or spec.loader is None:
        raise QuizFileError(f"{file}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # an author's mistake: report it, never crash the sync
        raise QuizFileError(f"{file}: cannot be imported: {type(exc).__name__}: {exc}") from None
    return module


def _variable_choices(var: Table, module: ModuleType, answers_file: Path) -> tuple[Any, ...]:
    """The values a variable draws from (``choices`` or ``choices_from``); () for a range."""
    if "choices_from" in var.data:
        source = var.get("choices_from", str)
        values = getattr(module, source, None)
        if not isinstance(values, list | tuple) or not values:
            raise var.fail("choices_from", f"{answers_file} has no non-empty list '{source}'")
        choices = tuple(values)
    elif "choices" in var.data:
        choices = tuple(var.get("choices", list))
        if not choices:
            raise var.fail("choices", "must list at least one value")
    else:
        return ()
    try:
        encoded = [json.dumps(c, sort_keys=True) for c in choices]
    except (TypeError, ValueError):
        raise var.fail("choices", "values must be numbers, strings, lists or tables") from None
    if len(set(encoded)) != len(encoded):
        raise var.fail("choices", "values must be unique")
    return choices


def _parse_variables(table: Table, module: ModuleType, answers_file: Path) -> tuple[Variable, ...]:
    variables = []
    for name in table.data:
        if not _IDENT.match(name) or name in ("answer", "answer_text", "unit", "wrong"):
            raise table.fail(name, "a variable needs a Python identifier name, not a reserved one")
        var = table.sub(name)
        var.only(("choices", "choices_from", "range", "step", "decimals"))
        choices = _variable_choices(var, module, answers_file)
        if choices:
            variables.append(Variable(name, choices=choices))
            continue
        bounds = var.get("range", list)
        if len(bounds) != 2 or not all(isinstance(b, int | float) for b in bounds):
            raise var.fail("range", "must be [low, high] with two numbers")
        low, high = bounds
        if low > high:
            raise var.fail("range", "low must not be above high")
        decimals = var.get("decimals", int, None)
        step = var.get("step", int, 1)
        if step < 1:
            raise var.fail("step", "must be a positive integer")
        if decimals is None and not (isinstance(low, int) and isinstance(high, int)):
            raise var.fail("range", "float bounds need 'decimals' (how many to keep)")
        variables.append(Variable(name, low=low, high=high, step=step, decimals=decimals))
    return tuple(variables)


def _parse_question(file: Path, module: ModuleType, answers_file: Path) -> Question:
    top = read_toml(file)
    top.only(
        ("id", "type", "section", "points", "text", "explanation", "variables", "choices",
         "answer", "shuffle")
    )  # fmt: skip
    key = top.get("id", str, file.stem)
    if not _KEY.match(key):
        raise top.fail("id", "use lower-case letters, digits and dashes (at most 80)")
    kind = top.get("type", str)
    if kind not in KINDS:
        raise top.fail("type", f"must be one of {', '.join(KINDS)}")
    points = top.number("points", 1.0, sign="positive")
    variables = _parse_variables(top.sub("variables", {}), module, answers_file)
    answer = top.sub("answer", {})
    answer.only(
        ("function", "value", "unit", "rel_tol", "abs_tol", "sig_figs", "digits", "wrong", "format")
    )
    function = None
    if "function" in answer.data:
        name = answer.get("function", str)
        function = getattr(module, name, None)
        if not callable(function):
            raise answer.fail("function", f"{answers_file} has no function '{name}'")
    common: dict[str, Any] = dict(
        key=key,
        kind=kind,
        file=file,
        section=top.get("section", str, ""),
        points=points,
        text=_texts(top, "text"),
        explanation=_texts(top, "explanation"),
        variables=variables,
        shuffle=top.get("shuffle", bool, True),
        function=function,
    )
    if kind == "numeric":
        if "choices" in top.data:
            raise top.fail("choices", "a numeric question has no choices")
        numeric = _parse_numeric(answer, function is not None)
        _check_digits_are_asked_for(top, numeric["tolerance"].digits)
        return Question(**common, **numeric)
    for extra in ("value", "unit", "rel_tol", "abs_tol", "sig_figs", "digits", "wrong", "format"):
        if extra in answer.data:
            raise answer.fail(extra, f"only numeric questions have it; this one is '{kind}'")
    return Question(**common, choices=_parse_choices(top, kind, function is not None))


def _parse_numeric(answer: Table, has_function: bool) -> dict[str, Any]:
    value = None
    if "value" in answer.data:
        raw = answer.get("value", (int, float))
        if not math.isfinite(raw):
            raise answer.fail("value", "must be a finite number")
        value = float(raw)
    if has_function == (value is not None):
        raise answer.fail("function", "give exactly one of 'function' and 'value'")
    unit = answer.get("unit", str, None)
    if unit is not None:
        try:
            units.declared(unit)
        except KeyError:
            raise answer.fail("unit", f"'{unit}' is not a unit we know (e.g. us, GB/s)") from None
    sig_figs = answer.get("sig_figs", int, None)
    rel_tol = answer.number("rel_tol", 0.0, sign="non_negative")
    abs_tol = answer.number("abs_tol", 0.0, sign="non_negative")
    if sig_figs is not None:
        if rel_tol or abs_tol:
            raise answer.fail("sig_figs", "give either sig_figs or rel_tol/abs_tol, not both")
        if not 1 <= sig_figs <= 15:
            raise answer.fail("sig_figs", "must be between 1 and 15")
    elif not (rel_tol or abs_tol):
        raise answer.fail("rel_tol", "a numeric answer needs rel_tol, abs_tol or sig_figs")
    wrong = answer.get("wrong", list, [])
    if not all(isinstance(w, int | float) and not isinstance(w, bool) for w in wrong):
        raise answer.fail("wrong", "must be a list of numbers (common wrong answers)")
    fmt = answer.get("format", str, ".4g")
    try:
        format(1.5, fmt)
    except ValueError:
        raise answer.fail("format", f"'{fmt}' is not a Python number format such as .3g") from None
    return dict(
        value=value,
        unit=unit,
        tolerance=Tolerance(rel_tol, abs_tol, sig_figs, _parse_digits(answer)),
        wrong=tuple(float(w) for w in wrong),
        answer_format=fmt,
    )


def _parse_digits(answer: Table) -> int:
    """How many significant figures the always-accepted rounded answer keeps (README.md,
    "Numeric answers and rounding")."""
    digits: int = answer.get("digits", int, DEFAULT_DIGITS)
    if not DEFAULT_DIGITS <= digits <= 6:
        raise answer.fail(
            "digits",
            f"must be between {DEFAULT_DIGITS} and 6: an answer rounded to {DEFAULT_DIGITS} "
            "significant figures is always accepted, a question may only ask for more",
        )
    return digits


# How a question's text says it wants more than the default two significant figures.
DIGITS_ASKED = {"en": "significant figures", "zh": "有效数字"}


def _check_digits_are_asked_for(top: Table, digits: int) -> None:
    """A student is held to more than 2 significant figures only where the text asks for them:
    both languages must name the number of figures ("3 significant figures", "3 位有效数字")."""
    if digits == DEFAULT_DIGITS:
        return
    text = top.sub("text")
    for lang, phrase in DIGITS_ASKED.items():
        wanted = f"{digits} {phrase}" if lang == "en" else f"{digits} 位{phrase}"
        if wanted not in text.get(lang, str):
            raise top.fail(
                "answer.digits",
                f"asks for {digits} significant figures, so text.{lang} must say '{wanted}'",
            )


def _parse_choices(top: Table, kind: str, has_function: bool) -> tuple[Choice, ...]:
    raw = top.get("choices", list)
    if len(raw) < 2:
        raise top.fail("choices", "list at least two choices")
    choices = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise top.fail(f"choices[{i}]", "must be a table with id, en, zh")
        table = top.nested(f"choices[{i}]", entry)
        table.only(("id", "en", "zh", "correct"))
        cid = table.get("id", str)
        if not _KEY.match(cid):
            raise table.fail("id", "use lower-case letters, digits and dashes")
        text = {lang: table.get(lang, str) for lang in LANGUAGES}
        if has_function and "correct" in entry:
            raise table.fail("correct", "the answer function decides; drop 'correct' here")
        choices.append(Choice(cid, text, table.get("correct", bool, False)))
    ids = [c.id for c in choices]
    if len(set(ids)) != len(ids):
        raise top.fail("choices", f"ids must be unique: {ids}")
    if not has_function:
        n_correct = sum(c.correct for c in choices)
        if kind == "single" and n_correct != 1:
            raise top.fail(
                "choices", f"a single-choice question needs exactly one correct, not {n_correct}"
            )
        if kind == "multiple" and n_correct < 1:
            raise top.fail("choices", "mark at least one choice correct = true")
    return tuple(choices)


def load_quiz(folder: Path | str, *, validate: bool = True) -> QuizSpec:
    """Load one quiz folder; with `validate`, also draw and check 100 variants per question."""
    folder = Path(folder).resolve()
    quiz_file = folder / "quiz.toml"
    answers_file = folder / "answers.py"
    if (folder / "exercise.toml").exists():
        raise QuizFileError(f"{folder}: holds both quiz.toml and exercise.toml; keep one")
    for required in (quiz_file, answers_file):
        if not required.is_file():
            raise QuizFileError(f"{required}: required file is missing")
    top = read_toml(quiz_file)
    top.only(("slug", "chapter", "title", "reveal", "attempt_scores"))
    slug = top.get("slug", str)
    if not _KEY.match(slug):
        raise top.fail("slug", "use lower-case letters, digits and dashes")
    reveal = top.get("reveal", str, "after_attempts")
    if reveal not in REVEAL_MODES:
        raise top.fail("reveal", f"must be one of {', '.join(REVEAL_MODES)}")
    scores = top.get("attempt_scores", list, list(DEFAULT_ATTEMPT_SCORES))
    if (
        not scores
        or not all(isinstance(s, int | float) and not isinstance(s, bool) for s in scores)
        or not all(0 < s <= 1 for s in scores)
        or any(b > a for a, b in itertools.pairwise(scores))
    ):
        raise top.fail("attempt_scores", "must be a non-increasing list of numbers in (0, 1]")
    digest = content_hash(folder)
    module = _import_answers(answers_file, slug, digest)
    files = sorted((folder / "questions").glob("*.toml"))
    if not files:
        raise QuizFileError(f"{folder / 'questions'}: no question files (*.toml) found")
    questions = tuple(_parse_question(f, module, answers_file) for f in files)
    seen: dict[str, Path] = {}
    for q in questions:
        if q.key in seen:
            raise QuizFileError(f"{q.file}: field 'id': '{q.key}' is also used by {seen[q.key]}")
        seen[q.key] = q.file
    spec = QuizSpec(
        slug=slug,
        chapter=top.get("chapter", str, folder.parent.name),
        path=folder,
        title=_texts(top, "title"),
        reveal=reveal,
        attempt_scores=tuple(float(s) for s in scores),
        questions=questions,
        content_hash=digest,
    )
    if validate:
        for question in questions:
            validate_question(question)
    return spec


def find_quiz_folders(root: Path | str) -> list[Path]:
    root = Path(root)
    return sorted(
        p.parent for p in root.rglob("quiz.toml") if "samples" not in p.relative_to(root).parts
    )


def load_quizzes(root: Path | str, *, validate: bool = True) -> list[QuizSpec]:
    quizzes = [load_quiz(folder, validate=validate) for folder in find_quiz_folders(root)]
    slugs = SlugRegistry()
    for quiz in quizzes:
        slugs.claim(quiz.slug, quiz.path, "quiz.toml")
    return quizzes


# --------------------------------------------------------------------------- validation


def _render_checked(question: Question, fld: str, template: str, context: Mapping[str, Any]) -> str:
    try:
        return render(template, context)
    except KeyError as exc:
        hint = (
            " (the question text sees only the variables; answers belong in the explanation)"
            if fld.startswith(("text", "choices"))
            else ""
        )
        raise QuizFileError(
            f"{question.file}: field '{fld}': {{{exc.args[0]}}} is not defined{hint}"
        ) from None
    except (ValueError, IndexError, TypeError, AttributeError) as exc:
        raise QuizFileError(f"{question.file}: field '{fld}': cannot be filled in: {exc}") from None


def check_variant(question: Question, variables: Mapping[str, Any]) -> None:
    """Everything that must hold for one drawn variant; QuizFileError naming the field if not."""
    solution = question.solve(variables)
    for lang in LANGUAGES:
        _render_checked(question, f"text.{lang}", question.text[lang], variables)
        texts = [
            _render_checked(question, f"choices[{i}].{lang}", c.text[lang], variables)
            for i, c in enumerate(question.choices)
        ]
        if len(set(texts)) != len(texts):
            raise QuizFileError(
                f"{question.file}: field 'choices': two choices read the same in '{lang}' "
                f"for variables {dict(variables)}"
            )
        context = question.explanation_context(solution, variables, lang)
        _render_checked(question, f"explanation.{lang}", question.explanation[lang], context)
    if (
        question.kind == "single"
        and isinstance(solution.answer, frozenset)
        and len(solution.answer) != 1
    ):
        raise QuizFileError(
            f"{question.file}: field 'answer.function': a single-choice question needs exactly "
            f"one correct choice, got {sorted(solution.answer)} for {dict(variables)}"
        )
    if question.kind == "multiple" and not solution.answer:
        raise QuizFileError(f"{question.file}: field 'answer.function': no correct choice")
    if question.kind != "numeric":
        return
    assert question.tolerance is not None and isinstance(solution.answer, float)
    answer = solution.answer
    for wrong in solution.wrong:
        if question.tolerance.accepts(wrong, answer):
            raise QuizFileError(
                f"{question.file}: field 'answer.wrong': the common wrong answer {wrong:g} is "
                f"within the tolerance ({question.tolerance.describe()}) of the answer {answer:g} "
                f"for variables {dict(variables)}; tighten the tolerance"
            )
    shown = format(answer, question.answer_format)
    if not _read_back(question, shown, answer):
        raise QuizFileError(
            f"{question.file}: field 'answer.format': the answer is shown as {shown}, which the "
            f"tolerance ({question.tolerance.describe()}) refuses; show more digits"
        )
    # The honest-rounding rule, end to end: the rounded answer as a student types it, plain
    # and with the unit the page shows, is read and accepted (README.md, "Numeric answers").
    rounded = f"{round_significant(answer, question.tolerance.digits):.15g}"
    for typed in (rounded, *(f"{rounded} {units.answer_unit(question.unit, lang)}"
                             for lang in LANGUAGES if question.unit)):  # fmt: skip
        if not _read_back(question, typed, answer):
            raise QuizFileError(
                f"{question.file}: field 'answer.unit': '{typed}', the answer rounded to "
                f"{question.tolerance.digits} significant figures, is refused for variables "
                f"{dict(variables)}"
            )


def _read_back(question: Question, typed: str, answer: float) -> bool:
    """Whether `typed`, read as a student's answer, is accepted for `answer`."""
    from courseware.quizzes.parsing import AnswerInvalid, parse_number

    assert question.tolerance is not None
    try:
        value = parse_number(typed, unit=question.unit).value
    except AnswerInvalid:
        return False
    return question.tolerance.accepts(value, answer)


def validate_question(question: Question, variants: int = VALIDATION_VARIANTS) -> None:
    count = variants if question.is_parameterized else 1
    for i in range(count):
        seed = int.from_bytes(hashlib.sha256(f"validate:{question.key}:{i}".encode()).digest()[:8])
        variables = question.draw(seed)
        try:
            json.dumps(variables)
        except (TypeError, ValueError):
            raise QuizFileError(
                f"{question.file}: field 'variables': values must be JSON-like"
            ) from None
        check_variant(question, variables)
