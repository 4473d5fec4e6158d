"""Event sources moto stores but does not run: SQS → Lambda and EventBridge schedules.

`SqsPoller` behaves like Lambda's SQS event source mapping with ReportBatchItemFailures:
it long-polls batches of up to `batch_size`, invokes the consumer with an SQS event, deletes
what succeeded, and leaves the rest to reappear after the queue's visibility timeout; the
queue's redrive policy (in moto) moves a message to the dead-letter queue after
`maxReceiveCount` receives. A function error fails the whole batch, as in Lambda. A new
message ends a long poll at once (moto's queue notifies a condition): delivery adds no wait.
Like Lambda's pollers for a standard queue, which start with five batches at a time (five
concurrent invocations, each in an environment of its own), it runs `CONCURRENT_BATCHES`
polls at once, or fewer where the queue's `max_concurrency` says so (its event source's
ScalingConfig): jobs of one reservation may be handled at the same time or out of order, as
in AWS, and a backlog does not build up behind one batch. moto's queue is made safe for them
in `moto_sqs.py`; the five also take turns to receive (a lock per queue), so one long poll
waits for messages while the others wait for it, and a poll that waited its turn receives
nothing once paused or stopping.
`pause()` (tests) disables it and returns once the polls in flight have ended.

`Ticker` fires each `rate(...)` schedule's target with an EventBridge "Scheduled Event",
every `period_seconds` scaled down for local use.
"""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import UTC, datetime
from typing import Any

from cdk_app.declaration import QueueSpec, ScheduleSpec
from localcloud.deadline import BackgroundWork
from localcloud.lambdas import ACCOUNT_ID, Invoker

log = logging.getLogger("localcloud.events")

# Lambda's SQS event source processes "five batches at a time with five concurrent
# invocations" of a standard queue's function and scales up from there (AWS Lambda developer
# guide, "Configuring scaling behavior for SQS event source mappings").
CONCURRENT_BATCHES = 5


def concurrent_batches(spec: QueueSpec) -> int:
    """Batches in flight at once: Lambda's first five, never more than the event source's
    maximum concurrency (its ScalingConfig), as in AWS."""
    if spec.max_concurrency is None:
        return CONCURRENT_BATCHES
    return min(CONCURRENT_BATCHES, spec.max_concurrency)


# After a failed poll (SQS unreachable, the queue gone) a poller waits this long; the first
# failure of a streak is logged with its traceback, then one line every FAILURES_PER_WARNING.
FAILED_POLL_PAUSE_SECONDS = 1.0
FAILURES_PER_WARNING = 30


