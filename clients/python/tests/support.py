"""A real ``tally serve`` (SQLite, fresh database), a dropping proxy and a webhook receiver."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[3]
NODE = os.environ.get("TALLY_NODE") or shutil.which("node") or "node"
CLI = [NODE, "--import", "tsx", "src/cli/main.ts"]

# The plan table with a low Free track rate, so 429s are easy to provoke.
LOW_RATE_PLANS = {
    "free": {"track_rate_per_second": 2, "other_rate_per_second": 20, "included_events_per_month": 10000,
             "hard_cap": True, "overage_tiers": []},
    "pro": {"track_rate_per_second": 200, "other_rate_per_second": 50, "included_events_per_month": 100000,
            "hard_cap": False, "overage_tiers": [{"up_to": None, "unit_price_eur": 0.0005}]},
    "enterprise": {"track_rate_per_second": 1000, "other_rate_per_second": 100,
                   "included_events_per_month": 1000000, "hard_cap": False,
                   "overage_tiers": [{"up_to": None, "unit_price_eur": 0.0001}]},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Service:
    """``tally serve`` in a child process; ``api_key`` is the default (Enterprise) organisation's."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="tally-py-")
        plans = os.path.join(self.dir, "plans.json")
        with open(plans, "w") as f:
            json.dump(LOW_RATE_PLANS, f)
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TALLY_")}
        env.update({
            "TALLY_LOG_LEVEL": "silent",
            "TALLY_DATABASE_URL": f"sqlite:{os.path.join(self.dir, 'tally.db')}",
            "TALLY_PORT": str(port),
            "TALLY_PLANS_FILE": plans,
            "TALLY_WEBHOOK_ALLOW_PRIVATE_NETWORKS": "true",
            "TALLY_WEBHOOK_RETRY_DELAYS": "0,1,1",
        })
        self.env = env
        self.process = subprocess.Popen(CLI + ["serve"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.api_key = ""
        deadline = time.time() + 60
        while not self.api_key:
            line = self.process.stdout.readline()
            if not line and self.process.poll() is not None:
                raise RuntimeError(f"tally serve exited: {self.process.stderr.read() if self.process.stderr else ''}")
            match = re.search(r"tally_live_[A-Za-z0-9_]+", line)
            if match:
                self.api_key = match.group(0)
            if time.time() > deadline:
                raise RuntimeError("tally serve printed no key")
        while True:
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError("tally serve did not become healthy")
            time.sleep(0.1)

    def create_org(self, plan: str) -> str:
        out = subprocess.run(CLI + ["orgs", "create", "--name", f"py-{plan}", "--plan", plan, "--json"], cwd=ROOT,
                             env=self.env, capture_output=True, text=True, timeout=60, check=True)
        return str(json.loads(out.stdout)["api_key"])

    def get(self, path: str, api_key: Optional[str] = None) -> object:
        request = urllib.request.Request(self.base_url + path,
                                         headers={"Authorization": f"Bearer {api_key or self.api_key}"})
        with urllib.request.urlopen(request) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        for stream in (self.process.stdout, self.process.stderr):
            if stream:
                stream.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class DroppingProxy:
    """Relays to the service, but for the first ``drop`` connections closes the client's socket
    as soon as the answer starts: the service did the work, the client never heard."""

    def __init__(self, target: str, drop: int = 1) -> None:
        host, port = target.replace("http://", "").split(":")
        self.target = (host, int(port))
        self.to_drop = drop
        self.dropped = 0
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            with self.lock:
                dropping = self.to_drop > 0
                if dropping:
                    self.to_drop -= 1
            threading.Thread(target=self._serve, args=(client, dropping), daemon=True).start()

    def _serve(self, client: socket.socket, dropping: bool) -> None:
        upstream = socket.create_connection(self.target)

        def forward() -> None:
            try:
                while True:
                    data = client.recv(65536)
                    if not data:
                        break
                    upstream.sendall(data)
            except OSError:
                pass

        threading.Thread(target=forward, daemon=True).start()
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                if dropping:
                    with self.lock:
                        self.dropped += 1
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self) -> None:
        self.server.close()


class Receiver:
    """A local webhook receiver keeping every delivery as received (raw body and headers)."""

    def __init__(self) -> None:
        self.received: List[Tuple[Dict[str, str], bytes]] = []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                received.append(({k: v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: object) -> None:  # silence
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, predicate: Callable[[bytes], bool], timeout: float = 45) -> Tuple[Dict[str, str], bytes]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for headers, body in list(self.received):
                if predicate(body):
                    return headers, body
            time.sleep(0.1)
        raise AssertionError("no matching delivery arrived")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
