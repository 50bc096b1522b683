"""The load benchmark's driver and figures, without the stack: a fake site answers the
students (httpx.MockTransport), and the statistics are checked on hand-made records."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from bench import load_report, load_stats
from bench.load_driver import Credentials, Plan, Recorder, WatchLimits, run_students
from bench.load_driver import watch_until_finished as watch
from bench.load_stats import Accepted, DbRow, Sample

T = TypeVar("T")


def run_apart(coroutine: Coroutine[Any, Any, T]) -> T:
    """asyncio.run on a thread of its own: earlier tests in the same process (Playwright's
    sync API) may leave an event loop running on the main thread."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


# ---------------------------------------------------------------- statistics


def test_percentile_interpolates_between_ranks_as_numpy_does() -> None:
    # Values NumPy's default (method="linear") gives for the same inputs.
    one_to_ten = [float(v) for v in range(10, 0, -1)]
    assert load_stats.percentile(one_to_ten, 90) == pytest.approx(9.1)
    assert load_stats.percentile(one_to_ten, 99) == pytest.approx(9.91)
    assert load_stats.percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert load_stats.percentile([float(v) for v in range(1, 101)], 99) == pytest.approx(99.01)
    assert load_stats.percentile([5.0], 99) == 5.0
    assert load_stats.percentile([1.0, 9.0], 0) == 1.0
    assert load_stats.percentile([1.0, 9.0], 100) == 9.0


def test_percentile_edges() -> None:
    assert load_stats.percentile([], 50) is None
    assert load_stats.percentile([3.0, 1.0, 2.0], 50) == 2.0  # unsorted input
    with pytest.raises(ValueError):
        load_stats.percentile([1.0], 101)


def test_latency_summary_splits_groups_and_counts_errors() -> None:
    samples = [Sample("poll", "api", s / 1000, 200) for s in range(1, 101)]
    samples += [
        Sample("submit", "api", 0.5, 500),  # timed and an error
        Sample("submit", "api", 30.0, 0),  # transport error: counted, not timed
        Sample("dashboard", "page", 0.020, 200),
    ]
    summary = load_stats.latency_summary(samples)
    assert summary["api"]["count"] == 102
    assert summary["api"]["errors"] == 2
    assert summary["api"]["max_ms"] == pytest.approx(500)
    assert summary["api poll"]["p50_ms"] == pytest.approx(50.5)
    assert summary["api submit"]["count"] == 2
    assert summary["page"]["p99_ms"] == pytest.approx(20)
    assert "page dashboard" in summary


def accepted(i: int, *, at: float, status: str = "queued", first: bool = True) -> Accepted:
    return Accepted(i, f"s{i}", sent_at=at - 0.1, accepted_at=at, first_wave=first, status=status)


def row(i: int, status: str, created: float, finished: float | None) -> DbRow:
    return DbRow(i, status, created, finished if status in load_stats.FINISHED else None, 4.0, "w")


def test_lost_counts_unfinished_missing_and_unseen_rows_from_the_database() -> None:
    subs = [accepted(i, at=100.0 + i) for i in range(1, 6)]
    rows = {
        1: row(1, "graded", 101, 110),
        2: row(2, "needs_review", 102, 111),
        3: row(3, "failed", 103, 112),
        4: row(4, "running", 104, None),
        # 5: the row is gone
        6: row(6, "queued", 105, None),  # accepted by the site, the client never heard
        7: row(7, "graded", 90, 95),  # the warm-up's
    }
    result = load_stats.outcome(subs, rows, exclude=[7])
    assert (result.accepted, result.graded, result.failed) == (5, 2, 1)
    assert result.lost_ids == [4, 5, 6]
    assert result.unseen_ids == [6]


def test_lost_from_the_polls_when_the_database_could_not_be_read() -> None:
    subs = [accepted(1, at=1, status="graded"), accepted(2, at=2, status="running")]
    result = load_stats.outcome(subs, None)
    assert result.lost_ids == [2]
    assert result.unseen_ids == []


