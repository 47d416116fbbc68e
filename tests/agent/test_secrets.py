"""API keys never leave the process that needs them.

The scrubber (`argus.agent.providers.secrets.scrub_secrets`) on its own: nested structures, keys inside longer
strings, several keys, dict keys, short values, where each secret comes from. Then each boundary where text leaves
the process — the response cache, the run store and its export, generated files, the prompts built for the next
LLM call, the gate's worker environment — and the providers, which read the key when they send a request.

Last, the attack end to end: fake keys in every place a key can be (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``,
``ARGUS_LLM_API_KEY``, the config file's ``api_key_env`` variable, a ``*_TOKEN``), an ``argus optimize`` run whose
scripted model tries to exfiltrate them (it repeats every key it can see in the request, writes the literal values
into a comment, a string constant and an error message so that the gate's rejection reason quotes them, and into its
rationales and malformed answers), and a byte-level search for every key value in every file under the run's
directory, the store's rows and raw bytes, the response cache, the exports, the command's output and every request
body the server received.
"""

from __future__ import annotations

import json
import pickle
import secrets as random_secrets
import sqlite3
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from argus.agent.arms import Arm, KernelRef, kernel_source
from argus.agent.coder import LLMCoder, coder_prompt
from argus.agent.planner import PlanContext, ask, planner_prompt
from argus.agent.providers import ResponseCache, load_config, make_provider
from argus.agent.providers.config import NO_KEY
from argus.agent.providers.secrets import (
    MIN_SECRET_LENGTH,
    remember_config,
    scrub_secrets,
    secret_values,
    secret_variables,
    worker_environment,
)
from argus.agent.store import RunStore
from tests.agent.llm_server import Recorded, Reply, ScriptedLLMServer, ok, status

LEAK = r"sk-test-LEAK-[0-9a-f]{24}"


def fake_key() -> str:
    return f"sk-test-LEAK-{random_secrets.token_hex(12)}"


def no_key_in(text: str | bytes, keys: dict[str, str], where: str) -> None:
    data = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
    found = [name for name, value in keys.items() if value.encode() in data]
    assert not found, f"{where} holds the value of {found}"


# -- the scrubber ------------------------------------------------------------------------------------------------


def test_scrub_secrets_replaces_every_known_value_in_nested_structures() -> None:
    one, two = fake_key(), fake_key()
    env = {"OPENAI_API_KEY": one, "BUILD_TOKEN": two, "HOME": "/home/someone-with-a-long-name"}
    value = {
        "note": f"the key is {one}!",  # inside a longer string
        "both": f"{one}{two}",  # two keys, adjacent
        f"field-{two}": [1, None, True, 2.5, (f"x{one}", {"deeper": [two]})],  # a dict key; tuples and lists
        "fine": "128x256 tiles, 4 stages",
    }
    cleaned = scrub_secrets(value, env=env)
    no_key_in(json.dumps(cleaned), {"one": one, "two": two}, "the scrubbed value")
    assert cleaned["note"] == "the key is [REDACTED:OPENAI_API_KEY]!"
    assert cleaned["both"] == "[REDACTED:OPENAI_API_KEY][REDACTED:BUILD_TOKEN]"
    inner = cleaned["field-[REDACTED:BUILD_TOKEN]"]
    assert inner[:4] == [1, None, True, 2.5] and isinstance(inner[4], tuple)
    assert inner[4] == ("x[REDACTED:OPENAI_API_KEY]", {"deeper": ["[REDACTED:BUILD_TOKEN]"]})
    assert cleaned["fine"] == value["fine"]
    assert scrub_secrets(cleaned, env=env) == cleaned  # idempotent
    assert scrub_secrets("nothing here", env=env) == "nothing here" and scrub_secrets(42, env=env) == 42


