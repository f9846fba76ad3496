"""Shapes of the API's requests and answers (mirroring the service's /openapi.json components)."""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

Outcome = Literal["success", "failure", "needs_review"]
Category = Literal["support", "ops", "sales", "legal", "content", "research", "data", "dev"]


class _TrackRequired(TypedDict):
    agent_id: str
    task_type: str
    outcome: Outcome


class TrackRequest(_TrackRequired, total=False):
    """Body of ``POST /v1/track``."""

    agent_duration_seconds: float
    agent_cost: float
    model: str
    tokens_in: int
    tokens_out: int
    human_baseline_minutes: float
    metadata: Dict[str, Any]
    audit_sample: Dict[str, Any]
    occurred_at: str


class TrackBatchItem(TrackRequest, total=False):
    idempotency_key: str


class Event(TypedDict):
    """A stored event, as track, list and get answer it."""

    event_id: str
    agent_id: str
    task_type: str
    outcome: Outcome
    resolved_baseline_minutes: float
    resolved_baseline_source: Literal["request", "override", "custom", "builtin", "fallback"]
    resolved_hourly_rate: float
    currency: str
    agent_duration_seconds: Optional[float]
    hours_saved: float
    cost_saved: float
    agent_cost: Optional[float]
    resolved_cost_source: Literal["provided", "computed", "none"]
    net_saved: float
    occurred_at: str
    model: Optional[str]
    tokens_in: Optional[int]
    tokens_out: Optional[int]
    metadata: Optional[Dict[str, Any]]
    received_at: str


class ErrorObject(TypedDict, total=False):
    code: str
    message: str
    details: List[Dict[str, str]]
    request_id: str


class TrackBatchResult(TypedDict, total=False):
    status: int
    event: Event
    replayed: bool
    error: ErrorObject


class TrackBatchResponse(TypedDict):
    data: List[TrackBatchResult]


class EventList(TypedDict):
    data: List[Event]
    next_cursor: Optional[str]


ReportMeta = TypedDict(
    "ReportMeta",
    {
        "period": str,
        "range": Dict[str, str],
        "group_by": List[str],
        "sort": str,
        "total_groups": int,
    },
)


class ReportRow(TypedDict):
    group: Dict[str, Optional[str]]
    events: int
    hours_saved: float
    cost_saved: float
    agent_cost: float
    net_saved: float
    review_hours: float
    review_cost: float


class LeaderboardRow(ReportRow):
    rank: int


class PeriodFigures(TypedDict):
    events: int
    hours_saved: float
    cost_saved: float
    agent_cost: float
    net_saved: float
    review_hours: float
    review_cost: float


class ClosedPeriodNote(TypedDict):
    """A closed month a report's window meets (docs/periods.md)."""
    month: str
    closed_at: str
    statement_id: str
    statement: PeriodFigures
    live: PeriodFigures
    difference: PeriodFigures


class _Report(TypedDict):
    meta: ReportMeta
    currency: str
    rows: List[ReportRow]


class Report(_Report, total=False):
    closed_periods: List[ClosedPeriodNote]


class _Leaderboard(TypedDict):
    meta: ReportMeta
    currency: str
    rows: List[LeaderboardRow]


class Leaderboard(_Leaderboard, total=False):
    closed_periods: List[ClosedPeriodNote]


class PeriodStatement(TypedDict):
    """A month's figures frozen when it was closed: totals overall and by agent, task type and client."""
    id: str
    month: str
    currency: str
    range: Dict[str, str]
    closed_at: str
    closed_by: Optional[str]
    reason: str
    reopened_at: Optional[str]
    reopened_by: Optional[str]
    reopen_reason: Optional[str]
    totals: PeriodFigures
    by_agent: List[Dict[str, Any]]
    by_task_type: List[Dict[str, Any]]
    by_client: List[Dict[str, Any]]
    assumptions: Dict[str, Any]


class Period(PeriodStatement):
    status: Literal["open", "closed"]


class PeriodChanges(TypedDict):
    """What changed a closed month since its statement: statement + entries_total = live totals."""
    month: str
    status: Literal["open", "closed"]
    statement_id: str
    closed_at: str
    currency: str
    statement: PeriodFigures
    live: Dict[str, Any]
    difference: Dict[str, Any]
    entries: List[Dict[str, Any]]
    entries_total: PeriodFigures
    entries_truncated: bool
    unexplained: PeriodFigures


class Usage(TypedDict):
    plan: str
    currency: str
    month: str
    events_this_month: int
    events_included_in_plan: int
    overage_events: int
    lifetime_events: int
    projected_overage_eur: Optional[float]


class TaskTypeOverride(TypedDict):
    baseline_minutes_override: float
    original_baseline_minutes: float
    reason: Optional[str]
    updated_at: str