def test_throughput_drain_and_submit_to_graded() -> None:
    subs = [accepted(i, at=100.0 + i, first=i <= 2) for i in range(1, 5)]  # sent 100.9..
    rows = {i: row(i, "graded", 100.0 + i, 110.0 + 10 * i) for i in range(1, 5)}
    finished = load_stats.finish_times(subs, rows)
    assert finished == {1: 120.0, 2: 130.0, 3: 140.0, 4: 150.0}
    assert load_stats.rate_per_s(subs) == pytest.approx(4 / (104 - 100.9))
    assert load_stats.rate_per_s(subs[:1]) is None
    assert load_stats.drain_s(subs, finished, lost=0) == pytest.approx(150 - 104)
    assert load_stats.drain_s(subs, finished, lost=1) is None
    # 4 gradings from the first accepted (101) to the last finished (150), on 2 slots.
    assert load_stats.gradings_per_minute_per_slot(subs, finished, 2) == pytest.approx(
        4 / (49 / 60) / 2
    )
    spread = load_stats.submit_to_graded(subs, rows)  # 19, 28, 37, 46 s
    assert spread["source"] == "database"
    assert spread["p50_s"] == pytest.approx(32.5)
    assert spread["p90_s"] == pytest.approx(43.3)
    assert spread["max_s"] == pytest.approx(46)
    assert load_stats.grading_seconds(rows, [1, 2])["per_worker"] == {"w": 2}


def test_submit_to_graded_split_puts_the_unreported_time_in_the_rest() -> None:
    phases = {"sandbox_start_s": 0.5, "setup_s": 0.1, "check_s": 0.2, "timing_s": 1.0}
    rows = {
        1: DbRow(1, "graded", 10.0, 12.0, 2.0, "w", phases, companions_reused=2),
        2: DbRow(2, "graded", 20.0, 24.0, 3.0, "w", {**phases, "timing_s": 3.0}),
        3: DbRow(3, "failed", 30.0, 31.0, 1.0, "w", phases),  # not graded: left out
        4: DbRow(4, "graded", 40.0, 41.0, 0.1, "w", {"total_s": 0.1}),  # rejected: no timing
    }
    split = load_stats.submit_to_graded_split(rows, [1, 2, 3, 4, 5])
    assert split["count"] == 2
    assert split["reused_both"] == 1
    assert split["parts"]["timed calls"]["p50_s"] == pytest.approx(2.0)
    # 2.0 s - 1.8 s of phases, and 4.0 s - 3.8 s
    assert split["parts"]["the rest"]["p50_s"] == pytest.approx(0.2)
    judged = {
        1: DbRow(1, "graded", 1.0, 2.0, verdict="correct"),
        4: DbRow(4, "graded", 1.0, 2.0, verdict="error"),
    }
    assert load_stats.verdict_counts(judged, [1, 2, 4]) == {"correct": 1, "error": 1}
    assert load_report.verdicts_text({"verdicts": {"correct": 1, "error": 1}}) == (
        "correct 1, error 1"
    )
    assert load_report.verdicts_text({}) == "not recorded"  # a run from before verdicts
    table = "\n".join(load_report.split_table({"submit_to_graded_split": split}))
    assert "| timed calls | 2.00 s | 2.80 s |" in table
    assert load_report.split_table({}) == []  # a run recorded before the split


def test_submit_to_graded_falls_back_to_the_polls() -> None:
    subs = [accepted(1, at=10, status="graded"), accepted(2, at=20, status="failed")]
    subs[0].seen_finished_at, subs[1].seen_finished_at = 13.0, 21.0
    spread = load_stats.submit_to_graded(subs, None)
    assert (spread["source"], spread["count"], spread["p50_s"]) == ("client polls", 1, 3.0)


# ---------------------------------------------------------------- report