def sqs_event(messages: list[dict[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": message["MessageId"],
                "receiptHandle": message["ReceiptHandle"],
                "body": message["Body"],
                "attributes": message.get("Attributes", {}),
                "messageAttributes": message.get("MessageAttributes", {}),
                "md5OfBody": message["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            }
            for message in messages
        ]
    }


def scheduled_event(rule_arn: str, region: str) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [rule_arn],
        "detail": {},
    }


class _EventSource(BackgroundWork):
    """Background work that invokes the local functions with events from `region`."""

    def __init__(self, lambdas: Invoker, region: str) -> None:
        super().__init__()
        self._lambdas = lambdas
        self._region = region


class SqsPoller(_EventSource):
    def __init__(self, spec: QueueSpec, queue_url: str, sqs: Any, lambdas: Invoker, region: str):
        super().__init__(lambdas, region)
        self.spec = spec
        self.queue_url = queue_url
        self._sqs = sqs
        self._queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        self.paused = False  # tests: leave messages on the queue (an event source disabled)
        self._idle = threading.Condition()  # notified when a poll ends
        self._polls = 0  # polls in flight
        self._receiving = threading.Lock()  # one long poll at a time
        self._failures = 0  # failed polls in a row, of all its threads (under _idle)
        for number in range(concurrent_batches(spec)):
            self._in_background(self._run, f"sqs-{spec.name}-{number}")

    def pause(self, timeout: float = 30.0) -> None:
        """Take no new batch, and return once the polls in flight (long polls of up to a
        second, and their batches) have ended: from then on messages stay on the queue."""
        with self._idle:
            self.paused = True
            if not self._idle.wait_for(lambda: not self._polls, timeout):
                raise TimeoutError(f"{self.spec.name}: the polls in flight did not end")

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._idle:
                polling = not self.paused
                if polling:
                    self._polls += 1
            if not polling:
                self._stop.wait(0.05)
                continue
            try:
                self.poll_once(wait_seconds=1)
                self._count_failure(None)
            except Exception as error:
                self._count_failure(error)
                self._stop.wait(FAILED_POLL_PAUSE_SECONDS)
            finally:
                with self._idle:
                    self._polls -= 1
                    self._idle.notify_all()

    def _count_failure(self, error: Exception | None) -> None:
        """Log a streak of failed polls once, with a line every FAILURES_PER_WARNING and one
        when polls work again: SQS gone would otherwise log five tracebacks a second."""
        with self._idle:
            before = self._failures
            self._failures = failures = before + 1 if error else 0
        name = self.spec.name
        if error is None:
            if before:
                log.info("polling %s works again after %d failed polls", name, before)
        elif failures == 1:
            log.error("polling %s failed", name, exc_info=error)
        elif failures % FAILURES_PER_WARNING == 0:
            log.warning("polling %s still fails (%d in a row): %s", name, failures, error)

    def poll_once(self, wait_seconds: int = 0) -> int:
        """Receive and deliver one batch; the number of messages delivered."""
        with self._receiving:
            if self.paused or self._stop.is_set():  # decided while this poll waited its turn
                return 0
            messages = self._sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=self.spec.batch_size,
                WaitTimeSeconds=wait_seconds,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
        if not messages:
            return 0
        assert self.spec.consumer is not None
        invocation = self._lambdas.invoke(
            self.spec.consumer, sqs_event(messages, self._queue_arn, self._region)
        )
        if invocation.errored:
            log.warning(
                "%s failed its batch of %d: %s",
                self.spec.consumer,
                len(messages),
                invocation.payload.get("errorMessage"),
            )
            return len(messages)
        failed = {
            item["itemIdentifier"]
            for item in (invocation.payload or {}).get("batchItemFailures", [])
        }
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self._sqs.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )
        log.info("%s: %d delivered, %d failed", self.spec.name, len(messages), len(failed))
        return len(messages)


class Ticker(_EventSource):
    def __init__(
        self,
        schedules: tuple[ScheduleSpec, ...],
        rule_arns: dict[str, str],
        lambdas: Invoker,
        region: str,
        interval_seconds: float | None,
    ):
        """`interval_seconds` replaces every schedule's period (None: the real periods)."""
        super().__init__(lambdas, region)
        self._rule_arns = rule_arns
        self._interval = interval_seconds
        self.fired: dict[str, int] = {s.name: 0 for s in schedules}  # before any thread fires
        self.paused: set[str] = set()  # tests: targets no schedule fires (rules disabled)
        self._idle = threading.Condition()  # notified when a scheduled run ends
        self._firing: set[str] = set()  # targets of the scheduled runs in flight
        for schedule in schedules:
            self._in_background(self._run, f"tick-{schedule.name}", schedule)

    def pause(self, target: str, timeout: float = 30.0) -> None:
        """Fire no schedule of the function `target`, and return once a scheduled run of it
        in flight has ended: from then on only a caller's invocations run it."""
        with self._idle:
            self.paused.add(target)
            if not self._idle.wait_for(lambda: target not in self._firing, timeout):
                raise TimeoutError(f"{target}: the scheduled run in flight did not end")

    def fire(self, schedule: ScheduleSpec) -> Any:
        invocation = self._lambdas.invoke(
            schedule.target, scheduled_event(self._rule_arns[schedule.name], self._region)
        )
        self.fired[schedule.name] += 1
        level = logging.WARNING if invocation.errored else logging.INFO
        log.log(
            level,
            "%s fired %s: %s",
            schedule.expression,
            schedule.target,
            "error" if invocation.errored else "ok",
        )
        return invocation

    def _run(self, schedule: ScheduleSpec) -> None:
        period = self._interval if self._interval is not None else schedule.period_seconds
        while not self._stop.wait(period):
            with self._idle:
                if schedule.target in self.paused:
                    continue
                self._firing.add(schedule.target)
            try:
                self.fire(schedule)
            except Exception:
                log.exception("schedule %s failed", schedule.name)
            finally:
                with self._idle:
                    self._firing.discard(schedule.target)
                    self._idle.notify_all()
