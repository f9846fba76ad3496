"""Sending one logical request, with retries (network errors, 5xx, 429) and backoff."""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from .errors import TallyError


@dataclass
class RetryPolicy:
    max_retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 20.0

    def delay(self, attempt: int, retry_after: Optional[str]) -> float:
        """Exponential backoff with jitter; at least what Retry-After asks for."""
        backoff = min(self.max_delay, self.base_delay * (2**attempt))
        jittered = backoff / 2 + random.random() * backoff / 2
        if retry_after is None:
            return jittered
        try:
            asked = float(retry_after)
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(retry_after) if retry_after else None
            if parsed is None:
                return jittered
            asked = parsed.timestamp() - time.time()
        return max(asked, 0.0) + random.random() * 0.1


def new_idempotency_key() -> str:
    return f"tally-py-{uuid.uuid4()}"


class Response:
    def __init__(self, status: int, headers: Mapping[str, str], raw: Any) -> None:
        self.status = status
        self.headers = headers
        self.raw = raw  # the open HTTP response; read() it once

    def json(self) -> Any:
        data = self.raw.read()
        self.raw.close()
        return json.loads(data) if data else None

    def text(self) -> str:
        data = self.raw.read()
        self.raw.close()
        return str(data.decode("utf-8"))


def _error_from(status: int, headers: Mapping[str, str], body: bytes) -> TallyError:
    request_id = headers.get("x-request-id")
    try:
        error = json.loads(body)["error"]
        return TallyError(
            code=error["code"],
            message=error.get("message", ""),
            status=status,
            request_id=error.get("request_id", request_id),
            details=error.get("details", []),
        )
    except (ValueError, KeyError, TypeError):
        code = "internal_error" if status >= 500 else "invalid_response"
        return TallyError(code, f"HTTP {status}: {body[:200]!r}", status=status, request_id=request_id)


class Transport:
    def __init__(self, api_key: str, base_url: str, timeout: float, retry: RetryPolicy, user_agent: str) -> None:
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retry = retry
        self.user_agent = user_agent

    def url(self, path: str, query: Optional[Mapping[str, Any]]) -> str:
        params = []
        for name, value in (query or {}).items():
            if value is None:
                continue
            if isinstance(value, bool):
                value = "true" if value else "false"
            params.append((name, str(value)))
        suffix = f"?{urllib.parse.urlencode(params)}" if params else ""
        return f"{self.base_url}{path}{suffix}"

    def send(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        headers: Optional[Dict[str, str]] = None,
        retry: str = "all",
    ) -> Response:
        """Sends until a 2xx or a final failure. ``retry``: "all" or "rate_limited" (429 only)."""
        url = self.url(path, query)
        data = None if body is None else json.dumps(body).encode("utf-8")
        all_headers = {
            "Authorization": f"Bearer {self.api_key}",
            "Accept": "application/json",
            "User-Agent": self.user_agent,
        }
        if data is not None:
            all_headers["Content-Type"] = "application/json"
        all_headers.update(headers or {})
        attempt = 0
        while True:
            retry_after: Optional[str] = None
            request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
            try:
                raw = urllib.request.urlopen(request, timeout=self.timeout)
                return Response(raw.status, {k.lower(): v for k, v in raw.headers.items()}, raw)
            except urllib.error.HTTPError as error:
                response_headers = {k.lower(): v for k, v in error.headers.items()}
                failure = _error_from(error.code, response_headers, error.read())
                retry_after = response_headers.get("retry-after")
            except (socket.timeout, TimeoutError) as error:
                failure = TallyError("timeout", f"No answer from {self.base_url} within {self.timeout} s: {error}")
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError, OSError) as error:
                reason = getattr(error, "reason", None)
                if isinstance(reason, (socket.timeout, TimeoutError)):
                    failure = TallyError("timeout", f"No answer from {self.base_url} within {self.timeout} s")
                else:
                    failure = TallyError("network_error", f"Could not reach {self.base_url}: {error}")
            allowed = failure.retryable if retry == "all" else failure.status == 429
            if not allowed or attempt >= self.retry.max_retries:
                raise failure
            time.sleep(self.retry.delay(attempt, retry_after))
            attempt += 1
