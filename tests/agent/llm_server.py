"""A scripted LLM server for the tests: an OpenAI-compatible ``/v1/chat/completions`` endpoint and a small fake of
Anthropic's ``/v1/messages``, on 127.0.0.1 with a port the OS picks (stdlib ``http.server``, no streaming).

The server replays a script: each request takes the next `Reply` (a correct response, a malformed body, a slow
response, an HTTP error status) and is recorded (`Recorded`: path, headers, JSON body), so a test can assert what
the client sent — e.g. that a counterexample's text reached the prompt, or that the API key went only into the
authorization header. When the script runs out, the server answers 500 ``script exhausted`` (and records it), so
an unexpected extra request fails the test instead of hanging it.

    with ScriptedLLMServer([status(429), ok("hello")]) as server:
        provider = OpenAICompatibleProvider(..., base_url=server.openai_base_url)
        ...
        assert server.requests[1].body["messages"][0]["content"] == "..."

Two options play a prompt-injected model: `responder` answers every request once the script is spent (a function of
the `Recorded` request, e.g. one that picks an action from the prompt), and `echo_pattern` makes the server replace
``{ECHO}`` in a reply's text (and error message) with every match of the pattern in the request it answers — its
body and its headers, the authorization header included — as a model (or a proxy) that repeats a key it saw would.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `text` builds a well-formed response in the endpoint's format (OpenAI chat completion
    or Anthropic message); `raw` sends these bytes as the body instead; `payload` sends this JSON instead;
    `status` other than 200 sends an error object (with `error_message`); `delay_s` waits before answering."""

    text: str | None = None
    status: int = 200
    raw: bytes | None = None
    payload: Any = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    input_tokens: int = 11
    output_tokens: int = 7
    model: str | None = None
    error_message: str = "scripted error"


def ok(text: str, *, input_tokens: int = 11, output_tokens: int = 7, model: str | None = None) -> Reply:
    """A correct response whose message text is `text`."""
    return Reply(text=text, input_tokens=input_tokens, output_tokens=output_tokens, model=model)


def not_json() -> Reply:
    """A 200 whose body is not JSON."""
    return Reply(raw=b"<html>upstream proxy error</html>", headers={"Content-Type": "application/json"})


def missing_choices() -> Reply:
    """A 200 with a JSON object that has no ``choices`` (OpenAI) / no ``content`` (Anthropic)."""
    return Reply(payload={"id": "x", "object": "chat.completion", "model": "m", "usage": {}})


def slow(seconds: float, text: str = "late") -> Reply:
    """A correct response sent only after `seconds` (longer than the client's timeout)."""
    return Reply(text=text, delay_s=seconds)


def status(code: int, message: str = "scripted error", *, retry_after: float | None = None) -> Reply:
    """An HTTP error `code` with an error object; `retry_after` sets the Retry-After header."""
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return Reply(status=code, error_message=message, headers=headers)


@dataclass
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    def prompt_text(self) -> str:
        """Every message's content (and Anthropic's system prompt), joined: what the model was shown."""
        if not isinstance(self.body, dict):
            return ""
        parts = []
        system = self.body.get("system")
        if isinstance(system, str):
            parts.append(system)
        for m in self.body.get("messages", []):
            content = m.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(str(block.get("text", "")) for block in content if isinstance(block, dict))
        return "\n".join(parts)


class ScriptedLLMServer:
    """The server (see the module docstring). A context manager; `stop()` wakes slow handlers at once."""

    def __init__(
        self,
        script: list[Reply] | None = None,
        *,
        responder: Callable[[Recorded], Reply] | None = None,
        echo_pattern: str | None = None,
    ) -> None:
        self.script: list[Reply] = list(script or [])
        self.responder = responder
        self.echo_pattern = re.compile(echo_pattern) if echo_pattern else None
        #: what `{ECHO}` became in each reply that had it (what the "model" repeated)
        self.echoed: list[str] = []
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = server._next(Recorded("POST", self.path, headers, body))
                seen = raw.decode("utf-8", "replace") + "\n" + "\n".join(headers.values())
                reply = server._echo(reply, seen)
                if reply.delay_s and server._stopping.wait(reply.delay_s):
                    return
                self._answer(reply, body)

            def _answer(self, reply: Reply, body: Any) -> None:
                anthropic = self.path.rstrip("/").endswith("/messages")
                if self.path.rstrip("/").split("/")[-1] not in ("completions", "messages"):
                    reply = Reply(status=404, error_message=f"no such endpoint {self.path}")
                elif isinstance(body, dict) and body.get("stream"):
                    reply = Reply(status=400, error_message="this test server does not stream (stream must be false)")
                if reply.raw is not None:
                    data = reply.raw
                elif reply.payload is not None:
                    data = json.dumps(reply.payload).encode()
                elif reply.status != 200:
                    kind = {401: "authentication_error", 429: "rate_limit_error"}.get(reply.status, "api_error")
                    error = {"message": reply.error_message, "type": kind}
                    data = json.dumps({"type": "error", "error": error} if anthropic else {"error": error}).encode()
                else:
                    model = reply.model or (body.get("model") if isinstance(body, dict) else None) or "scripted"
                    data = json.dumps(_anthropic_message(reply, model) if anthropic else _chat(reply, model)).encode()
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "application/json", **reply.headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def _next(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if self.script:
                return self.script.pop(0)
        if self.responder is not None:
            return self.responder(recorded)
        return Reply(status=500, error_message="script exhausted: the client sent more requests than scripted")

    def _echo(self, reply: Reply, seen: str) -> Reply:
        """`reply` with ``{ECHO}`` replaced by what `echo_pattern` finds in `seen` (the request)."""
        if self.echo_pattern is None or "{ECHO}" not in f"{reply.text}{reply.error_message}":
            return reply
        found = " ".join(dict.fromkeys(self.echo_pattern.findall(seen))) or "nothing-seen"
        with self._lock:
            self.echoed.append(found)
        text = reply.text.replace("{ECHO}", found) if reply.text is not None else None
        return replace(reply, text=text, error_message=reply.error_message.replace("{ECHO}", found))

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The base URL an OpenAI-compatible client takes (it appends ``/chat/completions``)."""
        return f"{self.url}/v1"

    def start(self) -> ScriptedLLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _chat(reply: Reply, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"},
        ],
        "usage": {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": reply.output_tokens,
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    }


def _anthropic_message(reply: Reply, model: str) -> dict[str, Any]:
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": reply.text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens},
    }