class TaskType(TypedDict):
    key: str
    display_name: str
    category: Category
    kind: Literal["builtin", "custom"]
    status: Literal["active", "archived"]
    default_baseline_minutes: float
    effective_baseline_minutes: float
    baseline_source: Optional[str]
    hourly_rate: Optional[float]
    override: Optional[TaskTypeOverride]
    created_at: Optional[str]


class TaskTypeList(TypedDict):
    data: List[TaskType]


class Settings(TypedDict):
    organization_id: str
    plan: str
    name: str
    currency: str
    default_hourly_rate: float
    category_hourly_rates: Dict[str, float]
    outcome_credit: Dict[str, float]
    fallback_baseline_minutes: Optional[float]
    usd_exchange_rate: Optional[float]
    admin_emails: List[str]


class Webhook(TypedDict):
    id: str
    url: str
    event_types: List[str]
    description: Optional[str]
    status: Literal["active", "failing", "deactivated"]
    consecutive_failures: int
    created_at: str


class WebhookWithSecret(Webhook):
    secret: str


class WebhookList(TypedDict):
    data: List[Webhook]
    next_cursor: Optional[str]


class DeliveryAttempt(TypedDict):
    attempt: int
    succeeded: bool
    status_code: Optional[int]
    response_body: Optional[str]
    error: Optional[str]
    signature: Optional[str]
    duration_ms: int
    started_at: Optional[str]
    finished_at: Optional[str]


class Delivery(TypedDict):
    id: str
    message_id: str
    event_type: str
    status: Literal["pending", "succeeded", "failed", "canceled"]
    attempt_count: int
    next_attempt_at: Optional[str]
    created_at: Optional[str]
    updated_at: Optional[str]
    attempts: List[DeliveryAttempt]


class DeliveryList(TypedDict):
    data: List[Delivery]
    next_cursor: Optional[str]


class AuditEntry(TypedDict):
    id: str
    at: str
    actor_key_id: Optional[str]
    actor_account_id: Optional[str]
    actor_email: Optional[str]
    action: str
    target: str
    before: Any
    after: Any
    reason: Optional[str]


class AuditLogPage(TypedDict):
    data: List[AuditEntry]
    next_cursor: Optional[str]


class OtlpMappingRule(TypedDict):
    """A rule from span or resource attributes to a task type (``kind="task_type"``) or a client."""

    id: str
    kind: Literal["task_type", "client_id"]
    field: Literal["agent_name", "workflow_name", "span_name", "resource_attribute"]
    attribute: Optional[str]
    value: Optional[str]
    task_type: Optional[str]
    created_at: str


class OtlpMappingRuleCreated(OtlpMappingRule):
    resolved_runs: int


class OtlpMappingRuleList(TypedDict):
    data: List[OtlpMappingRule]


class OtlpUnresolvedRun(TypedDict):
    id: str
    trace_id: str
    span_id: str
    agent_id: str
    agent_name: Optional[str]
    workflow_name: Optional[str]
    span_name: str
    service_name: Optional[str]
    task_type: Optional[str]
    reason: str
    occurred_at: str
    received_at: str


class OtlpUnresolvedRunList(TypedDict):
    data: List[OtlpUnresolvedRun]


class Figures(TypedDict):
    events: float
    hours_saved: float
    cost_saved: float
    agent_cost: float
    net_saved: float


class DayFigures(Figures):
    day: str


class ForecastMethod(TypedDict):
    name: Literal["weekday_profile", "run_rate", "none"]
    description: str
    band: str
    basis: Dict[str, Any]


class Forecast(TypedDict):
    """``GET /v1/reports/forecast``: this month projected to its end (docs/budgets-and-forecasts.md)."""

    currency: str
    month: str
    as_of: str
    range: Dict[str, str]
    days_left: float
    filters: Dict[str, Any]
    method: ForecastMethod
    month_to_date: Figures
    forecast: Figures
    low: Figures
    high: Figures
    basis_days: List[DayFigures]
    rest_of_month: List[DayFigures]


class BudgetStatus(TypedDict):
    month: str
    state: Literal["on_track", "at_risk", "exhausted"]
    spend: float
    percent_used: float
    thresholds_crossed: List[int]
    forecast: float
    forecast_low: float
    forecast_high: float
    run_out_date: Optional[str]
    method: Dict[str, str]


class Budget(TypedDict):
    id: str
    name: str
    scope: Literal["org", "agent", "client", "task_type"]
    scope_value: Optional[str]
    amount: float
    currency: str
    thresholds: List[int]
    created_at: str
    updated_at: str
    status: BudgetStatus


class BudgetList(TypedDict):
    data: List[Budget]
    next_cursor: Optional[str]


class FixedCost(TypedDict):
    id: str
    name: str
    kind: Literal["monthly", "one_off"]
    amount: float
    currency: str
    start_month: Optional[str]
    end_month: Optional[str]
    date: Optional[str]
    created_at: str
    updated_at: str


