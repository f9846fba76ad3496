"""The Python client against a real ``tally serve``."""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import unittest
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, Tuple

from tally import Tally, TallyError, verify_webhook

from .support import DroppingProxy, Receiver, Service

TRACK: Dict[str, Any] = {"agent_id": "py-bot", "task_type": "support_ticket_reply", "outcome": "success"}
service: Service


def setUpModule() -> None:
    global service
    service = Service()


def tearDownModule() -> None:
    service.stop()


def timeless(report: Any) -> Any:
    """A report without ``meta.range``, which moves with the clock between two calls."""
    meta = {k: v for k, v in report["meta"].items() if k != "range"}
    return {**report, "meta": meta}


class FailingNetworkTest(unittest.TestCase):
    def test_a_503_is_retried_with_the_same_idempotency_key(self) -> None:
        keys: List[Any] = []

        class Flaky(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                keys.append(self.headers.get("Idempotency-Key"))
                if len(keys) == 1:
                    body = b'{"error": {"code": "service_unavailable", "message": "down", "request_id": "req_1"}}'
                    self.send_response(503)
                    self.send_header("Retry-After", "0")
                else:
                    body = b'{"event_id": "evt_1"}'
                    self.send_response(201)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Flaky)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base_url = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            event = Tally(api_key="tally_live_x", base_url=base_url, retry_base_delay=0.01).track(TRACK)  # type: ignore
            self.assertEqual(event["event_id"], "evt_1")
            self.assertEqual(len(keys), 2)
            self.assertTrue(str(keys[0]).startswith("tally-py-"))
            self.assertEqual(keys[1], keys[0])
            keys.clear()
            with self.assertRaises(TallyError) as caught:
                Tally(api_key="tally_live_x", base_url=base_url, max_retries=0).track(TRACK)  # type: ignore
            self.assertEqual((caught.exception.code, caught.exception.status), ("service_unavailable", 503))
        finally:
            server.shutdown()
            server.server_close()

    def test_a_server_that_never_answers_times_out(self) -> None:
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        try:
            tally = Tally(api_key="tally_live_x", base_url=f"http://127.0.0.1:{silent.getsockname()[1]}",
                          timeout=0.2, max_retries=1, retry_base_delay=0.01)
            with self.assertRaises(TallyError) as caught:
                tally.usage()
            self.assertEqual((caught.exception.code, caught.exception.status), ("timeout", 0))
        finally:
            silent.close()


class TrackingTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tally = Tally(api_key=service.api_key, base_url=service.base_url, retry_base_delay=0.05)

    def test_tracks_with_and_without_a_key(self) -> None:
        event = self.tally.track({**TRACK, "agent_id": "py-keys"})  # type: ignore[typeddict-item]
        self.assertTrue(event["event_id"].startswith("evt_"))
        self.assertGreater(event["hours_saved"], 0)
        first = self.tally.track({**TRACK, "agent_id": "py-keys"}, idempotency_key="py-job-1")  # type: ignore
        again = self.tally.track({**TRACK, "agent_id": "py-keys"}, idempotency_key="py-job-1")  # type: ignore
        self.assertEqual(again["event_id"], first["event_id"])
        self.assertEqual(len(self.tally.list_events(agent_id="py-keys")["data"]), 2)
        self.assertEqual(self.tally.get_event(event["event_id"]), event)

    def test_review_with_a_key_and_the_ledger(self) -> None:
        event = self.tally.track({**TRACK, "agent_id": "py-reviewed", "outcome": "needs_review",  # type: ignore
                                  "human_baseline_minutes": 60})
        first = self.tally.review(event["event_id"], {"review_minutes": 15, "verdict": "accepted"},
                                  idempotency_key="py-rev-1")
        again = self.tally.review(event["event_id"], {"review_minutes": 15, "verdict": "accepted"},
                                  idempotency_key="py-rev-1")
        self.assertEqual(again["review"]["id"], first["review"]["id"])
        self.assertEqual(first["event"]["current"]["hours_saved"], 0.75)
        self.assertEqual(first["event"]["current"]["review_hours"], 0.25)
        rejected = self.tally.review(event["event_id"], {"review_minutes": 30, "verdict": "rejected"})
        self.assertEqual(rejected["event"]["current"]["hours_saved"], -0.5)
        ledger = self.tally.event_adjustments(event["event_id"])
        self.assertEqual(ledger["original"]["hours_saved"], 0.5)
        self.assertEqual([a["hours_saved"] for a in ledger["data"]], [0.25, -1.25])
        reviews = self.tally.event_reviews(event["event_id"])
        self.assertEqual([r["verdict"] for r in reviews["data"]], ["accepted", "rejected"])
        with self.assertRaises(TallyError) as refused:
            self.tally.review(event["event_id"], {"review_minutes": -1, "verdict": "accepted"})
        self.assertEqual((refused.exception.code, refused.exception.status), ("validation_error", 422))

    def test_errors_are_typed(self) -> None:
        with self.assertRaises(TallyError) as caught:
            self.tally.track({**TRACK, "outcome": "great"})  # type: ignore
        error = caught.exception
        self.assertEqual((error.code, error.status), ("validation_error", 422))
        self.assertTrue(str(error.request_id).startswith("req_"))
        self.assertEqual(error.details[0]["path"], "/body/outcome")
        with self.assertRaises(TallyError) as missing:
            self.tally.get_event("evt_nope")
        self.assertEqual((missing.exception.code, missing.exception.status), ("not_found", 404))
        with self.assertRaises(TallyError) as wrong:
            Tally(api_key="tally_live_nope", base_url=service.base_url).get_settings()
        self.assertEqual(wrong.exception.code, "invalid_api_key")

    def test_a_retried_track_after_a_lost_answer_creates_one_event(self) -> None:
        proxy = DroppingProxy(service.base_url, drop=1)
        try:
            via_proxy = Tally(api_key=service.api_key, base_url=proxy.url, retry_base_delay=0.05)
            event = via_proxy.track({**TRACK, "agent_id": "py-lost-answer"})  # type: ignore
            self.assertEqual(proxy.dropped, 1)
            stored = self.tally.list_events(agent_id="py-lost-answer")["data"]
            self.assertEqual([e["event_id"] for e in stored], [event["event_id"]])
        finally:
            proxy.close()

    def test_429_is_waited_out_and_surfaced_without_retries(self) -> None:
        free_key = service.create_org("free")
        free = Tally(api_key=free_key, base_url=service.base_url, max_retries=8)
        results: List[Any] = []

        def one(i: int) -> None:
            results.append(free.track({**TRACK, "agent_id": f"py-rl-{i}"}))  # type: ignore

        threads = [threading.Thread(target=one, args=(i,)) for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(len({e["event_id"] for e in results}), 10)
        self.assertEqual(len(free.list_events(limit=100)["data"]), 10)
        impatient = Tally(api_key=free_key, base_url=service.base_url, max_retries=0)
        errors: List[TallyError] = []
        for _ in range(10):
            try:
                impatient.track(TRACK)  # type: ignore
            except TallyError as error:
                errors.append(error)
        self.assertTrue(errors)
        self.assertEqual((errors[0].code, errors[0].status), ("rate_limited", 429))

    def test_direct_batch_with_partial_failure(self) -> None:
        items = [{**TRACK, "agent_id": "py-direct", "idempotency_key": "py-d-1"}, {**TRACK, "task_type": "nope"}]
        first = self.tally.track_batch(items)  # type: ignore
        self.assertEqual([d["status"] for d in first["data"]], [201, 422])
        again = self.tally.track_batch(items[:1])  # type: ignore
        self.assertEqual(again["data"][0]["event"]["event_id"], first["data"][0]["event"]["event_id"])


class BatchingTest(unittest.TestCase):
    def test_background_batching_with_partial_failures(self) -> None:
        free_key = service.create_org("free")
        rejected: List[Tuple[Any, str]] = []
        with Tally(api_key=free_key, base_url=service.base_url, batch_size=4, flush_interval=0.05, max_attempts=20,
                   on_error=lambda event, error: rejected.append((event, error.code))) as tally:
            for i in range(6):
                tally.enqueue({**TRACK, "agent_id": f"py-batch-{i}"})  # type: ignore
            tally.enqueue({**TRACK, "agent_id": "py-batch-bad", "task_type": "no_such_type"})  # type: ignore
            tally.enqueue({**TRACK, "agent_id": "py-batch-bad", "occurred_at": "yesterday"})  # type: ignore
        self.assertEqual(sorted(code for _, code in rejected), ["unknown_task_type", "validation_error"])
        self.assertTrue(all(event["agent_id"] == "py-batch-bad" for event, _ in rejected))
        stored = Tally(api_key=free_key, base_url=service.base_url).list_events(limit=100)["data"]
        self.assertEqual(sorted(e["agent_id"] for e in stored), [f"py-batch-{i}" for i in range(6)])
        with self.assertRaises(TallyError) as closed:
            tally.enqueue(TRACK)  # type: ignore
        self.assertEqual(closed.exception.code, "client_closed")

    def test_a_full_buffer_says_so(self) -> None:
        tally = Tally(api_key=service.api_key, base_url=service.base_url, max_buffer_size=2, batch_size=10,
                      flush_interval=60)
        tally.enqueue(TRACK)  # type: ignore
        tally.enqueue(TRACK)  # type: ignore
        with self.assertRaises(TallyError) as full:
            tally.enqueue(TRACK)  # type: ignore
        self.assertEqual(full.exception.code, "buffer_full")
        tally.flush()
        tally.enqueue(TRACK)  # type: ignore
        tally.close()


class ReportsAndAdminTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tally = Tally(api_key=service.api_key, base_url=service.base_url)

    def test_reports_equal_the_api_json(self) -> None:
        for i in range(3):
            self.tally.track({**TRACK, "agent_id": f"py-report-{i}", "metadata": {"client_id": "py-acme"}})  # type: ignore
        pairs = [
            (self.tally.time_saved_report(period="30d", group_by="agent,task_type", sort="cost_saved"),
             "/v1/reports/time-saved?period=30d&group_by=agent,task_type&sort=cost_saved"),
            (self.tally.cost_saved_report(group_by="client"), "/v1/reports/cost-saved?group_by=client"),
            (self.tally.leaderboard(metric="events", top=2), "/v1/reports/leaderboard?metric=events&top=2"),
            (self.tally.time_saved_report(group_by="agent", metadata={"client_id": "py-acme"}),
             "/v1/reports/time-saved?group_by=agent&metadata.client_id=py-acme"),
        ]
        for got, path in pairs:
            self.assertEqual(timeless(got), timeless(service.get(path)), path)
        self.assertEqual(len(pairs[3][0]["rows"]), 3)
        self.assertEqual(self.tally.usage(), service.get("/v1/reports/usage"))
        csv = self.tally.report_csv("time-saved", group_by="agent")
        self.assertTrue(csv.startswith("agent_id,events,hours_saved"))
        self.assertEqual(b"".join(self.tally.export_report(group_by="agent")).decode(), csv)

    def test_task_types_settings_webhooks_and_audit_log(self) -> None:
        custom = self.tally.create_task_type("py_custom", "A custom task", "ops", 12)
        self.assertEqual(custom["kind"], "custom")
        overridden = self.tally.set_task_type_override("support_ticket_reply", 9, reason="measured")
        self.assertEqual(overridden["override"]["baseline_minutes_override"], 9)  # type: ignore[index]
        self.assertIsNone(self.tally.remove_task_type_override("support_ticket_reply")["override"])
        self.assertEqual(self.tally.archive_task_type("py_custom")["status"], "archived")
        keys = [t["key"] for t in self.tally.list_task_types(category="ops", include_archived=True)["data"]]
        self.assertIn("py_custom", keys)
        settings = self.tally.update_settings(category_hourly_rates={"dev": 95})
        self.assertEqual(settings["category_hourly_rates"]["dev"], 95)
        self.assertEqual(self.tally.get_settings(), settings)
        hook = self.tally.create_webhook("http://127.0.0.1:9/none", ["weekly.digest"])
        self.assertTrue(hook["secret"].startswith("whsec_"))
        self.assertEqual(self.tally.update_webhook(hook["id"], description="x")["description"], "x")
        self.assertEqual(self.tally.get_webhook(hook["id"])["id"], hook["id"])
        self.assertIn(hook["id"], [w["id"] for w in self.tally.iter_webhooks(limit=1)])
        self.tally.delete_webhook(hook["id"])
        self.assertGreaterEqual(len(list(self.tally.iter_audit_log(limit=2))), 5)
        self.assertGreater(len(list(self.tally.iter_events(limit=3))), 3)

    def test_single_sign_on_configuration(self) -> None:
        with self.assertRaises(TallyError) as missing:
            self.tally.get_sso()
        self.assertEqual(missing.exception.code, "not_found")
        put = self.tally.put_sso("https://login.example.com/tenant", "py-client", ["Example.com"],
                                 client_secret="py-client-secret", passwords_allowed=False)
        self.assertEqual(put["allowed_domains"], ["example.com"])
        self.assertTrue(put["client_secret_set"])
        self.assertNotIn("py-client-secret", repr(put))
        self.assertEqual(self.tally.get_sso(), put)
        kept = self.tally.put_sso(put["issuer"], "py-client-2", put["allowed_domains"], default_role="admin")
        self.assertEqual(kept["default_role"], "admin")
        self.tally.delete_sso()
        with self.assertRaises(TallyError):
            self.tally.get_sso()

    def test_otlp_mapping_rules_and_unresolved_runs(self) -> None:
        # The export itself is an OpenTelemetry exporter's: here a hand-made OTLP/JSON one.
        end = time.time_ns()
        span = {"traceId": "d00dfeedd00dfeedd00dfeedd00dfeed", "spanId": "00000000000000b2", "name": "invoke_agent",
                "startTimeUnixNano": str(end - 5_000_000_000), "endTimeUnixNano": str(end),
                "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                               {"key": "gen_ai.agent.name", "value": {"stringValue": "py-otel-bot"}}]}
        body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
        request = urllib.request.Request(service.base_url + "/v1/traces", data=body, method="POST", headers={
            "authorization": f"Bearer {service.api_key}", "content-type": "application/json"})
        with urllib.request.urlopen(request) as answer:
            self.assertEqual(answer.status, 200)
        runs = self.tally.list_otlp_unresolved_runs()["data"]
        self.assertEqual([r["agent_id"] for r in runs], ["py-otel-bot"])
        rule = self.tally.create_otlp_mapping("task_type", field="agent_name", value="py-otel-bot",
                                              task_type="dev_code_review")
        self.assertEqual(rule["resolved_runs"], 1)
        self.assertIn(rule["id"], [r["id"] for r in self.tally.list_otlp_mappings()["data"]])
        self.assertEqual(list(self.tally.iter_otlp_unresolved_runs(limit=1)), [])
        self.assertEqual(self.tally.retry_otlp_unresolved_runs(), 0)
        self.tally.delete_otlp_mapping(rule["id"])
        self.assertNotIn(rule["id"], [r["id"] for r in self.tally.list_otlp_mappings()["data"]])
        with self.assertRaises(TallyError) as refused:
            self.tally.create_otlp_mapping("task_type", field="agent_name", value="x", task_type="no_such_type")
        self.assertEqual(refused.exception.code, "unknown_task_type")
        with self.assertRaises(TallyError) as missing:
            self.tally.dismiss_otlp_unresolved_run("run_01JDXXXXXXXXXXXXXXXXXXXXXX")
        self.assertEqual(missing.exception.status, 404)


class BudgetsAndPaybackTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tally = Tally(api_key=service.api_key, base_url=service.base_url)

    def test_forecast_and_payback_equal_the_api_json(self) -> None:
        self.tally.track({**TRACK, "agent_id": "py-forecast", "agent_cost": 0.25})  # type: ignore
        got = self.tally.forecast(agent_id="py-forecast")
        raw = service.get("/v1/reports/forecast?agent_id=py-forecast")
        # The rest of today moves with the clock between the two calls; the rest does not.
        for key in ("month", "filters", "month_to_date", "basis_days"):
            self.assertEqual(got[key], raw[key], key)  # type: ignore[literal-required]
        self.assertEqual(got["method"]["name"], raw["method"]["name"])
        self.assertEqual(got["month_to_date"]["agent_cost"], 0.25)
        cost = self.tally.create_fixed_cost("Py licence", "monthly", 100, start_month="2026-01")
        self.assertEqual(self.tally.update_fixed_cost(cost["id"], end_month="2026-02")["end_month"], "2026-02")
        self.assertIn(cost["id"], [c["id"] for c in self.tally.iter_fixed_costs(limit=1)])
        payback = self.tally.payback(period="all")
        self.assertEqual(payback["months"], service.get("/v1/reports/payback?period=all")["months"])
        self.assertGreaterEqual(payback["period"]["fixed_costs"], 200)
        self.tally.delete_fixed_cost(cost["id"])

    def test_invitations_and_members(self) -> None:
        invitation = self.tally.create_invitation("Py.Person@example.com", "analyst")
        self.assertEqual(invitation["email"], "py.person@example.com")
        self.assertEqual(invitation["status"], "pending")
        self.assertEqual(self.tally.get_invitation(invitation["id"])["sent_count"], 1)
        self.assertEqual(self.tally.resend_invitation(invitation["id"])["sent_count"], 2)
        pending = [i["id"] for i in self.tally.iter_invitations(status="pending", limit=1)]
        self.assertIn(invitation["id"], pending)
        self.assertEqual(self.tally.revoke_invitation(invitation["id"])["status"], "revoked")
        with self.assertRaises(TallyError) as owner:
            self.tally.create_invitation("x@example.com", "owner")
        self.assertEqual((owner.exception.code, owner.exception.status), ("insufficient_role", 403))

        # People of the organisation, written the way an accepted invitation leaves them.
        owner_id, analyst_id = "acct_01KAQ" + "Z" * 20 + "1", "acct_01KAQ" + "Z" * 20 + "2"
        key_id = service.api_key.split("_")[2]
        now = int(time.time() * 1000)
        with sqlite3.connect(service.env["TALLY_DATABASE_URL"][len("sqlite:"):]) as db:
            (org_id,) = db.execute("select org_id from api_keys where id = ?", (key_id,)).fetchone()
            for account_id, email, role in ((owner_id, "py.owner@example.com", "owner"),
                                            (analyst_id, "py.analyst@example.com", "analyst")):
                db.execute("insert into accounts (id, email, created_at, updated_at) values (?, ?, ?, ?)",
                           (account_id, email, now, now))
                db.execute("insert into memberships values (?, ?, ?, ?, ?)", (org_id, account_id, role, now, now))
        members = {m["email"]: m for m in self.tally.iter_members(limit=1)}
        self.assertEqual(members["py.analyst@example.com"]["role"], "analyst")
        self.assertEqual(self.tally.get_member(analyst_id)["email"], "py.analyst@example.com")
        self.assertEqual(self.tally.set_member_role(analyst_id, "admin")["role"], "admin")
        with self.assertRaises(TallyError) as member:
            self.tally.create_invitation("py.analyst@example.com", "analyst")
        self.assertEqual((member.exception.code, member.exception.status), ("already_member", 409))
        self.tally.remove_member(analyst_id)
        with self.assertRaises(TallyError) as gone:
            self.tally.get_member(analyst_id)
        self.assertEqual(gone.exception.status, 404)
        self.assertEqual([m["email"] for m in self.tally.list_members()["data"]], ["py.owner@example.com"])

    def test_budgets_and_report_schedules(self) -> None:
        budget = self.tally.create_budget("Py bot", "agent", 1, scope_value="py-bot", thresholds=[90, 50])
        self.assertEqual(budget["thresholds"], [50, 90])
        self.assertEqual(budget["status"]["state"], "on_track")
        self.assertEqual(self.tally.get_budget(budget["id"])["name"], "Py bot")
        self.assertIn(budget["id"], [b["id"] for b in self.tally.iter_budgets(limit=1)])
        self.assertEqual(self.tally.update_budget(budget["id"], amount=2)["amount"], 2)
        self.tally.delete_budget(budget["id"])
        with self.assertRaises(TallyError) as missing:
            self.tally.get_budget(budget["id"])
        self.assertEqual((missing.exception.code, missing.exception.status), ("not_found", 404))
        with self.assertRaises(TallyError) as refused:
            self.tally.create_budget("x", "org", 1, scope_value="nope")
        self.assertEqual(refused.exception.details[0]["path"], "/body/scope_value")
        schedule = self.tally.create_report_schedule("monthly", ["py@acme.test"])
        self.assertEqual(schedule["recipients"], [{"email": "py@acme.test", "unsubscribed_at": None}])
        self.assertEqual(self.tally.update_report_schedule(schedule["id"], frequency="weekly")["frequency"], "weekly")
        self.assertEqual(self.tally.send_report_schedule(schedule["id"])["queued"], ["py@acme.test"])
        self.assertEqual(self.tally.send_report_schedule(schedule["id"])["queued"], [])
        self.assertEqual(self.tally.get_report_schedule(schedule["id"])["id"], schedule["id"])
        self.tally.delete_report_schedule(schedule["id"])
        self.assertEqual(self.tally.list_report_schedules()["data"], [])

    def test_assumption_history_and_restatements(self) -> None:
        week_ago = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 7 * 86400))
        preview = self.tally.preview_restatement("category_hourly_rate", 61, week_ago, key="research")
        self.assertTrue(preview["restatement"])
        restated = self.tally.restate("category_hourly_rate", 61, week_ago, "new rate card", key="research")
        self.assertTrue(restated["id"].startswith("rst_"))
        self.assertEqual(restated["version"]["value"], 61)
        self.assertEqual(restated["status"], "applied")
        self.assertEqual(self.tally.get_restatement(restated["id"]), restated)
        history = self.tally.list_assumption_history(kind="category_hourly_rate", key="research")
        self.assertEqual(history["data"][0]["id"], restated["version"]["id"])
        self.assertIn(restated["version"]["id"], [v["id"] for v in self.tally.iter_assumption_history()])
        with self.assertRaises(TallyError) as refused:
            self.tally.restate("category_hourly_rate", 61, "2999-01-01", "future", key="research")
        self.assertEqual(refused.exception.details[0]["path"], "/body/effective_from")


