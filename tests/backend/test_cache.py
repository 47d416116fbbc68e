"""The on-disk cubin cache: a second compile is a hit that never calls NVRTC; anything that changes the
cubin misses; corrupted entries are detected, removed and rebuilt; writes are atomic."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from argus.backend.cuda import CompiledModule, CubinCache, compile_cuda, default_cache_dir
from argus.backend.cuda import nvrtc as nvrtc_api
from argus.backend.cuda.cache import MAGIC, CacheEntry, decode_entry, encode_entry
from tests.backend.cuda_kernels import MMA_SYNC_BF16, VECTOR_ADD


@pytest.fixture
def nvrtc_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count NVRTC compilations by wrapping the one function that runs them."""
    calls: list[str] = []
    real = nvrtc_api.compile_program

    def counting(source: str, program_name: str, *args: object, **kwargs: object) -> nvrtc_api.NvrtcOutput:
        calls.append(program_name)
        return real(source, program_name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(nvrtc_api, "compile_program", counting)
    return calls


def test_second_compile_is_a_hit_that_does_not_call_nvrtc(tmp_path: Path, nvrtc_calls: list[str]) -> None:
    cache = CubinCache(tmp_path)
    cold = compile_cuda(VECTOR_ADD, "vector_add", cache=cache)
    assert (cold.from_cache, nvrtc_calls) == (False, ["vector_add.cu"])
    entry = cache.path_for(cold.key)
    assert entry.is_file() and entry.parent.name == cold.key[:2] and entry.parent.parent == tmp_path

    warm = compile_cuda(VECTOR_ADD, "vector_add", cache=cache)
    assert warm.from_cache and nvrtc_calls == ["vector_add.cu"]  # NVRTC did not run again
    assert (warm.cubin, warm.ptx, warm.log, warm.key, warm.options) == (
        cold.cubin,
        cold.ptx,
        cold.log,
        cold.key,
        cold.options,
    )
    assert warm.instruction_mix() == cold.instruction_mix()


def test_everything_that_changes_the_cubin_changes_the_key(
    tmp_path: Path, nvrtc_calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = CubinCache(tmp_path)
    keys = {
        compile_cuda(VECTOR_ADD, "vector_add", cache=cache).key,
        compile_cuda(VECTOR_ADD + "\n// changed\n", "vector_add", cache=cache).key,
        compile_cuda(VECTOR_ADD, "vector_add", options=["--use_fast_math"], cache=cache).key,
        compile_cuda(VECTOR_ADD, "vector_add", arch="sm_80", cache=cache).key,
        compile_cuda(VECTOR_ADD, "renamed", cache=cache).key,
    }
    monkeypatch.setattr(nvrtc_api, "nvrtc_version", lambda: (99, 0))
    keys.add(compile_cuda(VECTOR_ADD, "vector_add", cache=cache).key)
    assert len(keys) == 6 and len(nvrtc_calls) == 6
    assert len(cache.entries()) == 6


def test_line_maps_do_not_affect_the_key(tmp_path: Path, nvrtc_calls: list[str]) -> None:
    cache = CubinCache(tmp_path)
    first = compile_cuda(VECTOR_ADD, "vector_add", cache=cache)
    second = compile_cuda(VECTOR_ADD, "vector_add", line_map={1: "k.py:1"}, cache=cache)
    assert second.from_cache and second.key == first.key and len(nvrtc_calls) == 1
    assert dict(second.line_map) == {1: "k.py:1"}


@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data[:100] + bytes([data[100] ^ 0xFF]) + data[101:], id="bit-flip-in-header"),
        pytest.param(lambda data: data[:-40] + bytes([data[-40] ^ 0x01]) + data[-39:], id="bit-flip-in-ptx"),
        pytest.param(lambda data: b"garbage", id="garbage"),
        pytest.param(lambda data: b"", id="empty"),
        pytest.param(lambda data: b"ARGUS-CUBIN\x00" + data[len(MAGIC) :], id="other-format-version"),
    ],
)
def test_corrupted_entries_are_removed_and_rebuilt(tmp_path: Path, nvrtc_calls: list[str], corrupt) -> None:
    cache = CubinCache(tmp_path)
    cold = compile_cuda(VECTOR_ADD, "vector_add", cache=cache)
    path = cache.path_for(cold.key)
    path.write_bytes(corrupt(path.read_bytes()))

    assert cache.load(cold.key) is None
    assert not path.exists()  # removed, not left to fail again

    path.write_bytes(corrupt(encode_entry(_entry_of(cold))))
    rebuilt = compile_cuda(VECTOR_ADD, "vector_add", cache=cache)
    assert not rebuilt.from_cache and len(nvrtc_calls) == 2
    assert rebuilt.cubin == cold.cubin
    assert decode_entry(path.read_bytes(), cold.key).cubin == cold.cubin  # rewritten whole
    assert compile_cuda(VECTOR_ADD, "vector_add", cache=cache).from_cache


