"""The webhook URLs, encrypted at rest with the notifications KMS key: the API encrypts
(kms:Encrypt only), the notifier decrypts (kms:Decrypt only). The encryption context names
the user, so a ciphertext copied onto another user's row does not decrypt."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PURPOSE = "slack-webhook"


def _context(user_id: str) -> dict[str, str]:
    return {"gpu-dev:user": user_id, "gpu-dev:purpose": PURPOSE}


@dataclass(frozen=True)
class WebhookVault:
    kms: Any
    key_id: str

    def seal(self, user_id: str, url: str) -> bytes:
        answer = self.kms.encrypt(
            KeyId=self.key_id, Plaintext=url.encode(), EncryptionContext=_context(user_id)
        )
        return bytes(answer["CiphertextBlob"])

    def open(self, user_id: str, ciphertext: bytes) -> str:
        answer = self.kms.decrypt(
            CiphertextBlob=ciphertext, KeyId=self.key_id, EncryptionContext=_context(user_id)
        )
        return bytes(answer["Plaintext"]).decode()
