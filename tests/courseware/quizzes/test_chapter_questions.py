"""The chapter's questions as a careful TA reads them: every variant's answer, the units a
student may type, the explanation worked with the student's own numbers, and wording that
leaves one right answer and little to gain from guessing."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator
from typing import Any

import pytest

from courseware.quizzes.parsing import parse_number
from courseware.quizzes.spec import LANGUAGES, Question, render
from tests.conftest import Cast
from tests.courseware.quizzes.conftest import answer, bank, question, right_answer, variant

GPUS: dict[str, dict[str, Any]] = {
    "a100": {"name": "A100", "bw_tbs": 2.039, "tflops": 312, "sms": 108},
    "h100": {"name": "H100", "bw_tbs": 3.35, "tflops": 990, "sms": 132},
    "h200": {"name": "H200", "bw_tbs": 4.8, "tflops": 990, "sms": 132},
}
CJK = r"[\u3400-\u4dbf\u4e00-\u9fff]"
LATIN = r"[A-Za-z0-9`]"


def variants(asked: Question, count: int = 60) -> Iterator[dict[str, Any]]:
    """``count`` drawn variants (one for a fixed question), the same on every run."""
    for i in range(count if asked.is_parameterized else 1):
        digest = hashlib.sha256(f"chapter-test:{asked.key}:{i}".encode()).digest()
        yield asked.draw(int.from_bytes(digest[:8]))


def every_variant(asked: Question) -> Iterator[dict[str, Any]]:
    """Every combination of the variables' choices (the questions below draw from lists)."""
    names = [v.name for v in asked.variables]
    for values in itertools.product(*(v.choices for v in asked.variables)):
        yield dict(zip(names, values, strict=True))


def accepts(asked: Question, variables: dict[str, Any], typed: str) -> bool:
    """Whether ``typed`` is marked right for this variant, as attempt_create marks it."""
    solution = asked.solve(variables)
    assert asked.tolerance is not None and isinstance(solution.answer, float)
    return asked.tolerance.accepts(parse_number(typed, unit=asked.unit).value, solution.answer)


def explained(asked: Question, variables: dict[str, Any], lang: str = "en") -> str:
    solution = asked.solve(variables)
    return render(asked.explanation[lang], asked.explanation_context(solution, variables, lang))


def texts(asked: Question, variables: dict[str, Any], lang: str) -> list[str]:
    """Everything a student reads in ``lang``: text, choices and the worked explanation."""
    return [
        render(asked.text[lang], variables),
        *(render(c.text[lang], variables) for c in asked.choices),
        explained(asked, variables, lang),
    ]


def guessing_share(asked: Question, scores: tuple[float, ...]) -> float:
    """Expected share of the points for ticking at random, each attempt on a new variant."""
    options = len(asked.choices) if asked.kind == "single" else 2 ** len(asked.choices) - 1
    p = 1 / options
    return sum((1 - p) ** k * p * s for k, s in enumerate(scores))


# ------------------------------------------------------------------------ units


def test_q1_reads_years_in_either_language_and_the_chapters_2660() -> None:
    asked = question("01-training-years")
    for v in every_variant(asked):
        years = asked.solve(v).answer
        assert isinstance(years, float)
        for typed in (f"{years:.4g}", f"{years:.4g} years", f"{years:.4g} 年", f"{years:.3g} yr"):
            assert accepts(asked, v, typed), (v, typed)
        assert not accepts(asked, v, f"{years / 3:.4g} 年")
    # The chapter's LLaMA-2-7B figure: 6 x 7e9 x 2e12 FLOPs at 1 TFLOP/s.
    assert accepts(asked, {"params_b": 7, "tokens_t": 2, "rate": 1}, "2660 年")


def test_q1_explanation_gives_the_gpu_time_for_the_students_own_model() -> None:
    asked = question("01-training-years")
    small = {"params_b": 1, "tokens_t": 1, "rate": 1}
    extra = asked.solve(small).extra
    # 6e21 FLOPs at 40% of 312 TFLOP/s: about 9 days on 64 A100s, not "thousands of GPUs".
    assert extra["cluster_days"] == pytest.approx(8.7, abs=0.1)
    assert extra["cluster_gpus"] == 64
    for v in every_variant(asked):
        extra = asked.solve(v).extra
        for lang in LANGUAGES:
            text = explained(asked, v, lang)
            assert f"{v['params_b']}e9 × {v['tokens_t']}e12" in text
            assert f"{extra['gpu_days']:.3g}" in text and f"{extra['cluster_days']:.3g}" in text
            assert "thousands" not in text and "成千上万" not in text