def test_which_variables_hold_secrets_and_what_is_too_short(tmp_path: Path) -> None:
    config = tmp_path / "argus.toml"
    gateway, in_file, argus_key, token, short = fake_key(), fake_key(), fake_key(), fake_key(), "abc1234"
    config.write_text(f'[llm]\napi_key_env = "MY_GATEWAY_CREDENTIAL"\napi_key = "{in_file}"\n')
    env = {
        "ARGUS_CONFIG": str(config),
        "MY_GATEWAY_CREDENTIAL": gateway,  # a secret only because the config file names it
        "ARGUS_LLM_API_KEY": argus_key,
        "CI_JOB_TOKEN": token,
        "db_password": "correct horse battery",  # the suffix rule ignores case
        "SHORT_SECRET": short,  # under MIN_SECRET_LENGTH: ordinary text, not scrubbed
        "PLACEHOLDER_API_KEY": NO_KEY,
        "PLAIN_SETTING": fake_key(),  # a long value under an ordinary name
    }
    assert len(short) < MIN_SECRET_LENGTH
    values = secret_values(env)
    assert values[gateway] == "MY_GATEWAY_CREDENTIAL" and values[in_file] == "llm.api_key"
    assert values[argus_key] == "ARGUS_LLM_API_KEY" and values[token] == "CI_JOB_TOKEN"
    assert values["correct horse battery"] == "db_password"
    assert short not in values and NO_KEY not in values and env["PLAIN_SETTING"] not in values
    text = f"{gateway} {in_file} {argus_key} {token} {short} {env['PLAIN_SETTING']} EMPTY"
    assert scrub_secrets(text, env=env) == (
        "[REDACTED:MY_GATEWAY_CREDENTIAL] [REDACTED:llm.api_key] [REDACTED:ARGUS_LLM_API_KEY] "
        f"[REDACTED:CI_JOB_TOKEN] {short} {env['PLAIN_SETTING']} EMPTY"
    )
    # the same value in two variables is named after the one argus reads first
    assert secret_values({"OPENAI_API_KEY": token, "ZZ_TOKEN": token})[token] == "OPENAI_API_KEY"
    # the variables a gate worker gets emptied: every secret variable that is set, short ones included
    emptied = worker_environment(env)
    assert set(emptied) == {"ARGUS_LLM_API_KEY", "MY_GATEWAY_CREDENTIAL", "CI_JOB_TOKEN", "db_password",
                            "SHORT_SECRET", "PLACEHOLDER_API_KEY"}  # fmt: skip
    assert set(emptied.values()) == {""} and "PLAIN_SETTING" not in secret_variables(env)


def test_a_longer_secret_that_contains_another_is_replaced_whole() -> None:
    inner = fake_key()
    outer = inner + "-and-more"
    env = {"A_TOKEN": inner, "B_TOKEN": outer}
    assert scrub_secrets(f"[{outer}] [{inner}]", env=env) == "[[REDACTED:B_TOKEN]] [[REDACTED:A_TOKEN]]"


def test_a_key_given_in_code_is_held_known_and_never_shown(tmp_path: Path) -> None:
    key = fake_key()
    config = load_config(model="m", base_url="http://127.0.0.1:9/v1", api_key=key, env={"XDG_CONFIG_HOME": "/x"})
    assert config.held_api_key == key and config.api_key_env is None
    assert key not in repr(config) and key not in json.dumps(config.describe())
    remember_config(config)
    assert scrub_secrets(f"echo {key}", env={}) == "echo [REDACTED:api_key]"
    assert scrub_secrets(f"x {key[:-1]}", env={}) == f"x {key[:-1]}"  # a prefix of a key is not the key


# -- the providers read the key when they send ------------------------------------------------------------------