def record(lost_ids: list[int]) -> dict[str, object]:
    recorder = Recorder()
    recorder.samples = [Sample("poll", "api", 0.01, 200), Sample("exercise", "page", 0.05, 200)]
    recorder.accepted = [accepted(1, at=10), accepted(2, at=11)]
    recorder.refused[429] = 3
    statuses = {1: "graded", 2: "queued" if lost_ids else "graded"}
    rows = {i: row(i, s, 10 + i, 20 + i) for i, s in statuses.items()}
    return load_report.build_record(
        params={
            "students": 2,
            "duration_s": 60.0,
            "workers": 1,
            "web_workers": 4,
            "samples": ["fast"],
            "poll_s": 1.5,
            "think_s": (3.0, 10.0),
            "max_submissions": 3,
        },
        recorder=recorder,
        db_rows=rows,
        warmup_ids=[],
        context={
            "measured": "2026-12-04 10:00 UTC",
            "load_average_1m": 0.5,
            "machine": "a test box",
            "slots": 1,
            "students_s": 60.0,
            "watched_s": 5.0,
            "exit_codes": {"web": None},
        },
    )


def test_the_table_shows_the_lost_and_an_undrained_queue() -> None:
    text = "\n".join(load_report.markdown_table(record([2])))
    assert "**1** (ids [2])" in text
    assert "| never |" in text
    assert "3 x 429" in text
    clean = "\n".join(load_report.markdown_table(record([])))
    assert "| **0** | 0 |" in clean


def test_history_and_doc_section_keep_the_other_benches(tmp_path: Path) -> None:
    history_file = tmp_path / "history.json"
    history_file.write_text(json.dumps([{"measured": "old", "fidelity_ratio": 1.0}]))
    history = load_report.append_history(history_file, record([]))
    assert [h.get("bench") for h in json.loads(history_file.read_text())] == [None, "load"]
    doc = tmp_path / "BENCHMARKS.md"
    doc.write_text("# Benchmarks\n\n## Machine\n\nbox\n\n" + load_report.TITLE + "\n\nold\n")
    load_report.write_section(doc, load_report.doc_section(record([]), history))
    load_report.write_section(doc, load_report.doc_section(record([]), history))
    text = doc.read_text()
    assert text.count(load_report.TITLE) == 1
    assert "## Machine\n\nbox" in text and "\nold\n" not in text
    runs = load_report.history_table(history)
    assert len(runs) == 3  # header, rule and the one load record: the engine's is skipped


def test_the_doc_shows_the_latest_run_of_each_class_size_largest_first() -> None:
    def sized(students: int, measured: str) -> dict[str, Any]:
        made: dict[str, Any] = dict(record([]))
        params: dict[str, Any] = dict(made["params"])
        return made | {"params": params | {"students": students}, "measured": measured}

    history = [sized(1, "one, older"), sized(50, "fifty"), sized(1, "one, newer")]
    text = "\n".join(load_report.doc_section(history[-1], history))
    assert text.index("### 50 students") < text.index("### 1 student:")
    assert "Measured fifty" in text and "Measured one, newer" in text
    assert "Measured one, older" not in text  # only in the table of every run
    assert text.count("| one, older |") == 1


# ---------------------------------------------------------------- the students, on a fake site


class FakeSite:
    """Accepts a submission (refusing every third with 429), says `queued` on the first poll
    and `graded` on the second; pages answer 200."""

    def __init__(self) -> None:
        self.next_id, self.posts = 1, 0
        self.polls: dict[int, int] = {}
        self.paths: list[str] = []
        self.poll_after_s: float | None = None  # the hint its polls give while queued

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.paths.append(f"{request.method} {path}")
        if path == "/api/v1/submissions" and request.method == "POST":
            assert request.headers["Authorization"].startswith("Token tok-")
            assert json.loads(request.content)["exercise"] == "vector-add"
            self.posts += 1
            if self.posts % 3 == 0:
                return httpx.Response(429, json={"error": "wait"})
            self.next_id += 1
            return httpx.Response(201, json={"id": self.next_id - 1, "status": "queued"})
        if path.startswith("/api/v1/submissions/"):
            sid = int(path.rsplit("/", 1)[1])
            self.polls[sid] = self.polls.get(sid, 0) + 1
            status = "queued" if self.polls[sid] < 2 else "graded"
            hint = self.poll_after_s if status == "queued" else None
            return httpx.Response(200, json={"id": sid, "status": status, "poll_after_s": hint})
        assert request.headers["Cookie"].startswith("sessionid=")
        return httpx.Response(200, text="<html></html>")


