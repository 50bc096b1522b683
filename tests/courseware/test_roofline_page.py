"""The roofline page: checked device figures, the workers' measured devices, the chapter's
operations, preselection from a report's link, and bad query values answered with a note."""

from __future__ import annotations

import json
import math

import pytest
from django.contrib.auth.models import User
from django.test import Client

from courseware.roofline.devices import (
    DATASHEET_DEVICES,
    attainable,
    binding_roof,
    ridge_point,
)
from courseware.roofline.operations import OPERATIONS_BY_KEY
from courseware.submissions.models import Grading
from courseware.submissions.services import grading_record, submission_claim, submission_create
from graders.report.schema import upgrade
from tests.conftest import Cast

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(db: None) -> Client:
    client = Client()
    client.force_login(User.objects.create_user(username="reader", password="pw-reader"))
    return client


def page_data(response) -> dict:
    """The JSON the page embeds for its script, read back the way the script reads it."""
    html = response.content.decode()
    start = html.index('<script id="roofline-data" type="application/json">')
    body = html[html.index(">", start) + 1 : html.index("</script>", start)]
    return json.loads(body)


def device(data: dict, name: str) -> dict:
    return next(d for d in data["devices"] if d["name"] == name)


def record_measurement(cast: Cast, *, name: str, gbps: float, flops: float | None, key: str):
    made = submission_create(user=cast.alice, exercise_slug="vector-add", code="def f(): ...")
    submission_claim(submission_id=made.pk)
    report = {
        "verdict": "correct",
        "score": 10,
        "max_score": 10,
        "device": {"kind": "cpu", "name": name},
        "peak": {"gbps": gbps, "flops_per_s": flops, "method": "triad", "datasheet_gbps": None},
    }
    grading_record(
        submission_id=made.pk, report=upgrade(report), run_key=key, worker="w", duration_s=1
    )


# ---------------------------------------------------------------- the arithmetic


def test_the_a100_ridge_is_the_chapters_153_flop_per_byte() -> None:
    assert ridge_point(bandwidth_gbps=2039, flops_per_s=312e12) == pytest.approx(153, rel=0.01)


def test_below_the_ridge_the_memory_roof_binds_and_above_it_the_peak() -> None:
    a100 = {"bandwidth_gbps": 2039.0, "flops_per_s": 312e12}
    assert attainable(ai=1.25, **a100) == pytest.approx(1.25 * 2039e9)
    assert binding_roof(ai=1.25, **a100) == "memory"
    assert attainable(ai=1000, **a100) == 312e12
    assert binding_roof(ai=1000, **a100) == "compute"


def test_without_a_compute_peak_only_the_memory_roof_applies() -> None:
    assert attainable(ai=1e6, bandwidth_gbps=25.0, flops_per_s=None) == 25e9 * 1e6
    assert binding_roof(ai=1e6, bandwidth_gbps=25.0, flops_per_s=None) == "memory"


def test_the_datasheet_figures_are_the_checked_ones() -> None:
    figures = {
        d.name: (d.bandwidth_gbps, {r.key: r.flops_per_s for r in d.roofs})
        for d in DATASHEET_DEVICES
    }
    assert figures["A100"] == (2039.0, {"bf16-tensor": 312e12, "fp32": 19.5e12})
    assert figures["H100"][0] == 3350.0 and figures["H100"][1]["bf16-tensor"] == 990e12
    assert figures["H200"][0] == 4800.0 and figures["H200"][1]["bf16-tensor"] == 990e12
    ridges = {
        name: ridge_point(bandwidth_gbps=bw, flops_per_s=roofs["bf16-tensor"])
        for name, (bw, roofs) in figures.items()
    }
    assert ridges == pytest.approx({"A100": 153, "H100": 295, "H200": 206}, rel=0.01)