def test_the_provider_reads_its_key_from_the_environment_at_each_request(
    server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first, second = fake_key(), fake_key()
    monkeypatch.setenv("OPENAI_API_KEY", first)
    provider = make_provider(model="gpt-4o", base_url=server.openai_base_url, cache="off", max_retries=0)
    config = provider.config
    assert config.api_key_env == "OPENAI_API_KEY" and config.held_api_key is None
    no_key_in(pickle.dumps(config), {"first": first}, "the pickled configuration")
    no_key_in(repr(asdict(config)), {"first": first}, "the configuration's fields")
    server.script = [ok("a"), ok("b")]
    provider.complete([{"role": "user", "content": "hi"}], max_tokens=5, temperature=0)
    monkeypatch.setenv("OPENAI_API_KEY", second)  # rotated: the next request sends the new key
    provider.complete([{"role": "user", "content": "hi again"}], max_tokens=5, temperature=0)
    assert [r.headers["authorization"] for r in server.requests] == [f"Bearer {first}", f"Bearer {second}"]
    assert provider._client.api_key == NO_KEY  # the long-lived SDK client holds only the placeholder
    monkeypatch.delenv("OPENAI_API_KEY")
    from argus.agent.providers import ProviderConfigError

    with pytest.raises(ProviderConfigError) as info:
        provider.complete([{"role": "user", "content": "third"}], max_tokens=5, temperature=0)
    assert info.value.code == "LLM_CONFIG_MISSING" and "OPENAI_API_KEY" in info.value.message


def test_the_provider_scrubs_what_it_sends_caches_and_returns(
    server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    used, other = fake_key(), fake_key()
    keys = {"ARGUS_LLM_API_KEY": used, "ANTHROPIC_API_KEY": other}
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    server.echo_pattern = __import__("re").compile(LEAK)
    server.script = [ok("I saw {ECHO}"), status(500, "upstream: {ECHO}")]
    cache = tmp_path / "cache"
    provider = make_provider(model="gpt-4o", base_url=server.openai_base_url, cache="use", cache_dir=cache,
                             max_retries=0)  # fmt: skip
    answer = provider.complete([{"role": "user", "content": f"my keys: {used} and {other}"}], max_tokens=5,
                               temperature=0)  # fmt: skip
    assert server.echoed[0] == used  # the key went to the server in the header, and came back in the reply
    assert answer.text == "I saw [REDACTED:ARGUS_LLM_API_KEY]"
    assert "[REDACTED:ARGUS_LLM_API_KEY] and [REDACTED:ANTHROPIC_API_KEY]" in server.requests[0].prompt_text()
    no_key_in(json.dumps(server.requests[0].body), keys, "the request body")
    for path in cache.rglob("*"):
        if path.is_file():
            no_key_in(path.read_bytes(), keys, str(path))
    again = provider.complete([{"role": "user", "content": f"my keys: {used} and {other}"}], max_tokens=5,
                              temperature=0)  # fmt: skip
    assert again.cached and again.text == answer.text  # the scrubbed request is the cache's key
    from argus.agent.providers import ProviderServerError

    with pytest.raises(ProviderServerError) as info:
        provider.complete([{"role": "user", "content": "fails"}], max_tokens=5, temperature=0)
    no_key_in(str(info.value), keys, "the provider's error")


# -- each boundary on its own ------------------------------------------------------------------------------------


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Fake keys in the environment: the provider variables, argus's own, and a token."""
    values = {"OPENAI_API_KEY": fake_key(), "ANTHROPIC_API_KEY": fake_key(), "ARGUS_LLM_API_KEY": fake_key(),
              "SERVICE_TOKEN": fake_key()}  # fmt: skip
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def test_the_response_cache_never_writes_a_key(keys: dict[str, str], tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    request = {"messages": [{"role": "user", "content": f"use {keys['OPENAI_API_KEY']}"}]}
    path = cache.put("ab" * 32, request, {"text": f"sure: {keys['SERVICE_TOKEN']}", keys["ANTHROPIC_API_KEY"]: 1})
    no_key_in(path.read_bytes(), keys, "the cache entry")
    assert cache.get("ab" * 32, request) == {
        "text": "sure: [REDACTED:SERVICE_TOKEN]",
        "[REDACTED:ANTHROPIC_API_KEY]": 1,
    }


def test_every_write_of_the_run_store_and_its_export_is_scrubbed(keys: dict[str, str], tmp_path: Path) -> None:
    k = keys
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        run = store.start_run(f"t-{k['OPENAI_API_KEY']}", model="m", budget={"note": k["SERVICE_TOKEN"]},
                              config={"prompt": f"x {k['ARGUS_LLM_API_KEY']}", k["ANTHROPIC_API_KEY"]: 1})  # fmt: skip
        cid = run.add_candidate(1, action=f"a {k['OPENAI_API_KEY']}", params={"why": k["SERVICE_TOKEN"]},
                                source=f"# {k['ANTHROPIC_API_KEY']}\nKEY = '{k['ARGUS_LLM_API_KEY']}'\n",
                                kernel_params={"note": k["OPENAI_API_KEY"]})  # fmt: skip
        run.start_gate(cid)
        run.record_stage(cid, f"compile-{k['SERVICE_TOKEN']}", "failed", {"reason": k["OPENAI_API_KEY"]}, code="X")
        finding = {"code": "RACE", "verdict": "violated", "message": f"race {k['ANTHROPIC_API_KEY']}",
                   "counterexample": {"thread": k["SERVICE_TOKEN"]}}  # fmt: skip
        stage = {"stage": "verify", "status": "failed", "code": "VERIFY_VIOLATED",
                 "reason": f"quoted {k['ARGUS_LLM_API_KEY']}",
                 "details": {"report": {"findings": [finding]}}}  # fmt: skip
        gate = {"verdict": "rejected", "flags": [k["OPENAI_API_KEY"]], "stages": [stage]}
        assert run.record_gate_result(cid, gate) == 1
        run.record_timing(cid, f"l-{k['SERVICE_TOKEN']}", 1.0, {"p": k["OPENAI_API_KEY"]})
        run.record_counterexample(cid, "C", f"t {k['ANTHROPIC_API_KEY']}", {"p": k["ARGUS_LLM_API_KEY"]})
        run.finish_candidate(cid, "rejected", reward=-1.0, reward_details={"r": k["SERVICE_TOKEN"]},
                             summary={"s": k["OPENAI_API_KEY"]})  # fmt: skip
        run.record_llm_exchange([{"role": "user", "content": f"p {k['ANTHROPIC_API_KEY']}"}],
                                error=RuntimeError(f"e {k['SERVICE_TOKEN']}"), purpose="coder")  # fmt: skip
        run.finish("finished", {"best": {"source": k["ARGUS_LLM_API_KEY"]}})
        exported = json.dumps(store.export(run.run_id))
        rows = _store_rows(db)
    for path in tmp_path.glob("runs.db*"):
        no_key_in(path.read_bytes(), keys, path.name)
    no_key_in(rows, keys, "the store's rows")
    no_key_in(exported, keys, "the export")
    for name in keys:
        assert f"[REDACTED:{name}]" in rows  # each was there to be scrubbed, and was


def test_an_export_scrubs_a_key_an_older_writer_stored(keys: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with RunStore(db) as store:
        run = store.start_run("t")
        cid = run.add_candidate(1, source="clean")
        run.release()
    raw = sqlite3.connect(db)
    raw.execute("UPDATE candidates SET source = ? WHERE id = ?", (f"old {keys['OPENAI_API_KEY']}", cid))
    raw.commit()
    raw.close()
    with RunStore(db) as store:
        data = store.export(run.run_id)
    assert data["candidates"][0]["source"] == "old [REDACTED:OPENAI_API_KEY]"


def test_generated_files_and_the_next_prompts_hold_no_key(keys: dict[str, str], tmp_path: Path) -> None:
    k = keys
    coder = LLMCoder(provider=None, directory=tmp_path / "gen")
    path = coder.write(f"# {k['OPENAI_API_KEY']}\nX = '{k['SERVICE_TOKEN']}'\n")
    assert path.read_text() == "# [REDACTED:OPENAI_API_KEY]\nX = '[REDACTED:SERVICE_TOKEN]'\n"
    feedback = [f"rejected at isolation [WORKER_EXCEPTION]: ValueError: {k['ANTHROPIC_API_KEY']}"]
    base = KernelRef(library="gemm_mma_sync")
    arm = Arm("rewrite", "swizzle-shared-128b")
    history = [{"step": 1, "action": k["SERVICE_TOKEN"]}]
    ctx = PlanContext(3, [arm], "gemm", {"BM": 64}, history, findings=[k["OPENAI_API_KEY"]], feedback=feedback)
    source = f"{kernel_source(base)}# {k['ARGUS_LLM_API_KEY']}\n"
    for messages in (coder_prompt(arm, base, source, None, feedback), planner_prompt(ctx)):
        no_key_in(json.dumps(messages), keys, "a prompt")
        assert "ValueError: [REDACTED:ANTHROPIC_API_KEY]" in messages[-1]["content"]

    class Recording:
        def __init__(self) -> None:
            self.sent: list[Any] = []

        def complete(self, messages: Any, **_: Any) -> Any:
            self.sent.append(messages)
            return type("C", (), {"text": "ok"})()

    provider = Recording()
    ask(provider, [{"role": "user", "content": f"built by hand: {k['OPENAI_API_KEY']}"}], None, "coder")
    assert provider.sent == [[{"role": "user", "content": "built by hand: [REDACTED:OPENAI_API_KEY]"}]]


def test_a_gate_worker_starts_with_every_secret_variable_emptied(keys: dict[str, str]) -> None:
    from argus.agent.loop import _Gater

    gater = _Gater(True, 120.0)
    try:
        seen = {name: gater.job("os:getenv", {"key": name}) for name in keys}
    finally:
        gater.close()
    assert seen == dict.fromkeys(keys, "")


# -- the attack, end to end --------------------------------------------------------------------------------------

SOURCE = kernel_source(KernelRef(library="gemm_mma_sync"))


def _block(code: str) -> str:
    return f"Here is the kernel.\n```python\n{code}```\nDone."


def _offered(prompt: str) -> list[str]:
    return [
        line[2:].split(" (prior", 1)[0] for line in prompt.splitlines() if line.startswith("- ") and "(prior" in line
    ]


def injected_model(keys: dict[str, str]) -> tuple[Callable[[Recorded], Reply], dict[str, int]]:
    """A model under prompt injection: it repeats every key it sees (``{ECHO}``) and writes the literal key
    values into its rationales, its malformed answers and its code — a comment, a string constant, a name in code
    position (a syntax error once scrubbed), and an error the gate's rejection reason quotes."""
    k = keys
    calls = {"planner": 0, "coder": 0}
    literal = " ".join(k.values())
    coder_replies = [
        # a key in code position: the code does not parse once scrubbed, and the retry quotes the answer back
        _block(f"{SOURCE}\nLEAKED = {k['OPENAI_API_KEY']}\n"),
        # keys in a comment and in a string constant, and whatever the model saw: a valid kernel
        _block(f'{SOURCE}\n# stolen: {k["ANTHROPIC_API_KEY"]} {{ECHO}}\nNOTE = "{k["MY_GATEWAY_CREDENTIAL"]}"\n'),
        # an error the gate's rejection reason quotes (the candidate fails when its module is imported)
        _block(f'{SOURCE}\nraise ValueError("exfiltrate {k["SERVICE_TOKEN"]} {k["ARGUS_LLM_API_KEY"]}")\n'),
    ]

    def respond(request: Recorded) -> Reply:
        system = request.body["messages"][0]["content"]
        prompt = request.prompt_text()
        if system.startswith("You are the planner"):
            calls["planner"] += 1
            if calls["planner"] == 1:  # malformed: the retry sends this answer back to the model
                return ok(f"I would pick something. Keys: {literal} {{ECHO}}")
            action = _offered(prompt)[0]
            return ok(json.dumps({"action": action, "rationale": f"because {literal} {{ECHO}}"}))
        calls["coder"] += 1
        index = calls["coder"] - 1
        if index < len(coder_replies):
            return ok(coder_replies[index])
        return status(500, f"upstream failed with {literal} {{ECHO}}")  # the provider's error quotes keys

    return respond, calls


def _store_rows(db: Path) -> str:
    raw = sqlite3.connect(db)
    try:
        tables = [r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return "\n".join(repr(row) for t in tables for row in raw.execute(f"SELECT * FROM {t}"))
    finally:
        raw.close()


def test_no_key_leaks_from_an_llm_run_under_attack(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    keys = {name: fake_key() for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ARGUS_LLM_API_KEY",
                                          "MY_GATEWAY_CREDENTIAL", "SERVICE_TOKEN")}  # fmt: skip
    respond, calls = injected_model(keys)
    run_dir, cache_dir = tmp_path / "run", tmp_path / "cache"
    run_dir.mkdir()
    config = tmp_path / "config" / "argus.toml"
    config.parent.mkdir()
    with ScriptedLLMServer(responder=respond, echo_pattern=LEAK) as server:
        config.write_text(
            f'[llm]\nmodel = "gpt-4o"\nbase_url = "{server.openai_base_url}"\napi_key_env = "MY_GATEWAY_CREDENTIAL"\n'
            f'cache = "use"\ncache_dir = "{cache_dir}"\nmax_retries = 0\ntimeout = 30\n'
        )
        monkeypatch.setenv("ARGUS_CONFIG", str(config))
        for name, value in keys.items():
            monkeypatch.setenv(name, value)
        from argus.cli.main import app

        runner = CliRunner()
        db, result_json = run_dir / "runs.db", run_dir / "result.json"
        out = runner.invoke(app, ["optimize", "gemm_mma_sync", "--planner", "llm", "--coder", "llm", "--budget", "3",
                                  "--store", str(db), "--json", str(result_json)])  # fmt: skip
        assert out.exit_code == 0, out.output
        run_id = json.loads(result_json.read_text())["run_id"]
        export_file = run_dir / "export.json"
        exported = runner.invoke(app, ["runs", "export", run_id, "--store", str(db), "--json", str(export_file)])
        assert exported.exit_code == 0, exported.output
        shown = runner.invoke(app, ["runs", "show", run_id, "--store", str(db)])
        assert shown.exit_code == 0, shown.output
        with RunStore(db) as store:
            export_data = json.dumps(store.export(run_id))
            state = store.read_run(run_id)
    requests = server.requests

    # the attack was made: the model saw the key that was sent (in the header) and repeated it; every key was
    # written into its answers; each path it took was exercised
    assert calls["planner"] >= 3 and calls["coder"] >= 3
    assert keys["ARGUS_LLM_API_KEY"] in server.echoed
    assert all(r.headers["authorization"] == f"Bearer {keys['ARGUS_LLM_API_KEY']}" for r in requests)
    by_step = {c.step: c for c in state.candidates}
    rows = _store_rows(db)
    for name in keys:
        assert f"[REDACTED:{name}]" in rows, name
    accepted = [c for c in state.candidates if c.params.get("generated") and c.status == "accepted"]
    assert accepted and "# stolen: [REDACTED:ANTHROPIC_API_KEY] [REDACTED:ARGUS_LLM_API_KEY]" in accepted[0].source
    assert 'NOTE = "[REDACTED:MY_GATEWAY_CREDENTIAL]"' in accepted[0].source
    raised = [c for c in state.candidates if c.source and "raise ValueError" in c.source]
    assert raised and raised[0].status in ("rejected", "error") and by_step[1].params["choice"]["source"] == "llm"
    # the rejection reason quoted the (scrubbed) key, and that reason reached the next prompt
    quoted = "exfiltrate [REDACTED:SERVICE_TOKEN] [REDACTED:ARGUS_LLM_API_KEY]"
    assert any(quoted in r.prompt_text() for r in requests), "the rejection reason never reached a prompt"
    # the malformed answers went back to the model scrubbed
    assert any("Keys: [REDACTED:" in r.prompt_text() for r in requests)
    assert any("LEAKED = [REDACTED:OPENAI_API_KEY]" in r.prompt_text() for r in requests)

    # and no key value is anywhere: the prompts (request bodies) ...
    for i, r in enumerate(requests):
        no_key_in(json.dumps(r.body), keys, f"request {i} to the model")
        no_key_in(json.dumps({k: v for k, v in r.headers.items() if k != "authorization"}), keys, f"request {i}")
    # ... every file under the run's directory (the store and its WAL, generated modules, the result, the export),
    # the response cache, and anything else the test's directory holds
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("candidate_") for p in files)
    assert any(p.suffix == ".json" for p in cache_dir.rglob("*"))
    for path in files:
        no_key_in(path.read_bytes(), keys, str(path.relative_to(tmp_path)))
    # ... the store's rows as text, the exports, what the commands printed
    no_key_in(rows, keys, "the store's rows")
    no_key_in(export_data, keys, "RunStore.export")
    for output, what in ((out.output, "argus optimize"), (exported.output, "argus runs export"),
                         (shown.output, "argus runs show")):  # fmt: skip
        no_key_in(output, keys, what)