class FixedCostList(TypedDict):
    data: List[FixedCost]
    next_cursor: Optional[str]


class Payback(TypedDict):
    """``GET /v1/reports/payback``: ROI net of fixed costs, months, payback month, FTE freed."""

    currency: str
    as_of: str
    fte_hours_per_month: float
    period: Dict[str, Any]
    months: List[Dict[str, Any]]
    payback: Dict[str, Any]
    this_month: Dict[str, Any]


class ReportSchedule(TypedDict):
    id: str
    frequency: Literal["weekly", "monthly"]
    recipients: List[Dict[str, Optional[str]]]
    next_send_at: str
    created_at: str
    updated_at: str


class ReportScheduleList(TypedDict):
    data: List[ReportSchedule]
    next_cursor: Optional[str]


Role = Literal["owner", "admin", "analyst"]


class Invitation(TypedDict):
    id: str
    email: str
    role: Role
    status: Literal["pending", "accepted", "revoked", "expired"]
    invited_by_account_id: Optional[str]
    invited_by_key_id: Optional[str]
    sent_count: int
    last_sent_at: Optional[str]
    created_at: str
    expires_at: str
    accepted_at: Optional[str]
    accepted_account_id: Optional[str]
    revoked_at: Optional[str]


class InvitationList(TypedDict):
    data: List[Invitation]
    next_cursor: Optional[str]


class Member(TypedDict):
    account_id: str
    email: str
    name: Optional[str]
    role: Role
    since: str
    last_seen_at: Optional[str]


class MemberList(TypedDict):
    data: List[Member]
    next_cursor: Optional[str]


class AssumptionVersion(TypedDict):
    """One value of an assumption; ``effective_from`` None = from the beginning."""

    id: str
    kind: str
    key: Optional[str]
    value: Optional[float]
    effective_from: Optional[str]
    recorded_at: str
    actor_key_id: Optional[str]
    reason: Optional[str]
    restatement_id: Optional[str]
    status: Literal["superseded", "in_force", "scheduled"]


class AssumptionHistory(TypedDict):
    data: List[AssumptionVersion]
    next_cursor: Optional[str]


class RestatementPreview(TypedDict):
    """The dry run of a change: the events it moves and each month before and after."""

    restatement: bool
    affected_events: int
    delta: Dict[str, float]
    events: List[Dict[str, Any]]
    months: List[Dict[str, Any]]


class Restatement(TypedDict):
    id: str
    reason: str
    status: Literal["staging", "applied", "abandoned"]
    events_seen: int
    events_adjusted: int
    created_at: str
    applied_at: Optional[str]
    version: AssumptionVersion


class WebhookEnvelope(TypedDict):
    """The body of every delivery: ``data`` is an Event for ``event.created``."""

    id: str
    type: Literal["event.created", "agent.first_event", "weekly.digest", "test.ping",
                  "budget.threshold_crossed", "budget.forecast_exceeded", "usage.threshold_crossed",
                  "figures.restated", "event.reviewed"]
    created_at: str
    data: Union[Event, Dict[str, Any]]


class SsoConnection(TypedDict):
    """``GET /v1/sso``: the single sign-on configuration; the client secret is never returned."""

    organization_id: str
    issuer: str
    client_id: str
    client_secret_set: bool
    allowed_domains: List[str]
    default_role: Literal["admin", "analyst"]
    passwords_allowed: bool
    enabled: bool
    redirect_uri: str
    start_url: str
    created_at: str
    updated_at: str


ReviewVerdict = Literal["accepted", "corrected", "rejected"]


class _ReviewRequired(TypedDict):
    review_minutes: float
    verdict: ReviewVerdict


class ReviewRequest(_ReviewRequired, total=False):
    """Body of ``POST /v1/events/{event_id}/review``."""

    reviewer: Optional[str]
    note: Optional[str]


class EventFigures(TypedDict):
    hours_saved: float
    cost_saved: float
    agent_cost: float
    net_saved: float
    review_hours: float
    review_cost: float


class Review(TypedDict):
    id: str
    event_id: str
    review_minutes: float
    verdict: ReviewVerdict
    reviewer: Optional[str]
    note: Optional[str]
    hours_saved: float
    cost_saved: float
    review_hours: float
    review_cost: float
    created_at: str


class ReviewedEvent(Event):
    current: EventFigures
    review: Optional[Review]


class ReviewResult(TypedDict):
    review: Review
    event: ReviewedEvent


class Adjustment(EventFigures):
    id: str
    event_id: str
    cause: Literal["review", "restatement"]
    cause_id: str
    baseline_minutes: Optional[float]
    hourly_rate: Optional[float]
    created_at: str


class EventAdjustments(TypedDict):
    event_id: str
    original: EventFigures
    current: EventFigures
    review: Optional[Review]
    data: List[Adjustment]


class EventReviews(TypedDict):
    event_id: str
    data: List[Review]
