"""Background batching behind ``Tally.enqueue``: a thread sends through /v1/track/batch."""

from __future__ import annotations

import random
import re
import sys
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Callable, Deque, Dict, List, Optional

from ._transport import new_idempotency_key
from .errors import TallyError
from .types import TrackBatchItem

if TYPE_CHECKING:
    from .client import Tally

OnError = Callable[[TrackBatchItem, TallyError], None]
_EVENT_PATH = re.compile(r"^/body/events/(\d+)(?:/|$)")


def _print_error(event: TrackBatchItem, error: TallyError) -> None:
    print(f"tally: event of {event.get('agent_id')} not tracked: {error.code}: {error.message}", file=sys.stderr)


class _Pending:
    __slots__ = ("event", "attempts")

    def __init__(self, event: TrackBatchItem) -> None:
        self.event = event
        self.attempts = 0


class Batcher:
    def __init__(
        self,
        client: "Tally",
        batch_size: int,
        flush_interval: float,
        max_buffer_size: int,
        max_attempts: int,
        on_error: Optional[OnError],
    ) -> None:
        self._client = client
        self._batch_size = max(1, min(500, batch_size))
        self._interval = flush_interval
        self._max_buffer = max_buffer_size
        self._max_attempts = max_attempts
        self._on_error = on_error or _print_error
        self._buffer: Deque[_Pending] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._send_lock = threading.Lock()  # one batch in flight, in order
        self._closed = False
        self._thread: Optional[threading.Thread] = None

    def enqueue(self, event: TrackBatchItem) -> None:
        with self._lock:
            if self._closed:
                raise TallyError("client_closed", "enqueue after close()")
            if len(self._buffer) >= self._max_buffer:
                raise TallyError("buffer_full", f"The batch buffer holds {self._max_buffer} events; flush() or slow down")
            item = dict(event)
            item.setdefault("idempotency_key", new_idempotency_key())
            self._buffer.append(_Pending(item))  # type: ignore[arg-type]
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tally-batcher", daemon=True)
                self._thread.start()
            if len(self._buffer) >= self._batch_size:
                self._wake.notify()

    def flush(self) -> None:
        """Sends everything buffered, in the calling thread; returns when the buffer is empty."""
        while True:
            # Under the send lock, so a batch the thread has in flight (and may put back) is waited for.
            with self._send_lock:
                with self._lock:
                    if not self._buffer:
                        return
                self._send_locked()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._wake.notify()
        self.flush()
        if self._thread is not None:
            self._thread.join(timeout=self._interval + 30)

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                if len(self._buffer) < self._batch_size:
                    self._wake.wait(self._interval)
                if self._closed:
                    return
                has_work = bool(self._buffer)
            if has_work:
                try:
                    self._send_once()
                except Exception as error:  # keep the thread alive whatever happens
                    print(f"tally: batch sender failed: {error!r}", file=sys.stderr)

    def _take(self) -> List[_Pending]:
        with self._lock:
            n = min(self._batch_size, len(self._buffer))
            return [self._buffer.popleft() for _ in range(n)]

    def _put_back(self, items: List[_Pending]) -> None:
        with self._lock:
            self._buffer.extendleft(reversed(items))

    def _report(self, pending: _Pending, error: TallyError) -> None:
        try:
            self._on_error(pending.event, error)
        except Exception:  # a failing callback must not stop the batches behind it
            pass

    def _send_once(self) -> None:
        with self._send_lock:
            self._send_locked()

    def _send_locked(self) -> None:
        if True:
            batch = self._take()
            if not batch:
                return
            try:
                answer = self._client.track_batch([p.event for p in batch])
            except TallyError as failure:
                if self._split_invalid(batch, failure):
                    return
                self._retry_or_report(batch, failure)
                return
            again: List[_Pending] = []
            results = answer["data"]
            for i, pending in enumerate(batch):
                result = results[i] if i < len(results) else None
                if result is not None and result.get("status", 0) < 300:
                    continue
                err = (result or {}).get("error") or {}
                error = TallyError(
                    code=str(err.get("code", "invalid_response")),
                    message=str(err.get("message", "No result for this event")),
                    status=int((result or {}).get("status", 0)),
                    request_id=err.get("request_id"),
                    details=list(err.get("details", [])),
                )
                if error.retryable and pending.attempts + 1 < self._max_attempts:
                    pending.attempts += 1
                    again.append(pending)
                else:
                    self._report(pending, error)
            if again:
                # Rate-limited events go back to the front, in order, after the window resets.
                self._put_back(again)
                time.sleep(1.0 + random.random() * 0.2)

    def _split_invalid(self, batch: List[_Pending], failure: TallyError) -> bool:
        """A body the schema refuses fails the whole request: reject the events it names, resend the rest."""
        if failure.code != "validation_error" or not failure.details:
            return False
        bad: Dict[int, list] = {}
        for detail in failure.details:
            match = _EVENT_PATH.match(str(detail.get("path", "")))
            if match is None:
                return False
            bad.setdefault(int(match.group(1)), []).append(detail)
        good = []
        for i, pending in enumerate(batch):
            details = bad.get(i)
            if details is None:
                good.append(pending)
                continue
            text = "; ".join(f"{d.get('path')} {d.get('message')}" for d in details)
            self._report(
                pending,
                TallyError("validation_error", f"Invalid event: {text}", failure.status, failure.request_id, details),
            )
        self._put_back(good)
        return True

    def _retry_or_report(self, batch: List[_Pending], failure: TallyError) -> None:
        again = [p for p in batch if failure.retryable and p.attempts + 1 < self._max_attempts]
        for pending in batch:
            if pending in again:
                pending.attempts += 1
            else:
                self._report(pending, failure)
        if again:
            self._put_back(again)
            time.sleep(1.0)
