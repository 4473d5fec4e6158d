"""The two ways a message leaves: an e-mail through SES v2 and a post to a Slack incoming
webhook. Each is bounded: the webhook gets `timeout_seconds` per attempt and `attempts`
attempts with doubling waits (429, 5xx, a timeout or no answer are tried again; another 4xx
is not); SES calls go through the layer's client (its standard retries, 5 s to connect).
A failure is a ChannelFailed whose message never holds the webhook URL (it is a secret)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from gpudev.notifications.messages import Message


class ChannelFailed(Exception):
    """One channel's send failed; the message says why, without the URL."""


@dataclass(frozen=True)
class SlackWebhook:
    timeout_seconds: float = 5.0
    attempts: int = 3
    first_wait_seconds: float = 0.5
    sleep: Callable[[float], None] = time.sleep

    def post(self, url: str, message: Message) -> None:
        body = json.dumps({"text": f"{message.subject}\n{message.text}"}).encode()
        problem = "not tried"
        for attempt in range(1, self.attempts + 1):
            request = urllib.request.Request(
                url, data=body, method="POST", headers={"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_seconds) as answer:
                    answer.read(1024)
                return
            except urllib.error.HTTPError as error:
                problem = f"the webhook answered {error.code}"
                if error.code != 429 and error.code < 500:
                    raise ChannelFailed(problem) from None
            except TimeoutError:
                problem = f"the webhook did not answer within {self.timeout_seconds:g} s"
            except (urllib.error.URLError, OSError) as error:
                reason = getattr(error, "reason", error)
                problem = (
                    f"the webhook did not answer within {self.timeout_seconds:g} s"
                    if isinstance(reason, TimeoutError)
                    else "the webhook could not be reached"
                )
            if attempt < self.attempts:
                self.sleep(self.first_wait_seconds * 2 ** (attempt - 1))
        raise ChannelFailed(f"{problem} ({self.attempts} attempts)")

    def longest_seconds(self) -> float:
        """The longest a post can take: every attempt timing out, and the waits between."""
        waits = sum(self.first_wait_seconds * float(2**i) for i in range(self.attempts - 1))
        return self.attempts * self.timeout_seconds + waits


@dataclass(frozen=True)
class SesEmail:
    sesv2: Any
    sender: str

    def is_verified(self, address: str) -> bool:
        """Whether SES lets us mail `address` (its owner followed SES's link)."""
        try:
            identity = self.sesv2.get_email_identity(EmailIdentity=address)
        except ClientError as error:
            if error.response["Error"]["Code"] == "NotFoundException":
                return False
            raise ChannelFailed(
                f"SES did not say whether the address is verified: {error}"
            ) from None
        except BotoCoreError as error:
            raise ChannelFailed(f"SES could not be reached: {error}") from None
        return bool(identity.get("VerifiedForSendingStatus"))

    def start_verification(self, address: str) -> bool:
        """Create the address's SES identity (SES mails it a link); whether it is verified
        already (an identity made before)."""
        try:
            self.sesv2.create_email_identity(EmailIdentity=address)
        except ClientError as error:
            if error.response["Error"]["Code"] != "AlreadyExistsException":
                raise ChannelFailed(f"SES refused the address: {error}") from None
        except BotoCoreError as error:
            raise ChannelFailed(f"SES could not be reached: {error}") from None
        return self.is_verified(address)

    def send(self, address: str, message: Message) -> None:
        try:
            self.sesv2.send_email(
                FromEmailAddress=self.sender,
                Destination={"ToAddresses": [address]},
                Content={
                    "Simple": {
                        "Subject": {"Data": message.subject, "Charset": "UTF-8"},
                        "Body": {"Text": {"Data": message.text, "Charset": "UTF-8"}},
                    }
                },
            )
        except (ClientError, BotoCoreError) as error:
            raise ChannelFailed(f"SES did not send the e-mail: {error}") from None
