"""Every command of `python -m courseware.client` against a live server: the real entry point,
real HTTP, the real API. Grading itself is in test_submit_and_follow.py."""

from __future__ import annotations

import json
import signal
import socket
import stat
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from django.conf import LazySettings

from courseware.courses.models import ItemPolicy
from courseware.submissions.models import Submission
from tests.client.conftest import ROOT, Student, Terminal
from tests.client.test_api_for_the_client import graded

STARTER = next(ROOT.glob("exercises/*/vector-add/starter.py"))


def no_traceback(*runs: object) -> None:
    for run in runs:
        assert "Traceback" not in str(run), run


def test_login_checks_the_token_and_stores_it_for_the_owner_only(
    student: Student, terminal: Terminal
) -> None:
    del terminal.env["GPUCOURSE_SERVER"], terminal.env["GPUCOURSE_TOKEN"]
    assert terminal.run("exercises").code == 4  # nothing stored yet: "log in first"

    done = terminal.run("login", "--server", student.server + "/", stdin=student.token + "\n")
    assert done.code == 0, done
    assert "the token works" in done.out
    saved = json.loads(terminal.config_file.read_text())
    assert saved == {"server": student.server, "token": student.token}
    assert stat.S_IMODE(terminal.config_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(terminal.config_file.parent.stat().st_mode) == 0o700

    listed = terminal.run("exercises")  # from the stored settings alone
    assert listed.code == 0 and "vector-add" in listed.out, listed
    # The environment wins over the file: a bad token there is refused, the file untouched.
    terminal.env["GPUCOURSE_TOKEN"] = "not-a-token"
    assert terminal.run("exercises").code == 4
    del terminal.env["GPUCOURSE_TOKEN"]

    out = terminal.run("logout")
    assert out.code == 0 and "token" not in json.loads(terminal.config_file.read_text())
    assert terminal.run("exercises").code == 4


def test_a_bad_token_is_refused_with_where_to_get_a_new_one(
    student: Student, terminal: Terminal
) -> None:
    terminal.env["GPUCOURSE_TOKEN"] = "0" * 40
    refused = terminal.run("exercises")
    assert refused.code == 4, refused
    assert "the server refused your API token" in refused.err
    assert f"{student.server}/account/token/" in refused.err
    assert "This API token is not valid" in refused.err  # the server's own words

    login = terminal.run("login", "--server", student.server, stdin="0" * 40 + "\n")
    assert login.code == 4 and not terminal.config_file.exists(), login
    no_traceback(refused, login)


def test_a_server_that_is_down_is_named_with_what_to_check(terminal: Terminal) -> None:
    with socket.socket() as probe:  # a port nothing listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    terminal.env["GPUCOURSE_TOKEN"] = "whatever"
    runs = [
        terminal.run("--server", url, "exercises"),
        terminal.run("submit", "vector-add", str(STARTER), "--server", url),
        terminal.run("login", "--server", url, stdin="whatever\n"),
    ]
    for run in runs:
        assert run.code == 3, run
        assert f"cannot reach {url}: is the server running? check --server" in run.err
    no_traceback(*runs)


def test_exercises_lists_each_with_the_due_date_in_local_time(
    student: Student, terminal: Terminal
) -> None:
    ItemPolicy.objects.create(
        offering=student.cast.offering,
        item=student.cast.item,
        due_at=datetime(2030, 1, 1, 12, 0, tzinfo=UTC),
        max_attempts=3,
    )
    graded(student.cast, score="6")
    terminal.env["TZ"] = "Asia/Shanghai"
    listed = terminal.run("exercises")
    assert listed.code == 0, listed
    header, *rows = listed.out.splitlines()
    assert header.split() == [
        "Exercise",
        "Title",
        "Due",
        "(your",
        "time)",
        "Attempts",
        "left",
        "Best",
        "score",
    ]
    line = next(r for r in rows if r.startswith("vector-add "))
    assert "Vector add: achieved bandwidth" in line
    assert "2030-01-01 20:00 CST" in line  # noon UTC, in Shanghai
    assert line.split()[-4:] == ["2", "6", "/", "10"]  # attempts left, best of max
    assert "fusion-notebook" in listed.out

    as_json = json.loads(terminal.run("exercises", "--json").out)
    assert {e["slug"] for e in as_json} >= {"vector-add", "fusion-notebook"}


def test_titles_and_messages_come_in_the_terminals_language(
    student: Student, terminal: Terminal
) -> None:
    terminal.env["LANG"] = "zh_CN.UTF-8"
    listed = terminal.run("exercises")
    assert "向量加法" in listed.out, listed
    missing = terminal.run("starter", "no-such-exercise")
    assert missing.code == 5 and "没有名为" in missing.err, missing


def test_starter_prints_or_writes_the_file_and_never_overwrites_work(
    student: Student, terminal: Terminal, tmp_path: Path
) -> None:
    printed = terminal.run("starter", "vector-add")
    assert printed.code == 0 and printed.out == STARTER.read_text(), printed

    target = tmp_path / "mine.py"
    assert terminal.run("starter", "vector-add", "-o", str(target)).code == 0
    assert target.read_text() == STARTER.read_text()
    target.write_text("my work")
    kept = terminal.run("starter", "vector-add", "-o", str(target))
    assert kept.code == 1 and "not overwriting" in kept.err and target.read_text() == "my work"
    assert terminal.run("starter", "vector-add", "-o", str(target), "--force").code == 0
    assert target.read_text() == STARTER.read_text()

    into_folder = terminal.run("starter", "fusion-notebook", "-o", str(tmp_path))
    assert into_folder.code == 0, into_folder
    assert json.loads((tmp_path / "fusion-notebook.ipynb").read_text())["cells"]

    missing = terminal.run("starter", "no-such-exercise")
    assert missing.code == 5 and "There is no exercise named 'no-such-exercise'" in missing.err
    no_traceback(kept, missing)


def test_report_prints_verdict_bandwidth_peak_profile_and_feedback(
    student: Student, terminal: Terminal
) -> None:
    submission = graded(student.cast, "slow", score="6")
    shown = terminal.run("report", str(submission.pk))
    assert shown.code == 0, shown
    out = shown.out
    assert f"Submission {submission.pk} · vector-add · graded" in out
    assert "Verdict     correct" in out and "Score       6 / 10" in out
    assert "Bandwidth   2.37 GB/s, 9.2 % of the measured peak (25.8 GB/s)" in out
    assert "Profile of one call" in out
    assert "aten::copy_" in out and "Self time" in out
    assert "Feedback" in out and "Next step: your code is slower than the naive version" in out
    assert f"Report page: {student.server}/submissions/{submission.pk}/" in out

    latest = terminal.run("report", "latest", "vector-add")
    assert latest.code == 0 and latest.out == out, latest
    as_json = json.loads(terminal.run("report", str(submission.pk), "--json").out)
    assert as_json["report"]["performance"]["achieved_gbps"] > 0


def test_report_of_nothing_says_so(student: Student, terminal: Terminal) -> None:
    runs = {
        "missing": terminal.run("report", "999999"),
        "none yet": terminal.run("report", "latest", "vector-add"),
        "no slug": terminal.run("report", "latest", "no-such-exercise"),
        "not a number": terminal.run("report", "seven"),
    }
    assert runs["missing"].code == 5 and "No such submission" in runs["missing"].err
    assert runs["none yet"].code == 5 and "no submissions of vector-add" in runs["none yet"].err
    assert runs["no slug"].code == 5
    assert runs["not a number"].code == 2
    no_traceback(*runs.values())


def test_open_starts_the_browser_on_the_report_page_or_prints_it(
    student: Student, terminal: Terminal, tmp_path: Path
) -> None:
    submission = graded(student.cast)
    page = f"{student.server}/submissions/{submission.pk}/"
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}\n')
    browser.chmod(0o755)
    terminal.env["BROWSER"] = str(browser)
    done = terminal.run("open", str(submission.pk))
    assert done.code == 0, done
    assert opened.read_text() == page and page in done.out

    terminal.env["BROWSER"] = "false"  # a browser that fails: the address is printed instead
    terminal.env.pop("DISPLAY", None), terminal.env.pop("WAYLAND_DISPLAY", None)
    fallback = terminal.run("open", str(submission.pk))
    assert fallback.code == 0 and page in fallback.out, fallback
    assert "open the address above yourself" in fallback.out
    assert terminal.run("open", "999999").code == 5


