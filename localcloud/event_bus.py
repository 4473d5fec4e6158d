"""Delivery from our event buses to their rules' Lambda targets, which moto does not make.

moto's EventBridge stores buses, rules and targets and matches events against each rule's
event pattern (`Rule.send_to_targets`), but delivers only to SQS, CloudWatch Logs, archives
and other buses: a Lambda target is skipped. The seam wraps that method: after moto's own
deliveries, an event that matched a rule with one of our functions as its target is handed
to `AsyncInvoker`, which invokes the function as Lambda's asynchronous invocation does:

- on a worker of its own, so PutEvents (the relay) returns at once and one slow invocation
  (a webhook that hangs) delays no other;
- a failed invocation is tried again `retry_attempts` times (BusRuleSpec), after Lambda's
  waits of about 1 and 2 minutes, scaled by the compressed clock;
- after the last, the event goes to the rule's dead-letter queue as Lambda's on-failure
  destination writes it (an invocation record with `condition: RetriesExhausted`).

tests/unit/test_moto_seam.py names the moto method; tests/e2e/test_notifications.py shows the
delivery, its retries and the dead-letter queue.
"""

from __future__ import annotations

import copy
import json
import logging
import queue
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from moto.events.models import Rule

from cdk_app.declaration import BusRuleSpec
from localcloud.deadline import BackgroundWork
from localcloud.lambdas import ACCOUNT_ID, Invoker

log = logging.getLogger("localcloud.event_bus")

_MOTO_SEND_TO_TARGETS = Rule.send_to_targets
# Lambda retries an asynchronous invocation that failed after about one minute, then two.
RETRY_WAITS_SECONDS = (60.0, 120.0)
WORKERS = 4  # invocations in flight at once (Lambda runs them concurrently)


def install(deliver: Callable[[str, str, dict[str, Any]], None]) -> Callable[[], None]:
    """Call `deliver(rule name, target ARN, event)` for each Lambda target of a rule an
    event matched; what uninstalls the seam."""

    def send_to_targets(self: Rule, original_event: Any, transform_input: bool = True) -> None:
        lambdas = [t for t in self.targets if t["Arn"].startswith("arn:aws:lambda:")]
        if lambdas:
            # moto raises NotImplementedError on a Lambda target: its own deliveries are
            # made by a copy of the rule without them.
            others = copy.copy(self)
            others.targets = [t for t in self.targets if t not in lambdas]
            _MOTO_SEND_TO_TARGETS(others, original_event, transform_input)
        else:
            _MOTO_SEND_TO_TARGETS(self, original_event, transform_input)
        if not lambdas or not self.event_pattern.matches_event(original_event):
            return
        event = {k: v for k, v in original_event.items() if k != "ingestion-time"}
        for target in lambdas:
            deliver(self.name, target["Arn"], event)

    Rule.send_to_targets = send_to_targets  # type: ignore[method-assign]

    def uninstall() -> None:
        Rule.send_to_targets = _MOTO_SEND_TO_TARGETS  # type: ignore[method-assign]

    return uninstall


class AsyncInvoker(BackgroundWork):
    """Lambda's asynchronous invocation of our rules' targets, with retries and the rules'
    dead-letter queues."""

    def __init__(
        self,
        rules: tuple[BusRuleSpec, ...],
        function_names: dict[str, str],  # deployed name -> spec name
        dead_letter_urls: dict[str, str],  # rule spec name -> URL
        lambdas: Invoker,
        sqs: Any,
        retry_scale: float,
    ) -> None:
        super().__init__()
        self._rules = {rule.deployed_name: rule for rule in rules}
        self._functions = function_names
        self._dead_letter_urls = dead_letter_urls
        self._lambdas = lambdas
        self._sqs = sqs
        self._waits = tuple(wait * retry_scale for wait in RETRY_WAITS_SECONDS)
        self._queue: queue.Queue[tuple[BusRuleSpec, str, dict[str, Any], int]] = queue.Queue()
        self.delivered = 0  # events whose invocation succeeded
        self.dead_lettered = 0
        self.in_flight = 0  # events taken and not yet delivered or dead-lettered
        self._counts = threading.Lock()
        for number in range(WORKERS):
            self._in_background(self._run, f"bus-delivery-{number}")

    def deliver(self, rule_name: str, target_arn: str, event: dict[str, Any]) -> None:
        rule = self._rules.get(rule_name)
        if rule is None:  # an operator's own rule, with one of our functions as target
            log.warning("rule %s is not declared; not delivered", rule_name)
            return
        with self._counts:
            self.in_flight += 1
        self._queue.put((rule, target_arn, event, 1))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                rule, arn, event, attempt = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self._invoke(rule, arn, event, attempt)
            except Exception:
                log.exception("delivering an event of %s failed", rule.name)

    def _invoke(self, rule: BusRuleSpec, arn: str, event: dict[str, Any], attempt: int) -> None:
        name = self._functions[arn.rsplit(":", 1)[1]]
        invocation = self._lambdas.invoke(name, event)
        if not invocation.errored:
            with self._counts:
                self.delivered += 1
                self.in_flight -= 1
            return
        if attempt <= rule.retry_attempts:
            wait = self._waits[min(attempt - 1, len(self._waits) - 1)]
            log.warning("%s failed (attempt %d); again in %.1f s", name, attempt, wait)
            retry = threading.Timer(wait, self._queue.put, ((rule, arn, event, attempt + 1),))
            retry.daemon = True
            retry.start()
            return
        log.warning(
            "%s failed %d times; the event goes to %s", name, attempt, rule.dead_letter_queue_name
        )
        self._sqs.send_message(
            QueueUrl=self._dead_letter_urls[rule.name],
            MessageBody=json.dumps(_invocation_record(arn, event, invocation, attempt)),
        )
        with self._counts:
            self.dead_lettered += 1
            self.in_flight -= 1


def _invocation_record(
    arn: str, event: dict[str, Any], invocation: Any, attempts: int
) -> dict[str, Any]:
    """What Lambda's on-failure destination sends for an asynchronous invocation that failed."""
    return {
        "version": "1.0",
        "timestamp": datetime.now(UTC).isoformat(),
        "requestContext": {
            "requestId": invocation.request_id,
            "functionArn": f"{arn}:$LATEST",
            "condition": "RetriesExhausted",
            "approximateInvokeCount": attempts,
        },
        "requestPayload": event,
        "responseContext": {
            "statusCode": 200,
            "executedVersion": "$LATEST",
            "functionError": "Unhandled",
        },
        "responsePayload": invocation.payload,
        "account": ACCOUNT_ID,
    }