class PeriodsTest(unittest.TestCase):
    def test_closes_and_reads_a_month_and_an_admin_key_may_not_reopen_it(self) -> None:
        tally = Tally(api_key=service.api_key, base_url=service.base_url)
        closed = tally.close_period("2024-02", "Py books")
        self.assertEqual((closed["month"], closed["reason"], closed["totals"]["events"]), ("2024-02", "Py books", 0))
        with self.assertRaises(TallyError) as again:
            tally.close_period("2024-02", "again")
        self.assertEqual((again.exception.code, again.exception.status), ("validation_error", 422))
        self.assertIn(("2024-02", "closed"), [(p["month"], p["status"]) for p in tally.list_periods()])
        self.assertEqual(tally.get_period("2024-02"), service.get("/v1/periods/2024-02"))
        self.assertEqual(tally.period_changes("2024-02")["entries"], [])
        header = tally.period_statement_csv("2024-02").split("\r\n")[0]
        self.assertEqual(header, "dimension,key,events,hours_saved,cost_saved,agent_cost,net_saved,review_hours,review_cost")
        # Reopening needs the owner role: an admin key is refused (an owner reopens in the dashboard).
        with self.assertRaises(TallyError) as refused:
            tally.reopen_period("2024-02", "Py fix")
        self.assertEqual((refused.exception.code, refused.exception.status), ("insufficient_role", 403))
        self.assertEqual(len(tally.period_statements("2024-02")), 1)
        self.assertIsNone(tally.get_period("2024-02")["reopened_at"])


