"""Stored documents hold codes and figures, never sentences: a reason, a verdict, a warning or a
note is a finding (`contracts/finding.py`: a code and its figures), worded at render time by
`contracts/wording/`.

Checked on what is stored, value by value: every stored document kept under tests/fixtures/
(known by the `kind` it declares, read by today's reader of that kind), every kept steps file,
and an injected run made in this process (rank 0's aggregation of two ranks, one of them
delayed on purpose) are walked to every string, with its path. A string of three or more
words fails unless its path is quoted evidence (EVIDENCE: a user's string, an exception's
message, a command line, a name the hardware gives, a check's name beside its id). A
finding's figures are values like any other. A planted sentence proves the check fails.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
INJECTED_RUN = "the injected run (made in this process)"

# A word is letters (inner apostrophes and hyphens allowed) once the punctuation around it is
# gone: a path, a URL, a hash, a number with its unit, an id or a code ('H100', 'aten::mm',
# 'tiny-gpt2__b16__w1__fp32__ddp') is no word, and neither is a command line's argument.
WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")
AROUND = "()[]{}<>\"'“”‘’,.;:!?"
SENTENCE = 3  # words

# Path patterns (matched at a path's end; `*` one key, `[]` any index) of quoted evidence.
EVIDENCE: dict[str, str] = {
    "error.exception": "the exception a rank raised, its own message",
    "error.log_tail": "the launch log's last lines, as printed",
    "figures.exception": "an exception's message, quoted in a finding",
    "figures.error": "an error's message (torch's, NVML's, a tool's), quoted in a finding",
    "launch.argv[]": "a command line, one argument each",
    "env.*": "an environment variable's value, as set or read (a user's string)",
    "label": "a user's name for a cell or a group of cells",
    "environment.cpu_model": "the CPU's name, as the CPU gives it",
    "environment.gpus[]": "a GPU's name, as the driver gives it",
    "device_name": "a GPU's name, as the driver gives it",
    "gpu_name": "a GPU's name, as NVML gives it",
    "validate.sku": "the GPU's name, as the driver gives it",
    "figures.device": "a device's name, as the driver gives it, quoted in a finding",
    "top_kernels[].name": "a kernel's name as the trace gives it (a C++ signature)",
    "expected_source": "where an expected figure is taken from: a sheet's URL and its quoted "
    "figures, or the kept run it was read from",
    "checks[].title": "a validate check's name beside its id ('NVIDIA driver'), a label",
    "verdict_basis.figures.*[]": "the names of the checks a validate verdict lists, labels",
}


def words(text: str) -> int:
    return sum(1 for token in text.split() if WORD.fullmatch(token.strip(AROUND)))


def shown(path: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str]:
    body = re.escape(pattern).replace(r"\[\]", r"\[\d+\]").replace(r"\*", r"[^.\[\]]+")
    return re.compile(rf"(?:^|\.){body}$")


def listed(where: str, patterns: dict[str, str]) -> str | None:
    """The pattern of `patterns` that `where` (a shown path) meets; None where none does."""
    return next((p for p in patterns if _pattern(p).search(where)), None)


def strings(value: Any, path: tuple[str | int, ...]) -> Iterator[tuple[str, str]]:
    """Every string of `value` (dicts' keys aside), with its shown path."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from strings(inner, (*path, str(key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from strings(inner, (*path, index))
    elif isinstance(value, str):
        yield shown(path), value


@dataclass(frozen=True)
class Stored:
    """One stored document as today's reader gives it (JSON), where it came from, and the
    name its paths start with (its kind's, 'steps' for a steps file)."""

    source: str
    root: str
    data: Any


def sentences(docs: list[Stored]) -> list[tuple[str, str, str]]:
    """(source, path, text) of every string of three or more words that is not evidence."""
    return [
        (doc.source, where, text)
        for doc in docs
        for where, text in strings(doc.data, (doc.root,))
        if words(text) >= SENTENCE and listed(where, EVIDENCE) is None
    ]


def read_document(path: Path) -> Stored | None:
    """A stored document through today's reader of the kind it declares; None for a file that
    declares none (a trace, a spec, an environment, a tool's output)."""
    from torchscale.offline.results.documents import READERS

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    kind = data.get("kind") if isinstance(data, dict) else None
    if not isinstance(kind, str) or not kind.startswith("torchscale."):
        return None
    assert kind in READERS, f"{path}: a stored kind with no reader: {kind}"
    read = READERS[kind](path)
    assert read.doc is not None, f"{path}: today's reader refuses it: {read.problem}"
    source = str(path.relative_to(FIXTURES)) if path.is_relative_to(FIXTURES) else str(path)
    return Stored(source, kind.removeprefix("torchscale."), read.doc.model_dump(mode="json"))


def read_steps(path: Path) -> list[Stored]:
    from torchscale.offline.results.profile_windows import read_step_records

    records = read_step_records(path) or []
    source = str(path.relative_to(FIXTURES))
    return [Stored(f"{source}:{n + 1}", "steps", record) for n, record in enumerate(records)]


def injected_run() -> list[Stored]:
    """A cell result rank 0 aggregates from two ranks, rank 1 delayed 50 ms in backward on
    purpose (--inject-delay 1:backward:50), and its steps file."""
    from tests.rank.test_aggregate import make_rank, make_spec, run
    from torchscale.contracts.worker_spec import DelaySpec
    from torchscale.rank.worker.aggregate import step_records

    def phases(backward: float, wait: float) -> dict[str, float | None]:
        timed = {"forward": 0.004, "backward": backward, "grad_sync_wait": wait}
        return {"data": 0.0001, **timed, "optimizer": 0.002}

    delay = DelaySpec(rank=1, phase="backward", ms=50)
    spec = make_spec(world=2).model_copy(update={"inject_delay": [delay]})
    sync = (0.075,) * 4
    ranks = [
        make_rank(0, [1, 1, 1], sync, no_sync=(0.010,) * 4, phases=phases(0.006, 0.051)),
        make_rank(1, [1, 1, 1], sync, no_sync=(0.060,) * 4, phases=phases(0.056, 0.001)),
    ]
    result = run(ranks, spec)
    lines = step_records(ranks).splitlines()
    return [
        Stored(INJECTED_RUN, "cell", result.model_dump(mode="json")),
        *(
            Stored(f"{INJECTED_RUN}, steps:{n + 1}", "steps", json.loads(line))
            for n, line in enumerate(lines)
        ),
    ]


@functools.cache
def stored() -> tuple[Stored, ...]:
    docs = [doc for path in sorted(FIXTURES.rglob("*.json")) if (doc := read_document(path))]
    docs += [record for path in sorted(FIXTURES.rglob("*.jsonl")) for record in read_steps(path)]
    return (*docs, *injected_run())


def test_kept_documents_and_an_injected_run_store_no_sentences() -> None:
    """The issue's test: no stored string outside the evidence holds three words or more."""
    found = list(sentences(list(stored())))
    shown_found = "\n".join(
        f"  {source}: {where} = {text[:100]!r}" for source, where, text in found
    )
    assert not found, f"stored sentences (a finding's code and figures instead):\n{shown_found}"


def test_the_scan_reads_every_kept_kind_and_the_injected_run() -> None:
    docs = stored()
    roots = {doc.root for doc in docs}
    assert {"cell", "profile_analysis", "validate", "comm", "max_batch", "steps"} <= roots
    assert sum(doc.root == "cell" for doc in docs) >= 60  # every kept run's cells
    injected = [
        doc.source
        for doc in docs
        if doc.root == "cell"
        and ((doc.data.get("diagnosis") or {}).get("straggler") or {}).get("injected")
    ]
    assert INJECTED_RUN in injected and len(injected) >= 2, injected  # and a kept one
    assert any(doc.data.get("error") for doc in docs if doc.root == "cell")  # a failed cell


SLOWER = "the rank was slower than the others"


@pytest.mark.parametrize(
    ("where", "plant"),
    [
        (
            "cell.diagnosis.straggler.kind_rule.code",
            lambda d: d["diagnosis"]["straggler"]["kind_rule"].update(code=SLOWER),
        ),
        (
            "cell.diagnosis.straggler.kind_rule.figures.phase",
            lambda d: d["diagnosis"]["straggler"]["kind_rule"]["figures"].update(phase=SLOWER),
        ),
    ],
    ids=["a field", "a finding's figure"],
)
def test_a_planted_sentence_is_found(where: str, plant: Any, tmp_path: Path) -> None:
    """The check can fail: a kept run's result with one sentence planted reads through
    today's reader as before, and the check names that path and nothing else."""
    kept = next((FIXTURES / "cpu_profile_injected").rglob("result.json"))
    data = json.loads(kept.read_text(encoding="utf-8"))
    plant(data)
    planted = tmp_path / "result.json"
    planted.write_text(json.dumps(data), encoding="utf-8")
    doc = read_document(planted)
    assert doc is not None
    assert [(w, t) for _, w, t in sentences([doc])] == [(where, SLOWER)]


def test_words_are_what_a_sentence_is_made_of() -> None:
    assert words(SLOWER) == 7
    assert words("NVIDIA H100 80GB HBM3") == 1
    assert words("Intel(R) Xeon(R) Processor") == 1
    one = "/tmp/res/logs/tiny-gpt2__b16__w1__fp32__ddp__0130bb72 https://nvidia.com/h100 0c4f"
    assert words(one) == 0 and words("python -m torch.distributed.run --nproc-per-node=2") == 1
    assert words("torchscale's matmul search") == 3


def test_todays_validate_writers_store_no_words() -> None:
    """A check is built from findings only (a sentence is refused), and a report's
    conclusion is its `verdict_basis`: no field holds their words."""
    from torchscale.contracts.finding import Finding
    from torchscale.orchestration.validate import check_result

    found = Finding(code="workload.no_step")
    made = check_result.check("x", "x", check_result.CheckStatus.FAIL, found, found)
    assert made.findings == [found] and not {"said", "said_fix"} & set(made.model_dump())
    with pytest.raises(TypeError):
        check_result.check("x", "x", check_result.CheckStatus.FAIL, "a sentence")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        check_result.failed("x", "x", found, "a sentence")  # type: ignore[arg-type]


def test_todays_cross_checks_store_codes() -> None:
    """Every cross-check the diagnosis builds today holds a code: the phase timers' model
    rebuilt from a kept run's steps (paired test, CPU wait, others' wait, no_sync windows),
    the same model as a cross-check of a traced one (its split and verdict), and a kept trace
    analysis judged against its measured windows (the profiler's inflation)."""
    from tests.offline.test_diagnosis import _table
    from torchscale.contracts.finding import Finding
    from torchscale.offline.analysis.diagnosis import RunEvidence, TimerEvidence, diagnose
    from torchscale.offline.analysis.diagnosis.inflation import phase_timer_checks
    from torchscale.offline.results.documents import read_cell, read_profile_analysis
    from torchscale.offline.results.profile_windows import timer_diagnosis

    run = FIXTURES / "cpu_sweep_profile/profile/profile/tiny-mlp__b8__w2__fp32__ddp__8154de06"
    result = read_cell(run / "result.json").doc
    assert result is not None
    # an analysis rewrote the result with the traces' diagnosis: the timers' is rebuilt
    stored = diagnose(RunEvidence(timers=TimerEvidence(steps=_table(steps=20, ranks=2, extra={}))))
    assert stored is not None
    traced = stored.model_copy(update={"source": "traces"})
    timers = timer_diagnosis(run, result.model_copy(update={"diagnosis": traced}))
    assert timers is not None and timers.straggler is not None
    checks = [*timers.cross_checks, *phase_timer_checks(timers, timers)]
    profiled = (
        FIXTURES
        / "h100_first_run/workload/runs/profile-torch/profile/gpt2__b8__w1__bf16__ddp__c0265f5b"
    )
    analysis = read_profile_analysis(profiled / "analysis.json").doc
    assert analysis is not None and analysis.diagnosis is not None
    checks += analysis.diagnosis.cross_checks
    assert len({c.check for c in checks}) >= 7
    assert all(isinstance(c.detail, Finding) for c in checks), [c.detail for c in checks]
