"""Simulated students against a running site: submit through the API, poll like the exercise
page, open the pages a student opens. asyncio + httpx, one client (own cookies) per student.

Each student, bounded by the run's end and by `max_submissions`:
dashboard -> exercise page -> submit -> poll until finished, waiting the `poll_after_s` the
server gives (or `poll_s`) between polls, as courseware/static/courseware/exercise.js does, and
backing off on errors -> report page -> think
-> again. After the students stop, `watch_until_finished` follows what is still waiting.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import httpx

from bench.load_stats import FINISHED, Accepted, Sample


@dataclass(frozen=True)
class Credentials:
    username: str
    token: str
    session_cookie: tuple[str, str]  # (cookie name, value): a logged-in browser session


@dataclass(frozen=True)
class Plan:
    """What every student does; times in seconds."""

    base_url: str
    exercise: str
    codes: Sequence[str]  # the sources submitted, taken in turn
    duration_s: float
    max_submissions: int
    poll_s: float = 1.5  # exercise.js polls every 1.5 s when the server gives no hint
    follow_hint: bool = True  # wait poll_after_s between polls, as exercise.js does
    think_s: tuple[float, float] = (3.0, 10.0)  # between seeing a result and resubmitting
    ramp_s: float = 0.0  # students start spread over this (0: all at once, a deadline rush)
    request_timeout_s: float = 30.0
    seed: int = 1


@dataclass
class Recorder:
    samples: list[Sample] = field(default_factory=list)
    accepted: list[Accepted] = field(default_factory=list)
    refused: Counter[int] = field(default_factory=Counter)  # submit answers other than 201

    def add(self, label: str, group: str, seconds: float, status: int) -> None:
        self.samples.append(Sample(label, group, seconds, status))


class Student:
    def __init__(
        self,
        who: Credentials,
        plan: Plan,
        recorder: Recorder,
        index: int,
        transport: httpx.AsyncBaseTransport | None = None,  # the tests' fake site
    ) -> None:
        self.who, self.plan, self.recorder = who, plan, recorder
        self.rng = random.Random(plan.seed * 100_003 + index)
        self.index = index
        self.client = httpx.AsyncClient(
            base_url=plan.base_url,
            timeout=plan.request_timeout_s,
            cookies={who.session_cookie[0]: who.session_cookie[1]},
            headers={"Accept-Language": "en"},
            transport=transport,
        )

    async def request(
        self, label: str, group: str, method: str, url: str, **kwargs: object
    ) -> httpx.Response | None:
        if group == "api":
            kwargs["headers"] = {
                "Authorization": f"Token {self.who.token}",
                "Accept": "application/json",
            }
        began = time.perf_counter()
        try:
            response = await self.client.request(method, url, **kwargs)  # type: ignore[arg-type]
        except httpx.HTTPError:
            self.recorder.add(label, group, time.perf_counter() - began, 0)
            return None
        self.recorder.add(label, group, time.perf_counter() - began, response.status_code)
        return response

    async def run(self, ends_at: float) -> None:
        """Until `ends_at` (time.monotonic()) or the last allowed submission is followed."""
        try:
            await pause(self.rng.uniform(0, self.plan.ramp_s), ends_at)
            await self.request("dashboard", "page", "GET", "/")
            for attempt in range(self.plan.max_submissions):
                if time.monotonic() >= ends_at:
                    return
                await self.request("exercise", "page", "GET", f"/exercises/{self.plan.exercise}/")
                code = self.plan.codes[(self.index + attempt) % len(self.plan.codes)]
                submitted = await self.submit(code, first=attempt == 0)
                if submitted is None:
                    await pause(self.plan.poll_s * 2, ends_at)
                    continue
                if await self.follow(submitted, ends_at):
                    await self.request("report", "page", "GET", f"/submissions/{submitted.id}/")
                await pause(self.rng.uniform(*self.plan.think_s), ends_at)
        finally:
            await self.client.aclose()

    async def submit(self, code: str, *, first: bool) -> Accepted | None:
        sent_at = time.time()
        response = await self.request(
            "submit",
            "api",
            "POST",
            "/api/v1/submissions",
            json={"exercise": self.plan.exercise, "code": code},
        )
        if response is None or response.status_code != 201:
            self.recorder.refused[0 if response is None else response.status_code] += 1
            return None
        body = response.json()
        accepted = Accepted(
            id=int(body["id"]),
            student=self.who.username,
            sent_at=sent_at,
            accepted_at=time.time(),
            first_wave=first,
            status=str(body.get("status")),
        )
        self.recorder.accepted.append(accepted)
        return accepted

    async def follow(self, submission: Accepted, ends_at: float) -> bool:
        """Poll as the exercise page does (the first poll at once); True once finished,
        False if the run ended."""
        delay = 0.0
        while await pause(delay, ends_at):
            response = await self.request(
                "poll", "api", "GET", f"/api/v1/submissions/{submission.id}"
            )
            if response is None or response.status_code != 200:
                # The server is struggling: back off, as the page does.
                delay = min(max(delay, self.plan.poll_s) * 2, 15.0)
                continue
            body = response.json()
            delay = self.plan.poll_s
            hint = body.get("poll_after_s")
            if self.plan.follow_hint and isinstance(hint, (int, float)) and hint > 0:
                delay = float(hint)  # the server's "ask again in", as exercise.js follows it
            submission.status = str(body.get("status"))
            if submission.status in FINISHED:
                submission.seen_finished_at = time.time()
                return True
        return False


async def pause(seconds: float, ends_at: float) -> bool:
    """Sleep, but not past the end; False when the run ended before the time was up."""
    remaining = ends_at - time.monotonic()
    await asyncio.sleep(max(0.0, min(seconds, remaining)))
    return seconds < remaining


async def run_students(
    people: Sequence[Credentials],
    plan: Plan,
    recorder: Recorder,
    transport: httpx.AsyncBaseTransport | None = None,
) -> tuple[float, float]:
    """Every student at once, for plan.duration_s; returns the wall-clock start and end."""
    started = time.time()
    ends_at = time.monotonic() + plan.duration_s
    students = [Student(who, plan, recorder, i, transport) for i, who in enumerate(people)]
    await asyncio.gather(*(s.run(ends_at) for s in students))
    return started, time.time()


WATCH_TICK_S = 0.25  # how often the watch looks for submissions due a poll


@dataclass(frozen=True)
class WatchLimits:
    interval_s: float = 2.0
    stall_s: float = 300.0  # nothing finished for this long: give up (those left are lost)
    total_s: float = 1800.0


async def watch_until_finished(
    base_url: str,
    accepted: Sequence[Accepted],
    tokens: dict[str, str],
    limits: WatchLimits,
    report: Callable[[int, float], None] = lambda pending, elapsed: None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> float:
    """Poll the API for every accepted submission not yet finished until none is left, nothing
    finished for limits.stall_s, or limits.total_s passed. Returns the seconds it watched.

    Each submission is polled as its student's page would go on polling it: again after the
    `poll_after_s` its last answer gave (limits.interval_s without one), so the watch loads
    the site no more than the class waiting would. These polls are not counted in the
    latency figures.
    """
    began = last_progress = time.monotonic()
    due: dict[int, float] = {}  # submission id -> when to poll it next (monotonic)
    limit = asyncio.Semaphore(4)  # gentle: the queue is what is being measured now
    async with httpx.AsyncClient(base_url=base_url, timeout=30.0, transport=transport) as client:

        async def check(a: Accepted) -> None:
            due[a.id] = time.monotonic() + limits.interval_s  # unless the answer says when
            async with limit:
                try:
                    response = await client.get(
                        f"/api/v1/submissions/{a.id}",
                        headers={"Authorization": f"Token {tokens[a.student]}"},
                    )
                except httpx.HTTPError:
                    return
            if response.status_code == 200:
                body = response.json()
                hint = body.get("poll_after_s")
                if isinstance(hint, (int, float)) and hint > 0:
                    due[a.id] = time.monotonic() + float(hint)
                a.status = str(body.get("status"))
                if a.status in FINISHED and a.client_finished_at is None:
                    a.watcher_seen_at = time.time()

        while True:
            pending = [a for a in accepted if a.status not in FINISHED]
            now = time.monotonic()
            report(len(pending), now - began)
            if not pending or now - last_progress > limits.stall_s or now - began > limits.total_s:
                return now - began
            asked = [a for a in pending if due.get(a.id, 0.0) <= now]
            await asyncio.gather(*(check(a) for a in asked))
            if any(a.status in FINISHED for a in asked):
                last_progress = time.monotonic()
            await asyncio.sleep(min(limits.interval_s, WATCH_TICK_S))