def plan(**kw: object) -> Plan:
    base = {
        "base_url": "http://site",
        "exercise": "vector-add",
        "codes": ["def f(): pass"],
        "duration_s": 30.0,
        "max_submissions": 2,
        "poll_s": 0.01,
        "think_s": (0.0, 0.01),
    }
    return Plan(**(base | kw))  # type: ignore[arg-type]


def people(n: int) -> list[Credentials]:
    return [Credentials(f"s{i}", f"tok-{i}", ("sessionid", f"sess-{i}")) for i in range(n)]


def test_students_submit_poll_and_open_the_pages() -> None:
    site, recorder = FakeSite(), Recorder()
    run_apart(run_students(people(3), plan(), recorder, httpx.MockTransport(site)))
    # 3 students x 2 attempts = 6 posts; every third refused: 4 accepted, 2 refused.
    assert site.posts == 6
    assert len(recorder.accepted) == 4 and recorder.refused == {429: 2}
    assert all(a.status == "graded" and a.seen_finished_at for a in recorder.accepted)
    assert sum(a.first_wave for a in recorder.accepted) == 2  # the third's first was refused
    labels = {(s.group, s.label) for s in recorder.samples}
    assert labels == {
        ("page", "dashboard"),
        ("page", "exercise"),
        ("page", "report"),
        ("api", "submit"),
        ("api", "poll"),
    }
    reports = [p for p in site.paths if p.startswith("GET /submissions/")]
    assert len(reports) == 4  # one report page per graded submission


def test_students_stop_at_the_end_and_the_watch_finds_the_rest() -> None:
    site = FakeSite()
    recorder = Recorder()
    # Polls every 5 s in a 0.2 s run: nothing is seen finished by the students.
    run_apart(
        run_students(
            people(2), plan(duration_s=0.2, poll_s=5.0), recorder, httpx.MockTransport(site)
        )
    )
    assert len(recorder.accepted) == 2
    assert all(a.seen_finished_at is None for a in recorder.accepted)
    watched = run_apart(
        watch(
            "http://site",
            recorder.accepted,
            {"s0": "tok-0", "s1": "tok-1"},
            WatchLimits(interval_s=0.01, stall_s=5, total_s=5),
            transport=httpx.MockTransport(site),
        )
    )
    assert watched < 5
    assert all(a.status == "graded" and a.watcher_seen_at for a in recorder.accepted)
    assert load_stats.outcome(recorder.accepted, None).lost == 0


@pytest.mark.parametrize("follow_hint", [True, False])
def test_students_wait_as_long_as_the_server_says(follow_hint: bool) -> None:
    site = FakeSite()
    site.poll_after_s = 0.01  # much sooner than the plan's 30 s
    recorder = Recorder()
    slow = plan(duration_s=3.0, poll_s=30.0, max_submissions=1, follow_hint=follow_hint)
    run_apart(run_students(people(1), slow, recorder, httpx.MockTransport(site)))
    # Following the hint it sees the grade on the poll after "queued"; with a fixed 30 s
    # interval the 3 s run ends before its second poll.
    assert [a.seen_finished_at is not None for a in recorder.accepted] == [follow_hint]


def test_the_watch_gives_up_on_a_stalled_queue() -> None:
    stuck = httpx.MockTransport(lambda r: httpx.Response(200, json={"status": "queued"}))
    subs = [accepted(1, at=1)]
    run_apart(watch("http://site", subs, {"s1": "t"}, WatchLimits(0.01, 0.1, 5), transport=stuck))
    assert load_stats.outcome(subs, None).lost_ids == [1]


def test_a_run_states_the_options_that_reproduce_it() -> None:
    base = {"max_submissions": 3, "think_s": [3.0, 10.0], "follow_hint": True}
    now = load_report.options_text(
        {**base, "ramp_s": 30.0, "conn_max_age": 60, "service_cores": [0]}
    )
    assert now == " --ramp 30 --max-submissions 3 --think 3 10"
    # A record from before the defaults changed: same second, a connection per request, shared.
    old = load_report.options_text({**base, "ramp_s": 0.0, "conn_max_age": 0, "service_cores": []})
    assert old.endswith(" --conn-max-age 0 --share-timing-cores")
    assert old.startswith(" --ramp 0 ")
