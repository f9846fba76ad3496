"""The one error type of the client."""

from __future__ import annotations

from typing import Any, List, Optional

#: Codes the client raises itself, beside the service's own (DESIGN §2).
CLIENT_CODES = (
    "network_error",
    "timeout",
    "buffer_full",
    "client_closed",
    "invalid_signature",
    "stale_signature",
    "invalid_response",
)


class TallyError(Exception):
    """An error answer of the service, or a failure the client raises itself.

    ``status`` is the HTTP status, 0 when there was no answer (network, verification, buffer).
    """

    def __init__(
        self,
        code: str,
        message: str,
        status: int = 0,
        request_id: Optional[str] = None,
        details: Optional[List[Any]] = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.request_id = request_id
        self.details: List[Any] = list(details or [])

    @property
    def retryable(self) -> bool:
        """Network errors, 5xx and 429 may succeed when sent again."""
        return self.code in ("network_error", "timeout") or self.status == 429 or self.status >= 500

    def __repr__(self) -> str:
        return f"TallyError(code={self.code!r}, status={self.status}, message={self.message!r}, request_id={self.request_id!r})"