def test_submit_refusals_show_the_servers_message(
    student: Student, terminal: Terminal, tmp_path: Path, settings: LazySettings
) -> None:
    huge = tmp_path / "huge.py"
    huge.write_text("# padding\n" * 8000)  # 80 KB: over vector-add's 64 KiB source limit
    too_large = terminal.run("submit", "vector-add", str(huge))
    assert too_large.code == 6, too_large
    assert "the limit for vector-add is 65536 bytes" in too_large.err

    unknown = terminal.run("submit", "no-such-exercise", str(STARTER))
    assert unknown.code == 5 and "no-such-exercise" in unknown.err, unknown
    missing = terminal.run("submit", "vector-add", str(tmp_path / "nope.py"))
    assert missing.code == 1 and "no such file" in missing.err

    settings.SUBMISSIONS_MAX_PENDING_PER_STUDENT = 1
    first = terminal.run("submit", "vector-add", str(STARTER), "--no-follow")
    assert first.code == 0 and "follow" in first.out, first
    second = terminal.run("submit", "vector-add", str(STARTER), "--no-follow")
    assert second.code == 7, second
    assert "waiting" in second.err  # the server's words: how many may wait
    assert Submission.objects.filter(user=student.cast.alice).count() == 1
    no_traceback(too_large, unknown, missing, second)


def test_following_stops_on_wait_or_ctrl_c_and_says_how_to_come_back(
    student: Student, terminal: Terminal
) -> None:
    sent = terminal.run("submit", "vector-add", str(STARTER), "--no-follow")
    assert sent.code == 0, sent
    submission_id = Submission.objects.get(user=student.cast.alice).pk
    # No worker runs in this test: the submission stays queued, first in line.
    waited = terminal.run("follow", str(submission_id), "--wait", "1")
    assert waited.code == 8, waited
    assert "queued: next in line" in waited.out
    assert f"gpucourse follow {submission_id}" in waited.err

    following = subprocess.Popen(
        terminal.command("follow", str(submission_id)),
        cwd=ROOT,
        env=terminal.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert following.stdout is not None
    assert following.stdout.readline() == "queued: next in line\n"
    following.send_signal(signal.SIGINT)
    _, err = following.communicate(timeout=60)
    assert following.returncode == 130, err
    assert f"Stopped following; submission {submission_id} is still being graded" in err
    assert "Traceback" not in err
    assert Submission.objects.get(pk=submission_id).status == "queued"  # it goes on
