"""The questions added for issue 27 (part 2), checked as a TA would: every variant's answer
recomputed here from the question's own text, with formulas written independently of answers.py;
the explanation works the student's own numbers in both languages; the bank covers the chapter."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from courseware.quizzes.spec import LANGUAGES, Question
from tests.courseware.quizzes.conftest import bank, question
from tests.courseware.quizzes.test_chapter_questions import every_variant, explained


def cluster_gpus(v: dict[str, Any]) -> float:
    seconds = 6 * v["params_b"] * 1e9 * v["tokens_t"] * 1e12 / (312e12 * v["mfu"] / 100)
    return seconds / (v["days"] * 24 * 3600)


def tokens_per_second(v: dict[str, Any]) -> float:
    return v["gpu"]["tflops"] * 1e12 * v["mfu"] / 100 / (6 * v["params_b"] * 1e9)


def threads_ratio(v: dict[str, Any]) -> float:
    return v["gpu"]["sms"] * 2048 / (2 * v["cores"])


def occupancy(v: dict[str, Any]) -> float:
    # Resident blocks: the tightest of threads, blocks, registers and shared memory per SM.
    blocks = min(
        2048 // v["threads"],
        32,
        65536 // (v["regs"] * v["threads"]),
        164 // v["smem_kb"] if v["smem_kb"] else 32,
    )
    return blocks * v["threads"] / 32


def coalesced_bytes(v: dict[str, Any]) -> float:
    size, stride = v["dtype"]["bytes"], v["stride"]
    if stride * size >= 32:  # every lane in its own sector
        return 32 * 32.0
    span = 32 * stride * size  # bytes from the first lane's start to past the last lane
    return math.ceil(span / 32) * 32.0


def bank_ways(v: dict[str, Any]) -> float:
    return float(math.gcd(v["stride"], 32))


def in_flight_kb(v: dict[str, Any]) -> float:
    return v["gpu"]["bw_tbs"] * 1e12 * v["latency_ns"] * 1e-9 / v["gpu"]["sms"] / 1000


def l2_roofline(v: dict[str, Any]) -> float:
    return min(312.0, 2.039 * v["ai_hbm"], 7.0 * v["ai_hbm"] / v["reuse"])


def tile_ai(v: dict[str, Any]) -> float:
    t, k, size = v["tile"], 64, v["dtype"]["bytes"]
    return (2 * t * t * k) / ((t * k + k * t) * size)


def double_buffer(v: dict[str, Any]) -> float:
    load, compute, n = v["load_ns"], v["compute_ns"], v["tiles"]
    # Simulate the two-buffer pipeline: tile i's load may start once tile i-2's compute has
    # freed its buffer and tile i-1's load is done (one copy engine); compute i needs load i.
    load_done: list[float] = []
    compute_done: list[float] = []
    for i in range(n):
        start = max(load_done[i - 1] if i else 0.0, compute_done[i - 2] if i >= 2 else 0.0)
        load_done.append(start + load)
        begin = max(load_done[i], compute_done[i - 1] if i else 0.0)
        compute_done.append(begin + compute)
    return compute_done[-1] / 1000


def launch_mb(v: dict[str, Any]) -> float:
    return v["gpu"]["bw_tbs"] * 1e12 * v["launch_us"] * 1e-6 / 1e6


def score_traffic_gb(v: dict[str, Any]) -> float:
    one_matrix = v["s"] * v["s"] * v["dtype"]["bytes"]
    passes = ("write scores", "read scores", "write probabilities", "read probabilities")
    return len(passes) * v["b"] * v["h"] * one_matrix / 1e9


def achieved_pct(v: dict[str, Any]) -> float:
    case = v["case"]
    return case["mb"] / case["t_us"] / case["gpu"]["bw_tbs"] * 100  # MB/us = TB/s


def kv_bytes(model: dict[str, Any], tokens: int) -> float:
    return tokens * model["layers"] * 2 * model["kv_heads"] * model["head_dim"] * 2


def kv_gb(v: dict[str, Any]) -> float:
    return kv_bytes(v["model"], v["batch"] * v["context"]) / 1e9


def decode_ms(v: dict[str, Any]) -> float:
    total = v["model"]["params_b"] * 2e9 + kv_bytes(v["model"], v["batch"] * v["context"])
    return total / (v["gpu"]["bw_tbs"] * 1e12) * 1e3


# The questions that were there before issue 27, recomputed the same way.
def training_years(v: dict[str, Any]) -> float:
    seconds = 6 * v["params_b"] * 1e9 * v["tokens_t"] * 1e12 / (v["rate"] * 1e12)
    return seconds / (365.25 * 24 * 3600)


def bandwidth_ratio(v: dict[str, Any]) -> float:
    return v["gpu"]["bw_tbs"] * 1000 / v["cpu_gbs"]


def per_sm(v: dict[str, Any]) -> float:
    return v["gpu"]["tflops"] / v["gpu"]["sms"]


def divergence(v: dict[str, Any]) -> float:
    return float(v["a"] + v["b"])  # the warp runs both branches, one after the other


def latency_ratio(v: dict[str, Any]) -> float:
    return 400 / v["level"]["cycles"]


def ridge(v: dict[str, Any]) -> float:
    return v["gpu"]["tflops"] / v["gpu"]["bw_tbs"]


def attainable(v: dict[str, Any]) -> float:
    return min(v["gpu"]["tflops"], v["gpu"]["bw_tbs"] * v["ai"])


def layernorm_bytes(v: dict[str, Any]) -> float:
    return 2.0 * v["b"] * v["s"] * v["d"] * v["dtype"]["bytes"]


def layernorm_ai(v: dict[str, Any]) -> float:
    return 5 * v["b"] * v["s"] * v["d"] / layernorm_bytes(v)


def layernorm_us(v: dict[str, Any]) -> float:
    return layernorm_bytes(v) / (v["gpu"]["bw_tbs"] * 1e12) * 1e6


def layernorm_ratio(v: dict[str, Any]) -> float:
    compute_s = 5 * v["b"] * v["s"] * v["d"] / (v["gpu"]["tflops"] * 1e12)
    return layernorm_us(v) / 1e6 / compute_s


def vector_add_ai(v: dict[str, Any]) -> float:
    return 1 / (3 * v["dtype"]["bytes"])


def vector_add_us(v: dict[str, Any]) -> float:
    return 3 * 2 ** v["log2n"] * v["dtype"]["bytes"] / (v["gpu"]["bw_tbs"] * 1e12) * 1e6


def gemm_flops(v: dict[str, Any]) -> float:
    return 2.0 * v["m"] * v["n"] * v["k"]


def gemm_ai(v: dict[str, Any]) -> float:
    return 2 * v["n"] ** 3 / (3 * v["n"] ** 2 * 2)


def tiled_gb(v: dict[str, Any]) -> float:
    naive = v["n"] ** 2 * 2 * v["n"] * 2  # n² outputs, each a row and a column of n bf16
    return naive / v["tile"] / 1e9


def unfused_mb(v: dict[str, Any]) -> float:
    return 5.0 * v["mb"]  # read x, write h, read h, read residual, write y


FIXED = {
    "04-a100-cores-per-sm": 6912 / 108,
    "06-tensor-vs-cuda": 312 / 19.5,
    "19-layernorm-chapter-example": 2 * 8 * 512 * 4096 * 2 / 2.039e12 * 1e6,
    "28-fusion-savings": (20 - 12) / 20 * 100,
}

RECOMPUTED: dict[str, Callable[[dict[str, Any]], float]] = {
    "01-training-years": training_years,
    "03-bandwidth-ratio": bandwidth_ratio,
    "05-tflops-per-sm": per_sm,
    "08-divergence-cycles": divergence,
    "11-latency-ratio": latency_ratio,
    "13-ridge-point": ridge,
    "15-roofline-attainable": attainable,
    "17-layernorm-ai": layernorm_ai,
    "18-layernorm-memory-time": layernorm_us,
    "20-layernorm-time-ratio": layernorm_ratio,
    "21-vector-add-ai": vector_add_ai,
    "22-vector-add-time": vector_add_us,
    "23-gemm-flops": gemm_flops,
    "24-gemm-ai": gemm_ai,
    "25-tiling-reuse": tiled_gb,
    "27-fusion-unfused-traffic": unfused_mb,
    "35-cluster-size": cluster_gpus,
    "36-tokens-per-second": tokens_per_second,
    "37-threads-in-flight": threads_ratio,
    "38-occupancy": occupancy,
    "39-coalescing": coalesced_bytes,
    "40-bank-conflicts": bank_ways,
    "41-littles-law": in_flight_kb,
    "42-l2-roofline": l2_roofline,
    "43-tile-intensity": tile_ai,
    "44-double-buffering": double_buffer,
    "45-launch-overhead": launch_mb,
    "46-attention-score-traffic": score_traffic_gb,
    "47-achieved-bandwidth": achieved_pct,
    "49-kv-cache-size": kv_gb,
    "50-decode-step": decode_ms,
}


def test_the_bank_covers_every_section_three_times_and_has_48_questions() -> None:
    sections = Counter(q.section for q in bank().questions)
    assert len(bank().questions) >= 48
    assert {f"15.{i}" for i in range(1, 10)} == set(sections)
    assert min(sections.values()) >= 3, sections


@pytest.mark.django_db
def test_sync_content_check_reports_the_questions_per_section() -> None:
    out = StringIO()
    call_command("sync_content", "--check", stdout=out)
    line = out.getvalue()
    total = int(re.search(r"(\d+) quiz questions", line)[1])  # type: ignore[index]
    assert total >= 48
    reported = dict(re.findall(r"(15\.\d) (\d+)", line.split("questions per section:")[1]))
    assert set(reported) == {f"15.{i}" for i in range(1, 10)}
    assert all(int(n) >= 3 for n in reported.values()), reported


def test_every_numeric_question_is_recomputed_here() -> None:
    numeric = {q.key for q in bank().questions if q.kind == "numeric"}
    assert numeric == set(RECOMPUTED) | set(FIXED)


@pytest.mark.parametrize("key", sorted(FIXED))
def test_a_fixed_answer_is_its_arithmetic(key: str) -> None:
    assert question(key).solve({}).answer == pytest.approx(FIXED[key], rel=1e-3)


def all_variants(asked: Question) -> list[dict[str, Any]]:
    """Every combination where the variables are lists; 300 draws where one is a range."""
    if all(v.choices for v in asked.variables):
        return list(every_variant(asked))
    return [asked.draw(seed) for seed in range(300)]


@pytest.mark.parametrize("key", sorted(RECOMPUTED))
def test_every_variant_of_a_numeric_question_recomputes(key: str) -> None:
    asked = question(key)
    expected_for = RECOMPUTED[key]
    count = 0
    for v in all_variants(asked):
        solution = asked.solve(v)
        assert solution.answer == pytest.approx(expected_for(v), rel=1e-9), (key, v)
        for lang in LANGUAGES:
            text = explained(asked, v, lang)
            # Worked with the student's own numbers: the answer as the explanation rounds it.
            assert re.search(r"\*\*[^*]*\d[^*]*\*\*", text), (key, lang)
        count += 1
    assert count >= 3, key


def shown_answer(asked: Question, v: dict[str, Any], lang: str) -> str:
    """The bold figure the explanation gives, as text."""
    match = re.search(r"\*\*([^*]+)\*\*", explained(asked, v, lang))
    assert match is not None
    return match[1]


@pytest.mark.parametrize("key", sorted(RECOMPUTED))
def test_the_explanations_bold_answer_is_this_variants(key: str) -> None:
    asked = question(key)
    for v in all_variants(asked)[:40]:
        exact = asked.solve(v).answer
        assert isinstance(exact, float)
        for lang in LANGUAGES:
            figure = re.search(r"[-0-9.e+]+", shown_answer(asked, v, lang).replace(",", ""))
            assert figure is not None
            assert float(figure[0]) == pytest.approx(exact, rel=0.006), (key, lang, v)


def test_the_profiler_question_picks_the_biggest_saving_and_not_always_the_longest_row() -> None:
    asked = question("48-profiler-table")
    picks = []
    for v in every_variant(asked):
        rows = v["profile"]
        saving = {k: ms * (100 - pct) / 100 for k, (ms, pct) in rows.items()}
        best, runner_up = sorted(saving.values(), reverse=True)[:2]
        assert best >= 1.2 * runner_up, v  # no variant hangs on a near tie
        first = max(saving, key=saving.__getitem__)
        assert asked.solve(v).answer == frozenset({first})
        longest = max(rows, key=lambda k: rows[k][0])
        picks.append((first, longest))
        for lang in LANGUAGES:
            assert f"**{asked.answer_text(asked.solve(v), v, lang)}**" in explained(asked, v, lang)
    assert len({first for first, _ in picks}) >= 3
    assert sum(first != longest for first, longest in picks) >= 3


def test_the_checked_figures_behind_the_added_questions() -> None:
    """Spot values a TA can check by hand."""
    a100 = {"name": "A100", "bw_tbs": 2.039, "tflops": 312, "sms": 108}
    assert question("37-threads-in-flight").solve({"cores": 64, "gpu": a100}).answer == 1728
    q38 = question("38-occupancy")
    assert q38.solve({"threads": 256, "regs": 64, "smem_kb": 0}).answer == 32  # registers bind
    assert q38.solve({"threads": 256, "regs": 32, "smem_kb": 48}).answer == 24  # shared binds
    q40 = question("40-bank-conflicts")
    assert q40.solve({"stride": 33}).answer == 1 and q40.solve({"stride": 32}).answer == 32
    fp32 = {"name": "fp32", "bytes": 4}
    assert question("39-coalescing").solve({"dtype": fp32, "stride": 1}).answer == 128
    assert question("39-coalescing").solve({"dtype": fp32, "stride": 8}).answer == 1024
    models = question("49-kv-cache-size").variables[0].choices
    seven_b = next(m for m in models if m["layers"] == 32)
    # 0.5 MiB per token (2 x 32 x 32 x 128 x 2 B), 4096 tokens: 2.1 GB per sequence.
    kv = question("49-kv-cache-size").solve({"model": seven_b, "batch": 1, "context": 4096})
    assert kv.answer == pytest.approx(2.147, rel=1e-3)


@pytest.mark.parametrize(
    ("key", "lang", "phrase"),
    [
        # The chapter's own quiz on FlashAttention, and its options, are not asked again.
        ("30-flashattention", "zh", "能大幅加速注意力计算"),
        ("30-flashattention", "zh", "减少了 Q/K/V 的维度"),
        ("30-flashattention", "en", "Where does the speed come from"),
        ("06-tensor-vs-cuda", "zh", "低精度训练成为常态"),
        ("06-tensor-vs-cuda", "en", "low-precision training is the norm"),
        ("26-tensor-core-shapes", "zh", "偏好 16 或 64 的倍数"),
        ("26-tensor-core-shapes", "en", "multiples of 16, and best of 64"),
        ("33-transformer-part", "zh", "AI 约 0.3–2"),
        ("34-transformer-gemms", "zh", "Tensor Core 友好"),
        ("34-transformer-gemms", "en", "they are where fusion pays"),
        ("03-bandwidth-ratio", "en", "How many times more memory bandwidth does the GPU have"),
    ],
)
def test_reworded_questions_leave_the_chapters_sentences(key: str, lang: str, phrase: str) -> None:
    asked = question(key)
    shown = [asked.text[lang], asked.explanation[lang], *(c.text[lang] for c in asked.choices)]
    assert all(phrase not in text for text in shown)


def test_q30_still_has_one_right_answer_about_traffic() -> None:
    asked = question("30-flashattention")
    assert asked.solve({}).answer == frozenset({"tiling"})
    for lang in LANGUAGES:
        assert "HBM" in asked.explanation[lang] and "O(S²)" in asked.explanation[lang]