class WebhookTest(unittest.TestCase):
    def test_verifies_a_real_delivery_and_rejects_tampered_and_stale_ones(self) -> None:
        tally = Tally(api_key=service.api_key, base_url=service.base_url)
        receiver = Receiver()
        try:
            hook = tally.create_webhook(receiver.url, ["event.created"])
            event = tally.track({**TRACK, "agent_id": "py-webhook"})  # type: ignore
            headers, body = receiver.wait_for(lambda b: event["event_id"].encode() in b)
            envelope = verify_webhook(body, headers, hook["secret"])
            self.assertEqual(envelope["type"], "event.created")
            self.assertEqual(envelope["data"]["event_id"], event["event_id"])  # type: ignore[typeddict-item]
            standard_only = {k: v for k, v in headers.items() if k.lower() != "x-tally-signature"}
            self.assertEqual(verify_webhook(body, standard_only, hook["secret"])["id"], envelope["id"])

            tampered = body.replace(b'"py-webhook"', b'"py-webhoox"')
            for h in (headers, standard_only):
                with self.assertRaises(TallyError) as bad:
                    verify_webhook(tampered, h, hook["secret"])
                self.assertEqual(bad.exception.code, "invalid_signature")
                with self.assertRaises(TallyError) as stale:
                    verify_webhook(body, h, hook["secret"], now=time.time() + 6 * 60)
                self.assertEqual(stale.exception.code, "stale_signature")
            with self.assertRaises(TallyError):
                verify_webhook(body, headers, "whsec_d3Jvbmc=")

            tally.test_webhook(hook["id"])
            ping_headers, ping = receiver.wait_for(lambda b: b'"test.ping"' in b)
            self.assertEqual(verify_webhook(ping, ping_headers, hook["secret"])["type"], "test.ping")
            self.assertGreaterEqual(len(tally.list_webhook_deliveries(hook["id"])["data"]), 2)
        finally:
            receiver.close()


README = Path(__file__).resolve().parents[1] / "README.md"


def code_blocks(markdown: str, language: str) -> List[str]:
    return [m.group(2) for m in re.finditer(r"^```(\w+)\n(.*?)^```$", markdown, re.S | re.M) if m.group(1) == language]


class ReadmeTest(unittest.TestCase):
    def test_every_example_of_the_readme_runs(self) -> None:
        blocks = code_blocks(README.read_text(encoding="utf-8"), "python")
        self.assertGreaterEqual(len(blocks), 5)
        env = {**os.environ, "TALLY_URL": service.base_url, "TALLY_API_KEY": service.api_key,
               "PYTHONPATH": str(README.parent)}
        for i, block in enumerate(blocks):
            result = subprocess.run([sys.executable, "-c", block], env=env, capture_output=True, text=True,
                                    timeout=120)
            self.assertEqual(result.returncode, 0, f"example {i}:\n{block}\n{result.stdout}{result.stderr}")


if __name__ == "__main__":
    unittest.main()
