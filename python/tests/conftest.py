"""Fixtures that start the real `bridle` binary: `bridle mock-llm` (with faults) and `bridle
serve` (the gateway, its upstream a mock-llm), each on a free loopback port, stopped after the
test. The binary is $BRIDLE_BIN (scripts/test.sh sets it), else target/debug/bridle."""

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
USER_KEY = "bk_python_test_user_0123456789abcdef"
ADMIN_KEY = "bk_python_test_admin_0123456789abcdef"
#: How long a server may take to print its address (a start-up wait, not a measurement).
START_SECONDS = 60


def bridle_bin() -> str:
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    path = Path(os.environ.get("BRIDLE_BIN") or target / "debug" / "bridle")
    if not path.is_file():
        pytest.fail(f"no bridle binary at {path}: build it with `cargo build -p bridle` or set BRIDLE_BIN")
    return str(path)


class Server:
    """A `bridle` subcommand running in the background, its standard error in a file."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str] | None = None):
        self.log = log
        self.handle = log.open("wb")
        self.process = subprocess.Popen([bridle_bin(), *args], stdout=subprocess.DEVNULL,
                                        stderr=self.handle, env={**os.environ, **(env or {})})
        self.url = self._address()

    def _address(self) -> str:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            found = re.search(r"http://[0-9.]+:[0-9]+", self.log.read_text(errors="replace"))
            if found:
                return found.group(0)
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        pytest.fail(f"bridle {self.process.args[1]} did not start: {self.log.read_text()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.handle.close()


@pytest.fixture
def servers(tmp_path):
    started: list[Server] = []

    def start(args: list[str], env: dict[str, str] | None = None) -> Server:
        server = Server(args, tmp_path / f"server-{len(started)}.log", env)
        started.append(server)
        return server

    yield start
    for server in reversed(started):
        server.stop()


@pytest.fixture
def mock_llm(servers, tmp_path):
    """`mock_llm(*flags)` starts `bridle mock-llm` and returns it (`.url`); `requests(mock)`
    reads its request log."""

    def start(*flags: str) -> Server:
        return servers(["mock-llm", "--port", "0", *flags])

    return start


def requests(mock: Server) -> list[dict]:
    """The mock's request log, oldest first."""
    log = httpx.get(f"{mock.url}/_mock/requests").json()
    return log["requests"] if isinstance(log, dict) else log


def fault_of(entry: dict) -> str | None:
    """The fault a logged answer carried (its kind), or None."""
    fault = entry["answer"].get("fault")
    return fault["kind"] if fault else None


@pytest.fixture
def gateway(servers, mock_llm, tmp_path):
    """`gateway(*mock_flags)` starts a mock-llm with those flags and `bridle serve` in front of
    it (limits off; keys USER_KEY and ADMIN_KEY); returns (gateway, mock)."""

    def start(*flags: str, env: dict[str, str] | None = None) -> tuple[Server, Server]:
        mock = mock_llm(*flags)
        serve_env = {
            "OPENAI_BASE_URL": f"{mock.url}/v1",
            "OPENAI_API_KEY": "sk-test",
            "BRIDLE_USER_KEYS": f"tester:{USER_KEY}",
            "BRIDLE_ADMIN_KEY": ADMIN_KEY,
            "BRIDLE__SERVER__LIMITS__ENABLED": "false",
            "RUST_LOG": "warn",
            **(env or {}),
        }
        data = tmp_path / "data"
        server = servers(["serve", "--bind", "127.0.0.1:0", "--data-dir", str(data)], serve_env)
        return server, mock

    return start