def test_the_operations_count_as_the_quiz_does() -> None:
    assert OPERATIONS_BY_KEY["vector-add-bf16"].ai == pytest.approx(1 / 6)
    assert OPERATIONS_BY_KEY["vector-add-fp32"].ai == pytest.approx(1 / 12)
    layernorm = OPERATIONS_BY_KEY["layernorm"]
    assert layernorm.flops == pytest.approx(8.4e7, rel=0.01)
    assert layernorm.bytes == pytest.approx(67e6, rel=0.01)
    assert layernorm.ai == pytest.approx(1.25)
    assert OPERATIONS_BY_KEY["gemm-1024"].ai == pytest.approx(1024 / 3)
    # The fact check's correction: unfused 20 MB, fused 12 MB.
    assert OPERATIONS_BY_KEY["gelu-residual-unfused"].bytes == 20e6
    assert OPERATIONS_BY_KEY["gelu-residual-fused"].bytes == 12e6


# ---------------------------------------------------------------- the page


def test_the_page_asks_for_a_login(db: None) -> None:
    response = Client().get("/roofline/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_page_shows_the_checked_devices_and_the_operations(reader: Client) -> None:
    response = reader.get("/roofline/")
    assert response.status_code == 200
    html = response.content.decode()
    for text in ("A100", "H100", "H200", "2,039 GB/s", "312 TFLOP/s", "153", "296", "206"):
        assert text in html
    assert "BF16 on Tensor Cores (dense)" in html and "FP32 without Tensor Cores" in html
    data = page_data(response)
    assert device(data, "A100")["bandwidthGbps"] == 2039.0
    assert {r["key"] for r in device(data, "H200")["roofs"]} == {"bf16-tensor", "fp32"}
    layernorm = next(op for op in data["operations"] if op["key"] == "layernorm")
    assert layernorm["flops"] / layernorm["bytes"] == pytest.approx(1.25)
    assert data["initial"] == {
        "device": "datasheet:A100",
        "roof": "bf16-tensor",
        "ai": 1.0,
        "op": None,
    }
    labels = json.loads(
        html.split('<script id="roofline-labels" type="application/json">')[1].split("</script>")[0]
    )
    assert labels["xAxis"] == "Arithmetic intensity (FLOP/B, log scale)"


def test_the_page_speaks_chinese(reader: Client) -> None:
    response = reader.get("/roofline/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Roofline 模型" in html and "算术强度" in html and "拐点" in html
    assert "Tensor Core 上的 BF16（稠密）" in html
    labels = json.loads(
        html.split('<script id="roofline-labels" type="application/json">')[1].split("</script>")[0]
    )
    assert "算术强度" in labels["xAxis"]
    layernorm = next(op for op in page_data(response)["operations"] if op["key"] == "layernorm")
    assert "每个元素" in layernorm["basis"]


def test_a_device_the_workers_measured_is_listed_with_its_bandwidth(
    cast: Cast, reader: Client
) -> None:
    record_measurement(cast, name="AMD EPYC", gbps=24.0, flops=None, key="old")
    record_measurement(cast, name="AMD EPYC", gbps=25.8, flops=84.4e9, key="new")
    record_measurement(cast, name="Slow box", gbps=12.5, flops=None, key="slow")
    response = reader.get("/roofline/")
    html = response.content.decode()
    data = page_data(response)
    epyc = device(data, "AMD EPYC")  # the newest measurement speaks for the device
    assert epyc["kind"] == "measured" and epyc["bandwidthGbps"] == 25.8
    assert epyc["roofs"][0]["flopsPerS"] == 84.4e9
    assert "25.8 GB/s" in html and "84.4 GFLOP/s" in html
    assert device(data, "Slow box")["roofs"] == []
    assert "Compute peak not measured" in html


def test_a_reports_link_preselects_device_intensity_and_operation(
    cast: Cast, reader: Client
) -> None:
    record_measurement(cast, name="AMD EPYC", gbps=25.8, flops=84.4e9, key="k")
    response = reader.get(
        "/roofline/", {"device": "AMD EPYC", "ai": "0.0833", "op": "vector-add-fp32"}
    )
    data = page_data(response)
    assert data["initial"] == {
        "device": "measured:AMD EPYC",
        "roof": "fp32",
        "ai": 0.0833,
        "op": "vector-add-fp32",
    }
    html = response.content.decode()
    assert 'value="vector-add-fp32" selected' in html
    assert 'value="0.0833"' in html
    # The server's answer, for the page without script: 25.8 GB/s x 0.0833 FLOP/B.
    assert "2.15 GFLOP/s" in html and "memory-bound" in html
    assert "roofline-notes" not in html


def test_an_operation_alone_sets_the_intensity(reader: Client) -> None:
    response = reader.get(
        "/roofline/", {"device": "h100", "op": "gemm-8192", "roof": "bf16-tensor"}
    )
    data = page_data(response)
    assert data["initial"]["device"] == "datasheet:H100"
    assert data["initial"]["ai"] == pytest.approx(8192 / 3)
    assert "compute-bound" in response.content.decode()


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ({"ai": "abc"}, "“abc” is not a number"),
        ({"ai": "-1"}, "must be greater than 0 FLOP/B, not -1"),
        ({"ai": "nan"}, "“nan” is not a number"),
        ({"ai": "1e9"}, "outside that range"),
        ({"device": "unknown"}, "There is no device called “unknown”"),
        ({"op": "teleport"}, "There is no operation “teleport”"),
        ({"roof": "fp4"}, "has no compute roof “fp4”"),
    ],
)
def test_a_bad_query_value_gives_the_page_with_a_note(reader: Client, query, note) -> None:
    response = reader.get("/roofline/", query)
    assert response.status_code == 200
    html = response.content.decode()
    assert note in html
    initial = page_data(response)["initial"]
    assert initial["device"] == "datasheet:A100"
    assert math.isfinite(initial["ai"]) and 0.01 <= initial["ai"] <= 10_000


