"""The Tally API client."""

from __future__ import annotations

import urllib.parse
from types import TracebackType
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Type, TypeVar, cast

from ._transport import RetryPolicy, Transport, new_idempotency_key
from .batcher import Batcher, OnError
from .types import (
    AssumptionHistory,
    AssumptionVersion,
    AuditEntry,
    AuditLogPage,
    Budget,
    BudgetList,
    FixedCost,
    FixedCostList,
    Invitation,
    InvitationList,
    Member,
    MemberList,
    Forecast,
    Payback,
    Period,
    PeriodChanges,
    PeriodStatement,
    ReportSchedule,
    ReportScheduleList,
    DeliveryList,
    Delivery,
    Event,
    EventAdjustments,
    EventList,
    EventReviews,
    ReviewRequest,
    ReviewResult,
    Leaderboard,
    OtlpMappingRuleCreated,
    OtlpMappingRuleList,
    OtlpUnresolvedRun,
    OtlpUnresolvedRunList,
    Report,
    Restatement,
    RestatementPreview,
    Settings,
    SsoConnection,
    TaskType,
    TaskTypeList,
    TrackBatchItem,
    TrackBatchResponse,
    TrackRequest,
    Usage,
    Webhook,
    WebhookList,
    WebhookWithSecret,
)

__version__ = "0.1.0"
T = TypeVar("T")