def test_q8_reads_cycles_and_works_the_students_branches() -> None:
    asked = question("08-divergence-cycles")
    for v in variants(asked):
        total = v["a"] + v["b"]
        for typed in (f"{total}", f"{total} cycles", f"{total} 个周期"):
            assert accepts(asked, v, typed), (v, typed)
        assert not accepts(asked, v, f"{max(v['a'], v['b'])} cycles")
        text = explained(asked, v)
        assert f"{v['a']} + {v['b']} = **{total} cycles**" in text
        assert f"other {32 - v['k']} lanes" in text


@pytest.mark.parametrize(
    ("cycles", "typed"),
    [(1, "400x"), (1, "400 次"), (30, "13.3x"), (30, "13.3 倍"), (30, "13 次"), (200, "2×")],
)
def test_q11_reads_a_ratio_with_its_unit(cycles: int, typed: str) -> None:
    asked = question("11-latency-ratio")
    (level,) = [c for c in asked.variables[0].choices if c["cycles"] == cycles]
    assert accepts(asked, {"level": level}, typed)
    assert f"400 / {cycles}" in explained(asked, {"level": level}, "zh")


def test_q11_zh_text_spaces_the_latin_level_names() -> None:
    asked = question("11-latency-ratio")
    shown = {
        c["cycles"]: render(asked.text["zh"], {"level": c}) for c in asked.variables[0].choices
    }
    assert "一次寄存器访问" in shown[1]
    assert "一次 shared memory 访问" in shown[30]
    assert "一次 L2 缓存访问" in shown[200]


@pytest.mark.parametrize(
    ("key", "variables", "typed"),
    [
        ("06-tensor-vs-cuda", {}, "16 倍"),
        ("03-bandwidth-ratio", {"cpu_gbs": 100, "gpu": GPUS["a100"]}, "20.4 倍"),
        ("13-ridge-point", {"gpu": GPUS["a100"]}, "153 FLOP/字节"),
        ("21-vector-add-ai", {"dtype": {"name": "fp32", "bytes": 4}}, "0.0833 FLOP/字节"),
        ("28-fusion-savings", {}, "40"),
        ("28-fusion-savings", {}, "40%"),
    ],
)
def test_units_the_zh_texts_print_are_accepted(
    key: str, variables: dict[str, Any], typed: str
) -> None:
    assert accepts(question(key), variables, typed)


def test_q28_asks_for_a_percentage_and_refuses_a_fraction() -> None:
    asked = question("28-fusion-savings")
    assert not accepts(asked, {}, "0.4")
    assert "percentage" in asked.text["en"] and "百分数" in asked.text["zh"]


# ------------------------------------------------------------------------ one right answer


def test_q16_ticks_the_gpus_whose_ridge_is_above_the_intensity() -> None:
    asked = question("16-roofline-bound")
    ridges = {cid: g["tflops"] / g["bw_tbs"] for cid, g in GPUS.items()}
    kinds = set()
    for v in every_variant(asked):
        below = {cid for cid, r in ridges.items() if v["ai"] < r}
        solution = asked.solve(v)
        assert solution.answer == frozenset(below or {"none"}), v
        kinds.add(len(below))
        # No variant hangs on rounding: the intensity is at least 10% from every ridge.
        assert all(abs(v["ai"] - r) / r >= 0.1 for r in ridges.values()), v
        for lang in LANGUAGES:
            text = explained(asked, v, lang)
            assert "153" in text and "296" in text and "206" in text
            assert f"{v['ai']} FLOP/B" in text
            assert asked.answer_text(solution, v, lang) in text
    assert kinds == {0, 1, 2, 3}


def test_q33_names_its_setting_and_covers_training_and_decoding() -> None:
    asked = question("33-transformer-part")
    answers = {}
    for v in every_variant(asked):
        answers[v["setting"]["en"]] = asked.solve(v).answer
        for lang in LANGUAGES:
            assert v["setting"][lang] in render(asked.text[lang], v)
            assert v["setting"][lang] in explained(asked, v, lang)
        # The stem no longer files a decoding step under "training".
        assert "training" not in asked.text["en"] and "训练" not in asked.text["zh"]
    training = next(a for s, a in answers.items() if "training" in s)
    decoding = next(a for s, a in answers.items() if "decoding" in s)
    assert training == {"layernorm", "softmax"}
    assert decoding == {"qkv", "ffn", "lm-head", "layernorm", "softmax"}


def test_q31_each_observation_fits_exactly_one_action() -> None:
    asked = question("31-profiling-checklist")
    observations = asked.variables[0].choices
    actions = []
    for o in observations:
        solved = asked.solve({"obs": o}).answer
        assert isinstance(solved, frozenset) and len(solved) == 1
        actions += sorted(solved)
    assert sorted(actions) == sorted(c.id for c in asked.choices)
    fuse = next(o for o in observations if o["action"] == "fuse")
    traffic = next(o for o in observations if o["action"] == "traffic")
    # Fusion's symptom rules out a bigger batch; the bandwidth symptom rules out fusing.
    assert "already fills the GPU's memory" in fuse["en"] and "占满了显存" in fuse["zh"]
    assert "already fused" in traffic["en"] and "已经融合" in traffic["zh"]
    for o in observations:
        for lang in LANGUAGES:
            text = explained(asked, {"obs": o}, lang)
            assert o[lang] in text
            assert asked.answer_text(asked.solve({"obs": o}), {"obs": o}, lang) in text