def test_a_gpu_name_without_a_measurement_falls_back_to_its_datasheet(reader: Client) -> None:
    response = reader.get("/roofline/", {"device": "NVIDIA H200", "ai": "40"})
    assert page_data(response)["initial"]["device"] == "datasheet:H200"
    assert "No measurement of “NVIDIA H200” is stored here" in response.content.decode()


def test_a_bad_value_note_is_in_chinese_too(reader: Client) -> None:
    response = reader.get("/roofline/", {"ai": "abc"}, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "算术强度“abc”不是数字" in response.content.decode()


def test_a_long_or_hostile_value_is_escaped_and_cut(reader: Client) -> None:
    response = reader.get("/roofline/", {"device": "<script>alert(1)</script>" + "x" * 200})
    html = response.content.decode()
    assert "<script>alert(1)" not in html
    notes = html[html.index('<ul class="roofline-notes"') :].split("</ul>")[0]
    assert "&lt;script&gt;alert(1)" in notes and "x" * 100 not in notes and "…" in notes


def test_a_stored_report_with_unusable_peaks_is_left_out(cast: Cast, reader: Client) -> None:
    record_measurement(cast, name="Good box", gbps=30.0, flops=1e11, key="good")
    submission = Grading.objects.get(run_key="good").submission
    for key, device_name, peak in (
        ("text", "Text box", {"gbps": "fast"}),
        ("negative", "Negative box", {"gbps": -5.0}),
        ("nameless", None, {"gbps": 40.0}),
    ):
        Grading.objects.create(
            submission=submission,
            run_key=key,
            content_hash="x",
            report={"device": {"kind": "cpu", "name": device_name}, "peak": peak},
        )
    response = reader.get("/roofline/")
    names = {d["name"] for d in page_data(response)["devices"] if d["kind"] == "measured"}
    assert response.status_code == 200 and names == {"Good box"}