def test_an_entry_stored_under_another_key_is_a_miss(tmp_path: Path) -> None:
    cache = CubinCache(tmp_path)
    module = compile_cuda(VECTOR_ADD, "vector_add", cache=cache)
    other_key = "0" * 64
    cache.path_for(other_key).parent.mkdir(parents=True, exist_ok=True)
    cache.path_for(other_key).write_bytes(cache.path_for(module.key).read_bytes())
    assert cache.load(other_key) is None


def test_entries_round_trip_every_field() -> None:
    entry = CacheEntry(
        key="ab" * 32,
        cubin=bytes(range(256)) * 3,
        ptx=".version 9.0\n// ünïcode\n",
        log="k.cu(1): warning: w\n",
        lowered_names={"scale<4>": "_Z5scaleILi4EEvPf"},
        meta={"arch": "sm_90a", "options": ["-lineinfo"]},
    )
    decoded = decode_entry(encode_entry(entry), entry.key)
    assert (decoded.cubin, decoded.ptx, decoded.log, dict(decoded.lowered_names), dict(decoded.meta)) == (
        entry.cubin,
        entry.ptx,
        entry.log,
        dict(entry.lowered_names),
        dict(entry.meta),
    )


def test_writes_leave_no_temporary_files(tmp_path: Path) -> None:
    cache = CubinCache(tmp_path)
    compile_cuda(VECTOR_ADD, "vector_add", cache=cache)
    compile_cuda(MMA_SYNC_BF16, "mma", cache=cache)
    files = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert len(files) == 2 and all(name.endswith(".entry") for name in files)
    assert cache.clear() == 2 and cache.entries() == []


def test_an_unwritable_cache_degrades_to_no_cache(tmp_path: Path, nvrtc_calls: list[str]) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    cache = CubinCache(blocker)
    with pytest.warns(RuntimeWarning, match="cannot write"):
        first = compile_cuda(VECTOR_ADD, "vector_add", cache=cache)
    with pytest.warns(RuntimeWarning, match="cannot write"):
        second = compile_cuda(VECTOR_ADD, "vector_add", cache=cache)
    assert not first.from_cache and not second.from_cache and len(nvrtc_calls) == 2


def test_cache_true_uses_the_environments_directory_and_false_none(private_cache_dir: Path) -> None:
    assert default_cache_dir() == private_cache_dir / "cubin"
    module = compile_cuda(VECTOR_ADD, "vector_add")
    assert CubinCache().path_for(module.key).is_file()
    assert str(CubinCache().path_for(module.key)).startswith(str(private_cache_dir / "cubin"))
    uncached = compile_cuda(VECTOR_ADD, "vector_add_uncached", cache=False)
    assert not uncached.from_cache and not CubinCache().path_for(uncached.key).exists()


def test_default_cache_dir_without_argus_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ARGUS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "argus" / "cubin"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "argus" / "cubin"


def test_a_hit_is_fast_relative_to_a_compile(tmp_path: Path) -> None:
    """Reported, not asserted on timing: the hit must only be a hit (timing lives in benchmarks)."""
    cache = CubinCache(tmp_path)
    started = time.perf_counter()
    cold = compile_cuda(MMA_SYNC_BF16, "mma", cache=cache)
    cold_s = time.perf_counter() - started
    warm = compile_cuda(MMA_SYNC_BF16, "mma", cache=cache)
    assert warm.from_cache and not cold.from_cache
    print(f"cold compile {cold_s * 1e3:.1f} ms, cache hit {warm.seconds * 1e3:.2f} ms")


def test_cache_keys_must_be_hex_digests(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="hex digest"):
        CubinCache(tmp_path).path_for("../../etc/passwd")


def _entry_of(module: CompiledModule) -> CacheEntry:
    return CacheEntry(key=module.key, cubin=module.cubin, ptx=module.ptx, log=module.log)