def test_q10_orders_by_latency_and_says_registers_are_the_larger_store() -> None:
    asked = question("10-memory-hierarchy")
    assert "smallest" not in asked.text["en"] and "最小" not in asked.text["zh"]
    assert "256 KB" in asked.explanation["en"] and "192 KB" in asked.explanation["en"]
    assert "不是按容量" in asked.explanation["zh"]


def test_q29s_distractors_are_plainly_false() -> None:
    asked = question("29-consecutive-elementwise")
    shown = " ".join(c.text["en"] for c in asked.choices)
    assert "by design" not in shown
    assert "run at the same time" in shown  # false: one stream runs them in order


def test_random_guessing_earns_little_on_any_choice_question() -> None:
    quiz = bank()
    for asked in quiz.questions:
        if asked.kind == "numeric":
            continue
        share = guessing_share(asked, quiz.attempt_scores)
        # Two options with three attempts gave about 0.74; three options still over 0.5.
        assert share <= 0.46, (asked.key, share)
    for key in ("16-roofline-bound", "33-transformer-part"):
        assert guessing_share(question(key), quiz.attempt_scores) < 0.15, key


# ------------------------------------------------------------------------ wording


@pytest.mark.parametrize(
    ("key", "field", "lang", "phrase"),
    [
        ("30-flashattention", "explanation", "zh", "中间结果留在片上 SRAM"),
        ("30-flashattention", "explanation", "zh", "不在 HBM 中物化"),
        ("29-consecutive-elementwise", "text", "zh", "代码里两个连续的逐元素算子"),
        ("29-consecutive-elementwise", "text", "en", "Two element-wise kernels in a row"),
        ("02-latency-vs-throughput", "explanation", "zh", "（分支预测、乱序执行、大缓存）"),
        ("02-latency-vs-throughput", "explanation", "en", "(branch prediction, out-of-order"),
        ("26-tensor-core-shapes", "explanation", "zh", "16 的倍数时可用"),
    ],
)
def test_the_chapters_wording_is_not_reused(key: str, field: str, lang: str, phrase: str) -> None:
    assert phrase not in getattr(question(key), field)[lang]


def test_q14s_options_are_reworded_and_reordered() -> None:
    asked = question("14-ai-two-on-a100")
    assert [c.id for c in asked.choices] != ["compute", "memory", "neither", "batch"]
    assert all("取决于 batch size" not in c.text["zh"] for c in asked.choices)


def test_zh_texts_space_latin_words() -> None:
    mixed = re.compile(f"{CJK}{LATIN}|{LATIN}{CJK}")
    for asked in bank().questions:
        for v in variants(asked, 30):
            for text in texts(asked, v, "zh"):
                assert not mixed.findall(text), (asked.key, mixed.findall(text), text)


# ------------------------------------------------------------------------ through the service


def test_a_student_types_the_units_the_zh_texts_show(cast: Cast) -> None:
    years = question("01-training-years").solve(variant(cast.alice, "01-training-years")).answer
    assert answer(cast.alice, "01-training-years", f"{years:.4g} 年").is_correct
    v = variant(cast.alice, "08-divergence-cycles")
    assert answer(cast.alice, "08-divergence-cycles", f"{v['a'] + v['b']} 个周期").is_correct
    ratio = question("11-latency-ratio").solve(variant(cast.alice, "11-latency-ratio")).answer
    assert answer(cast.alice, "11-latency-ratio", f"{ratio:.3g}x").is_correct
    assert answer(cast.alice, "06-tensor-vs-cuda", "16 倍").is_correct
    ai = question("17-layernorm-ai").solve(variant(cast.alice, "17-layernorm-ai")).answer
    assert answer(cast.alice, "17-layernorm-ai", f"{ai:.3g} FLOP/字节").is_correct
    assert not answer(cast.bob, "28-fusion-savings", "0.4").is_correct


@pytest.mark.parametrize("key", ["16-roofline-bound", "33-transformer-part"])
def test_a_multiple_choice_variant_is_graded_on_the_students_own_draw(cast: Cast, key: str) -> None:
    right = right_answer(cast.alice, key)
    assert answer(cast.alice, key, right).is_correct
    bob = question(key).solve(variant(cast.bob, key))
    assert isinstance(bob.answer, frozenset)
    # A set that differs from Bob's own by one box is refused.
    flipped = sorted(bob.answer ^ {"layernorm" if key.startswith("33") else "a100"})
    assert not answer(cast.bob, key, flipped).is_correct
