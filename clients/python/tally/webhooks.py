"""Verifying webhook deliveries: X-Tally-Signature and the Standard Webhooks headers."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import List, Mapping, Optional, Union, cast

from .errors import TallyError
from .types import WebhookEnvelope

SECRET_PREFIX = "whsec_"


def _header(headers: Mapping[str, str], name: str) -> Optional[str]:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def _matches(key: bytes, message: bytes, signatures: List[bytes]) -> bool:
    expected = hmac.new(key, message, hashlib.sha256).digest()
    # compare_digest runs in constant time; every candidate is compared.
    results = [hmac.compare_digest(expected, signature) for signature in signatures]
    return any(results)


def verify_webhook(
    raw_body: Union[bytes, str],
    headers: Mapping[str, str],
    secret: str,
    *,
    tolerance: float = 300,
    now: Optional[float] = None,
) -> WebhookEnvelope:
    """Checks a delivery's signature and age; returns the parsed envelope.

    ``raw_body`` must be the body exactly as received. Accepts ``X-Tally-Signature``
    (``t=<unix>,v1=<hex>``: HMAC-SHA256 of ``"<t>.<body>"`` keyed with the whole secret's UTF-8
    bytes) or the Standard Webhooks headers (``webhook-signature: v1,<base64>`` of
    ``"<id>.<t>.<body>"`` keyed with the base64-decoded part of the secret after ``whsec_``).
    Raises TallyError ``invalid_signature``, or ``stale_signature`` beyond ``tolerance`` seconds.
    """
    body = raw_body.encode("utf-8") if isinstance(raw_body, str) else bytes(raw_body)
    current = time.time() if now is None else now
    tally = _header(headers, "x-tally-signature")
    standard = _header(headers, "webhook-signature")
    if tally is not None:
        parts = [part.strip().split("=", 1) for part in tally.split(",")]
        timestamp = next((p[1] for p in parts if len(p) == 2 and p[0] == "t"), "")
        try:
            signatures = [bytes.fromhex(p[1]) for p in parts if len(p) == 2 and p[0] == "v1"]
        except ValueError:
            raise TallyError("invalid_signature", "X-Tally-Signature is malformed") from None
        if not timestamp.isdigit() or not signatures:
            raise TallyError("invalid_signature", "X-Tally-Signature is malformed")
        verified = _matches(secret.encode("utf-8"), timestamp.encode() + b"." + body, signatures)
    elif standard is not None:
        message_id = _header(headers, "webhook-id")
        timestamp = _header(headers, "webhook-timestamp") or ""
        if not message_id or not timestamp.isdigit():
            raise TallyError("invalid_signature", "webhook-id or webhook-timestamp is missing")
        encoded = secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
        try:
            key = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise TallyError("invalid_signature", "The secret is not whsec_<base64>") from None
        signatures = []
        for candidate in standard.split(" "):
            if candidate.startswith("v1,"):
                try:
                    signatures.append(base64.b64decode(candidate[3:], validate=True))
                except (binascii.Error, ValueError):
                    continue
        if not signatures:
            raise TallyError("invalid_signature", "webhook-signature has no v1 signature")
        signed = f"{message_id}.{timestamp}.".encode() + body
        verified = _matches(key, signed, signatures)
    else:
        raise TallyError("invalid_signature", "Neither X-Tally-Signature nor webhook-signature is present")
    if not verified:
        raise TallyError("invalid_signature", "The signature does not match the body")
    # Checked after the signature, so a forged timestamp cannot pass as merely stale.
    if abs(current - int(timestamp)) > tolerance:
        raise TallyError("stale_signature", f"The signature is older than {tolerance} s")
    try:
        return cast(WebhookEnvelope, json.loads(body))
    except ValueError:
        raise TallyError("invalid_response", "The body is not JSON") from None