def _seg(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def _report_query(query: Dict[str, Any]) -> Dict[str, Any]:
    """``metadata={"client_id": "acme"}`` becomes the filter ``metadata.client_id=acme``."""
    metadata = query.pop("metadata", None) or {}
    for key, value in metadata.items():
        query[f"metadata.{key}"] = value
    return query


class Tally:
    """The Tally API.

    Reads, ``track`` (with its idempotency key), batches and other idempotent writes are retried on
    network errors, 5xx and 429 with exponential backoff and jitter, honouring Retry-After; writes
    the service cannot deduplicate (creating a webhook or a task type, a test ping) only on 429.
    Use it as a context manager, or call ``close()``, so buffered events are sent.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str = "http://127.0.0.1:8080",
        *,
        timeout: float = 30.0,
        max_retries: int = 3,
        retry_base_delay: float = 0.5,
        retry_max_delay: float = 20.0,
        batch_size: int = 100,
        flush_interval: float = 1.0,
        max_buffer_size: int = 10_000,
        max_attempts: int = 5,
        on_error: Optional[OnError] = None,
    ) -> None:
        if not api_key:
            raise ValueError("Tally: api_key is required")
        self._transport = Transport(
            api_key,
            base_url,
            timeout,
            RetryPolicy(max_retries, retry_base_delay, retry_max_delay),
            f"tally-python/{__version__}",
        )
        self._batcher = Batcher(self, batch_size, flush_interval, max_buffer_size, max_attempts, on_error)

    # plumbing

    def _call(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None, body: Any = None,
              headers: Optional[Dict[str, str]] = None, retry: str = "all") -> Any:
        response = self._transport.send(method, path, query=query, body=body, headers=headers, retry=retry)
        if response.status == 204:
            response.raw.close()
            return None
        return response.json()

    def _pages(self, fetch: Callable[[Optional[str]], Dict[str, Any]]) -> Iterator[Any]:
        cursor: Optional[str] = None
        while True:
            page = fetch(cursor)
            yield from page["data"]
            cursor = page.get("next_cursor")
            if cursor is None:
                return

    # tracking

    def track(self, event: TrackRequest, *, idempotency_key: Optional[str] = None) -> Event:
        """Records one finished task. A retried call carries the same key, so it never counts twice."""
        key = idempotency_key or new_idempotency_key()
        return cast(Event, self._call("POST", "/v1/track", body=event, headers={"Idempotency-Key": key}))

    def track_batch(self, events: Iterable[TrackBatchItem]) -> TrackBatchResponse:
        """Records up to 500 events; each gets an idempotency key unless it has one (207 per event)."""
        keyed = []
        for event in events:
            item = dict(event)
            item.setdefault("idempotency_key", new_idempotency_key())
            keyed.append(item)
        return cast(TrackBatchResponse, self._call("POST", "/v1/track/batch", body={"events": keyed}))

    def list_events(self, *, agent_id: Optional[str] = None, task_type: Optional[str] = None,
                    limit: Optional[int] = None, cursor: Optional[str] = None) -> EventList:
        query = {"agent_id": agent_id, "task_type": task_type, "limit": limit, "cursor": cursor}
        return cast(EventList, self._call("GET", "/v1/events", query=query))

    def iter_events(self, *, agent_id: Optional[str] = None, task_type: Optional[str] = None,
                    limit: Optional[int] = None) -> Iterator[Event]:
        """Every matching event, newest first, fetching pages as it goes."""
        return self._pages(lambda c: cast(Dict[str, Any], self.list_events(
            agent_id=agent_id, task_type=task_type, limit=limit, cursor=c)))

    def get_event(self, event_id: str) -> Event:
        return cast(Event, self._call("GET", f"/v1/events/{_seg(event_id)}"))

    def review(self, event_id: str, review: ReviewRequest, *, idempotency_key: Optional[str] = None) -> ReviewResult:
        """Records a person's review of an event: its figures become the measured ones.

        A retried call carries the same key, so it records one review.
        """
        key = idempotency_key or new_idempotency_key()
        return cast(ReviewResult, self._call("POST", f"/v1/events/{_seg(event_id)}/review", body=review,
                                             headers={"Idempotency-Key": key}))

    def event_adjustments(self, event_id: str) -> EventAdjustments:
        """The event's original figures, every adjustment in commit order, and its current figures."""
        return cast(EventAdjustments, self._call("GET", f"/v1/events/{_seg(event_id)}/adjustments"))

    def event_reviews(self, event_id: str) -> EventReviews:
        """Every review of the event, oldest first; the last is in force."""
        return cast(EventReviews, self._call("GET", f"/v1/events/{_seg(event_id)}/reviews"))

    # background batching

    def enqueue(self, event: TrackBatchItem) -> None:
        """Buffers an event for /v1/track/batch, sent by size or interval from a background thread.

        Raises TallyError ``buffer_full`` when ``max_buffer_size`` events wait (nothing is dropped
        silently), ``client_closed`` after ``close()``.
        """
        self._batcher.enqueue(event)

    def flush(self) -> None:
        """Sends everything buffered; returns when the buffer is empty."""
        self._batcher.flush()

    def close(self) -> None:
        """Flushes and stops the background thread."""
        self._batcher.close()

    def __enter__(self) -> "Tally":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    # reports

    def time_saved_report(self, **query: Any) -> Report:
        """``period``, ``group_by``, ``sort``, ``top``, filters, ``metadata={key: value}``."""
        return cast(Report, self._call("GET", "/v1/reports/time-saved", query=_report_query(query)))

    def cost_saved_report(self, **query: Any) -> Report:
        return cast(Report, self._call("GET", "/v1/reports/cost-saved", query=_report_query(query)))

    def leaderboard(self, **query: Any) -> Leaderboard:
        """``metric``, ``top``, ``period`` and filters."""
        return cast(Leaderboard, self._call("GET", "/v1/reports/leaderboard", query=_report_query(query)))

    def report_csv(self, report: str = "time-saved", **query: Any) -> str:
        """A report (``time-saved``, ``cost-saved`` or ``leaderboard``) as CSV text."""
        q = _report_query(query)
        q["format"] = "csv"
        response = self._transport.send("GET", f"/v1/reports/{report}", query=q, headers={"Accept": "text/csv"})
        return response.text()

    def export_report(self, chunk_size: int = 64 * 1024, **query: Any) -> Iterator[bytes]:
        """The streamed CSV export, as chunks of UTF-8 bytes (write them to a file as they come)."""
        response = self._transport.send(
            "GET", "/v1/reports/export", query=_report_query(query), headers={"Accept": "text/csv"}
        )

        def chunks() -> Iterator[bytes]:
            try:
                while True:
                    chunk = response.raw.read(chunk_size)
                    if not chunk:
                        return
                    yield chunk
            finally:
                response.raw.close()

        return chunks()

    def usage(self) -> Usage:
        return cast(Usage, self._call("GET", "/v1/reports/usage"))

    def forecast(self, **filters: Any) -> Forecast:
        """This month projected to its end: ``agent_id``, ``task_type``, ``client_id``, ``outcome``,
        ``metadata={key: value}``. The answer says its method and the figures it rests on."""
        return cast(Forecast, self._call("GET", "/v1/reports/forecast", query=_report_query(filters)))

    def payback(self, *, period: Optional[str] = None) -> Payback:
        """ROI net of fixed costs over ``period`` (default all), cumulative net saved after fixed costs
        by month, the payback month or its forecast, FTE capacity freed."""
        return cast(Payback, self._call("GET", "/v1/reports/payback", query={"period": period}))

    # budgets, fixed costs and report e-mails

    def create_budget(self, name: str, scope: str, amount: float, *, scope_value: Optional[str] = None,
                      thresholds: Optional[List[int]] = None) -> Budget:
        """A monthly budget on agent spend: ``scope`` is ``org``, ``agent``, ``client`` or ``task_type``."""
        body: Dict[str, Any] = {"name": name, "scope": scope, "amount": amount}
        if scope_value is not None:
            body["scope_value"] = scope_value
        if thresholds is not None:
            body["thresholds"] = thresholds
        return cast(Budget, self._call("POST", "/v1/budgets", body=body, retry="rate_limited"))

    def list_budgets(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> BudgetList:
        return cast(BudgetList, self._call("GET", "/v1/budgets", query={"limit": limit, "cursor": cursor}))

    def iter_budgets(self, *, limit: Optional[int] = None) -> Iterator[Budget]:
        return self._pages(lambda c: cast(Dict[str, Any], self.list_budgets(limit=limit, cursor=c)))

    def get_budget(self, budget_id: str) -> Budget:
        return cast(Budget, self._call("GET", f"/v1/budgets/{_seg(budget_id)}"))

    def update_budget(self, budget_id: str, **changes: Any) -> Budget:
        """``name``, ``scope``, ``scope_value``, ``amount`` or ``thresholds``."""
        return cast(Budget, self._call("PATCH", f"/v1/budgets/{_seg(budget_id)}", body=changes))

    def delete_budget(self, budget_id: str) -> None:
        self._call("DELETE", f"/v1/budgets/{_seg(budget_id)}", retry="rate_limited")

    def create_fixed_cost(self, name: str, kind: str, amount: float, *, start_month: Optional[str] = None,
                          end_month: Optional[str] = None, date: Optional[str] = None) -> FixedCost:
        """``kind="monthly"`` from ``start_month`` (to ``end_month``), or ``kind="one_off"`` on ``date``."""
        body: Dict[str, Any] = {"name": name, "kind": kind, "amount": amount}
        for key, value in (("start_month", start_month), ("end_month", end_month), ("date", date)):
            if value is not None:
                body[key] = value
        return cast(FixedCost, self._call("POST", "/v1/fixed-costs", body=body, retry="rate_limited"))

    def list_fixed_costs(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> FixedCostList:
        return cast(FixedCostList, self._call("GET", "/v1/fixed-costs", query={"limit": limit, "cursor": cursor}))

    def iter_fixed_costs(self, *, limit: Optional[int] = None) -> Iterator[FixedCost]:
        return self._pages(lambda c: cast(Dict[str, Any], self.list_fixed_costs(limit=limit, cursor=c)))

    def get_fixed_cost(self, cost_id: str) -> FixedCost:
        return cast(FixedCost, self._call("GET", f"/v1/fixed-costs/{_seg(cost_id)}"))

    def update_fixed_cost(self, cost_id: str, **changes: Any) -> FixedCost:
        return cast(FixedCost, self._call("PATCH", f"/v1/fixed-costs/{_seg(cost_id)}", body=changes))

    def delete_fixed_cost(self, cost_id: str) -> None:
        self._call("DELETE", f"/v1/fixed-costs/{_seg(cost_id)}", retry="rate_limited")

    # members and invitations (admin keys)

    def create_invitation(self, email: str, role: str) -> Invitation:
        """Invites ``email`` as ``owner``, ``admin`` or ``analyst``: the e-mail goes out with a link valid
        7 days. A pending invitation of the same e-mail is sent again (new link) instead."""
        body = {"email": email, "role": role}
        return cast(Invitation, self._call("POST", "/v1/invitations", body=body, retry="rate_limited"))

    def list_invitations(self, *, status: Optional[str] = None, limit: Optional[int] = None,
                         cursor: Optional[str] = None) -> InvitationList:
        """``status``: ``pending``, ``accepted``, ``revoked`` or ``expired``."""
        query = {"status": status, "limit": limit, "cursor": cursor}
        return cast(InvitationList, self._call("GET", "/v1/invitations", query=query))

    def iter_invitations(self, *, status: Optional[str] = None,
                         limit: Optional[int] = None) -> Iterator[Invitation]:
        return self._pages(
            lambda c: cast(Dict[str, Any], self.list_invitations(status=status, limit=limit, cursor=c)))

    def get_invitation(self, invitation_id: str) -> Invitation:
        return cast(Invitation, self._call("GET", f"/v1/invitations/{_seg(invitation_id)}"))

    def resend_invitation(self, invitation_id: str) -> Invitation:
        """Sends it again with a new link valid 7 days; the previous link stops working."""
        path = f"/v1/invitations/{_seg(invitation_id)}/resend"
        return cast(Invitation, self._call("POST", path, retry="rate_limited"))

    def revoke_invitation(self, invitation_id: str) -> Invitation:
        return cast(Invitation, self._call("DELETE", f"/v1/invitations/{_seg(invitation_id)}"))

    def list_members(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> MemberList:
        return cast(MemberList, self._call("GET", "/v1/members", query={"limit": limit, "cursor": cursor}))

    def iter_members(self, *, limit: Optional[int] = None) -> Iterator[Member]:
        return self._pages(lambda c: cast(Dict[str, Any], self.list_members(limit=limit, cursor=c)))

    def get_member(self, account_id: str) -> Member:
        return cast(Member, self._call("GET", f"/v1/members/{_seg(account_id)}"))

    def set_member_role(self, account_id: str, role: str) -> Member:
        """Changes a member's role; demoting the last owner is refused (409 ``last_owner``)."""
        return cast(Member, self._call("PATCH", f"/v1/members/{_seg(account_id)}", body={"role": role}))

    def remove_member(self, account_id: str) -> None:
        """Removes a member; their sessions in the organisation end at their next request."""
        self._call("DELETE", f"/v1/members/{_seg(account_id)}", retry="rate_limited")

    def create_report_schedule(self, frequency: str, recipients: List[str]) -> ReportSchedule:
        """A ``weekly`` or ``monthly`` report e-mail (HTML summary, CSV attached) to ``recipients``."""
        body = {"frequency": frequency, "recipients": recipients}
        return cast(ReportSchedule, self._call("POST", "/v1/report-schedules", body=body, retry="rate_limited"))

    def list_report_schedules(self, *, limit: Optional[int] = None,
                              cursor: Optional[str] = None) -> ReportScheduleList:
        query = {"limit": limit, "cursor": cursor}
        return cast(ReportScheduleList, self._call("GET", "/v1/report-schedules", query=query))

    def get_report_schedule(self, schedule_id: str) -> ReportSchedule:
        return cast(ReportSchedule, self._call("GET", f"/v1/report-schedules/{_seg(schedule_id)}"))

    def update_report_schedule(self, schedule_id: str, **changes: Any) -> ReportSchedule:
        """``frequency`` or ``recipients``."""
        return cast(ReportSchedule, self._call("PATCH", f"/v1/report-schedules/{_seg(schedule_id)}", body=changes))

    def delete_report_schedule(self, schedule_id: str) -> None:
        self._call("DELETE", f"/v1/report-schedules/{_seg(schedule_id)}", retry="rate_limited")

    def send_report_schedule(self, schedule_id: str) -> Dict[str, Any]:
        """Sends the latest due period now to the recipients who have not had it:
        ``{"period": ..., "queued": [...]}``."""
        return cast(Dict[str, Any], self._call("POST", f"/v1/report-schedules/{_seg(schedule_id)}/send"))

    # closed months (docs/periods.md)

    def list_periods(self) -> List[Dict[str, Any]]:
        """Months ever closed, newest first: ``month``, ``status``, ``closed_at``, ``reason``…"""
        return cast(List[Dict[str, Any]], self._call("GET", "/v1/periods")["data"])

    def close_period(self, month: str, reason: str) -> PeriodStatement:
        """Closes ``month`` (``YYYY-MM``, ended in UTC) and freezes its statement."""
        path = f"/v1/periods/{_seg(month)}/close"
        return cast(PeriodStatement, self._call("POST", path, body={"reason": reason}, retry="rate_limited"))

    def reopen_period(self, month: str, reason: str) -> PeriodStatement:
        """Reopens a closed month; needs the owner role, so an admin key gets 403 insufficient_role."""
        path = f"/v1/periods/{_seg(month)}/reopen"
        return cast(PeriodStatement, self._call("POST", path, body={"reason": reason}, retry="rate_limited"))

    def get_period(self, month: str) -> Period:
        return cast(Period, self._call("GET", f"/v1/periods/{_seg(month)}"))

    def period_statements(self, month: str) -> List[PeriodStatement]:
        """Every statement of the month, newest first (reopened ones included)."""
        return cast(List[PeriodStatement], self._call("GET", f"/v1/periods/{_seg(month)}/statements")["data"])

    def period_changes(self, month: str) -> PeriodChanges:
        """The live figures, their difference from the statement and the entries that make it up."""
        return cast(PeriodChanges, self._call("GET", f"/v1/periods/{_seg(month)}/changes"))

    def period_statement_csv(self, month: str) -> str:
        response = self._transport.send("GET", f"/v1/periods/{_seg(month)}/statement.csv",
                                        headers={"Accept": "text/csv"})
        return response.text()

    # task types

    def list_task_types(self, *, category: Optional[str] = None, include_archived: Optional[bool] = None) -> TaskTypeList:
        query = {"category": category, "include_archived": include_archived}
        return cast(TaskTypeList, self._call("GET", "/v1/task-types", query=query))

    def create_task_type(self, key: str, display_name: str, category: str, default_baseline_minutes: float,
                         *, baseline_source: Optional[str] = None, hourly_rate: Optional[float] = None) -> TaskType:
        body: Dict[str, Any] = {"key": key, "display_name": display_name, "category": category,
                                "default_baseline_minutes": default_baseline_minutes}
        if baseline_source is not None:
            body["baseline_source"] = baseline_source
        if hourly_rate is not None:
            body["hourly_rate"] = hourly_rate
        return cast(TaskType, self._call("POST", "/v1/task-types", body=body, retry="rate_limited"))

    def set_task_type_override(self, key: str, baseline_minutes_override: float, reason: Optional[str] = None) -> TaskType:
        body: Dict[str, Any] = {"baseline_minutes_override": baseline_minutes_override}
        if reason is not None:
            body["reason"] = reason
        return cast(TaskType, self._call("POST", f"/v1/task-types/{_seg(key)}/override", body=body))

    def remove_task_type_override(self, key: str) -> TaskType:
        return cast(TaskType, self._call("DELETE", f"/v1/task-types/{_seg(key)}/override", retry="rate_limited"))

    def archive_task_type(self, key: str) -> TaskType:
        return cast(TaskType, self._call("DELETE", f"/v1/task-types/{_seg(key)}", retry="rate_limited"))

    # webhooks

    def create_webhook(self, url: str, event_types: List[str], description: Optional[str] = None) -> WebhookWithSecret:
        """Subscribes ``url``; the answer's ``secret`` is shown this once."""
        body: Dict[str, Any] = {"url": url, "event_types": event_types}
        if description is not None:
            body["description"] = description
        return cast(WebhookWithSecret, self._call("POST", "/v1/webhooks", body=body, retry="rate_limited"))

    def list_webhooks(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> WebhookList:
        return cast(WebhookList, self._call("GET", "/v1/webhooks", query={"limit": limit, "cursor": cursor}))

    def iter_webhooks(self, *, limit: Optional[int] = None) -> Iterator[Webhook]:
        return self._pages(lambda c: cast(Dict[str, Any], self.list_webhooks(limit=limit, cursor=c)))

    def get_webhook(self, webhook_id: str) -> Webhook:
        return cast(Webhook, self._call("GET", f"/v1/webhooks/{_seg(webhook_id)}"))

    def update_webhook(self, webhook_id: str, **changes: Any) -> Webhook:
        """``url``, ``event_types``, ``description`` or ``status="active"`` (reactivates)."""
        return cast(Webhook, self._call("PATCH", f"/v1/webhooks/{_seg(webhook_id)}", body=changes))

    def delete_webhook(self, webhook_id: str) -> None:
        self._call("DELETE", f"/v1/webhooks/{_seg(webhook_id)}", retry="rate_limited")

    def test_webhook(self, webhook_id: str) -> Dict[str, str]:
        """Queues a ``test.ping``; returns ``{"message_id": ...}``."""
        return cast(Dict[str, str], self._call("POST", f"/v1/webhooks/{_seg(webhook_id)}/test", retry="rate_limited"))

    def list_webhook_deliveries(self, webhook_id: str, *, limit: Optional[int] = None,
                                cursor: Optional[str] = None) -> DeliveryList:
        path = f"/v1/webhooks/{_seg(webhook_id)}/deliveries"
        return cast(DeliveryList, self._call("GET", path, query={"limit": limit, "cursor": cursor}))

    def iter_webhook_deliveries(self, webhook_id: str, *, limit: Optional[int] = None) -> Iterator[Delivery]:
        return self._pages(lambda c: cast(Dict[str, Any], self.list_webhook_deliveries(webhook_id, limit=limit, cursor=c)))

    # settings and the audit log

    def get_settings(self) -> Settings:
        return cast(Settings, self._call("GET", "/v1/settings"))

    def update_settings(self, **patch: Any) -> Settings:
        """Any of ``name``, ``currency``, ``default_hourly_rate``, ``category_hourly_rates``, ..."""
        return cast(Settings, self._call("PATCH", "/v1/settings", body=patch))

    def list_assumption_history(self, *, kind: Optional[str] = None, key: Optional[str] = None,
                                limit: Optional[int] = None, cursor: Optional[str] = None) -> AssumptionHistory:
        """Every version of the baselines, rates and credits, newest recorded first."""
        query = {"kind": kind, "key": key, "limit": limit, "cursor": cursor}
        return cast(AssumptionHistory, self._call("GET", "/v1/assumptions/history", query=query))

    def iter_assumption_history(self, *, kind: Optional[str] = None,
                                key: Optional[str] = None) -> Iterator[AssumptionVersion]:
        return self._pages(lambda c: cast(Dict[str, Any], self.list_assumption_history(kind=kind, key=key, cursor=c)))

    def preview_restatement(self, kind: str, value: Optional[float], effective_from: str, *,
                            key: Optional[str] = None) -> RestatementPreview:
        """Dry run of a change of one assumption from ``effective_from``; writes nothing."""
        body: Dict[str, Any] = {"kind": kind, "value": value, "effective_from": effective_from}
        if key is not None:
            body["key"] = key
        return cast(RestatementPreview, self._call("POST", "/v1/restatements/preview", body=body))

    def restate(self, kind: str, value: Optional[float], effective_from: str, reason: str, *,
                key: Optional[str] = None) -> Restatement:
        """Applies a change from a past date, with a reason."""
        body: Dict[str, Any] = {"kind": kind, "value": value, "effective_from": effective_from, "reason": reason}
        if key is not None:
            body["key"] = key
        return cast(Restatement, self._call("POST", "/v1/restatements", body=body, retry="rate_limited"))

    def get_restatement(self, restatement_id: str) -> Restatement:
        """A restatement: ``status`` is ``staging`` while its figures are applied, then ``applied``."""
        return cast(Restatement, self._call("GET", f"/v1/restatements/{_seg(restatement_id)}"))

    def list_audit_log(self, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> AuditLogPage:
        return cast(AuditLogPage, self._call("GET", "/v1/audit-log", query={"limit": limit, "cursor": cursor}))

    def iter_audit_log(self, *, limit: Optional[int] = None) -> Iterator[AuditEntry]:
        return self._pages(lambda c: cast(Dict[str, Any], self.list_audit_log(limit=limit, cursor=c)))

    # OpenTelemetry ingest: mapping rules and unresolved runs. Exports themselves
    # (POST /v1/traces) come from an OpenTelemetry exporter pointed at Tally, not from this client.

    def list_otlp_mappings(self) -> OtlpMappingRuleList:
        """The mapping rules, in the order they are tried."""
        return cast(OtlpMappingRuleList, self._call("GET", "/v1/otlp/mappings"))

    def create_otlp_mapping(self, kind: str, *, field: Optional[str] = None, attribute: Optional[str] = None,
                            value: Optional[str] = None, task_type: Optional[str] = None) -> OtlpMappingRuleCreated:
        """``kind="task_type"`` with ``field``, ``value``, ``task_type`` (and ``attribute`` for
        ``field="resource_attribute"``); or ``kind="client_id"`` with ``attribute``. The answer's
        ``resolved_runs`` counts the unresolved runs the rule tracked at once."""
        body: Dict[str, Any] = {"kind": kind}
        for name, given in (("field", field), ("attribute", attribute), ("value", value), ("task_type", task_type)):
            if given is not None:
                body[name] = given
        return cast(OtlpMappingRuleCreated, self._call("POST", "/v1/otlp/mappings", body=body, retry="rate_limited"))

    def delete_otlp_mapping(self, rule_id: str) -> None:
        self._call("DELETE", f"/v1/otlp/mappings/{_seg(rule_id)}", retry="rate_limited")

    def list_otlp_unresolved_runs(self, *, limit: Optional[int] = None,
                                  cursor: Optional[str] = None) -> OtlpUnresolvedRunList:
        query = {"limit": limit, "cursor": cursor}
        return cast(OtlpUnresolvedRunList, self._call("GET", "/v1/otlp/unresolved-runs", query=query))

    def iter_otlp_unresolved_runs(self, *, limit: Optional[int] = None) -> Iterator[OtlpUnresolvedRun]:
        return self._pages(lambda c: cast(Dict[str, Any], self.list_otlp_unresolved_runs(limit=limit, cursor=c)))

    def retry_otlp_unresolved_runs(self) -> int:
        """Tracks the unresolved runs the rules and task types resolve now; returns how many."""
        answer = cast(Dict[str, int], self._call("POST", "/v1/otlp/unresolved-runs/retry"))
        return answer["resolved_runs"]

    def dismiss_otlp_unresolved_run(self, run_id: str) -> None:
        self._call("DELETE", f"/v1/otlp/unresolved-runs/{_seg(run_id)}", retry="rate_limited")

    # single sign-on (Enterprise)

    def get_sso(self) -> SsoConnection:
        return cast(SsoConnection, self._call("GET", "/v1/sso"))

    def put_sso(self, issuer: str, client_id: str, allowed_domains: List[str], *,
                client_secret: Optional[str] = None, default_role: Optional[str] = None,
                passwords_allowed: Optional[bool] = None, enabled: Optional[bool] = None) -> SsoConnection:
        """Creates or replaces the OpenID Connect configuration. ``client_secret`` is required the
        first time and write-only; omitted later, the stored one stays."""
        body: Dict[str, Any] = {"issuer": issuer, "client_id": client_id, "allowed_domains": allowed_domains}
        for name, given in (("client_secret", client_secret), ("default_role", default_role),
                            ("passwords_allowed", passwords_allowed), ("enabled", enabled)):
            if given is not None:
                body[name] = given
        return cast(SsoConnection, self._call("PUT", "/v1/sso", body=body))

    def delete_sso(self) -> None:
        self._call("DELETE", "/v1/sso", retry="rate_limited")
