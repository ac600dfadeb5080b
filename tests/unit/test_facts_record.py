"""@frozen (facts/record.py) against @dataclass(frozen=True): the same instances, errors and
introspection, with dataclasses left unimported until something asks for it."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys

import pytest

from envcheck.verify.facts import model
from envcheck.verify.facts.record import field, field_names, frozen, replace


@frozen
class Probe:
    pid: int
    used_mib: int
    user: str = ""
    env: dict = field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Reference:
    pid: int
    used_mib: int
    user: str = ""
    env: dict = dataclasses.field(default_factory=dict)


def _same(fn_frozen: object, fn_reference: object) -> None:
    """Both raise the same TypeError text, but for the class name, or both return."""
    def outcome(fn: object) -> str:
        try:
            fn()  # type: ignore[operator]
        except TypeError as e:
            return str(e).replace("Probe.", "").replace("Reference.", "")
        return "ok"

    assert outcome(fn_frozen) == outcome(fn_reference)


def test_instances_equal_hash_and_repr_as_a_frozen_dataclass() -> None:
    a, r = Probe(1, 2, user="x"), Reference(1, 2, user="x")
    assert a == Probe(pid=1, used_mib=2, user="x") and a != Probe(1, 3)
    assert a != r and (a == (1, 2, "x", {})) is False
    assert repr(a).replace("Probe", "Reference") == repr(r)
    assert vars(a) == vars(r) and list(vars(a)) == ["pid", "used_mib", "user", "env"]
    assert Probe(1, 2).env is not Probe(1, 2).env  # a fresh dict each
    assert not hasattr(Probe, "env") and Probe.user == ""  # class attributes as dataclasses'
    gpu = model.Gpu(0, "u", "n", 1, 1, (8, 0), "b")
    assert hash(gpu) == hash(model.Gpu(0, "u", "n", 1, 1, (8, 0), "b"))
    assert Probe.__match_args__ == Reference.__match_args__ == field_names(Probe)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((1,), {}), ((), {}), ((1, 2, "x", {}, 5), {}), ((1, 2), {"pid": 3}),
     ((1, 2), {"bogus": 3}), ((), {"pid": 1, "used_mib": 2, "env": {}})],
)
def test_the_same_type_errors_as_a_dataclass(args: tuple, kwargs: dict) -> None:
    _same(lambda: Probe(*args, **kwargs), lambda: Reference(*args, **kwargs))


def test_frozen_and_introspected_by_dataclasses() -> None:
    facts = model.NodeFacts("h", 1, "u", "local", "", "3.11", "py", "linux-64", "2.35")
    for change in (lambda: setattr(facts, "host", "x"), lambda: delattr(facts, "host"),
                   lambda: setattr(facts, "other", 1)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            change()
    assert dataclasses.is_dataclass(facts) and dataclasses.is_dataclass(model.NodeFacts)
    assert [f.name for f in dataclasses.fields(facts)] == list(field_names(model.NodeFacts))
    fields = {f.name: f for f in dataclasses.fields(model.NodeFacts)}
    assert fields["packages"].default_factory is dict
    assert fields["host"].default is dataclasses.MISSING and fields["nccl_version"].default == ""
    assert model.NodeFacts.__dataclass_params__.frozen
    assert dataclasses.asdict(facts)["ucx"]["module"] == ""
    assert dataclasses.replace(facts, host="y").host == "y" == replace(facts, host="y").host
    assert pickle.loads(pickle.dumps(facts)) == facts == copy.deepcopy(facts)
    assert model.facts_from_dict(model.facts_to_dict(facts)) == facts


def test_a_class_body_keeps_its_own_methods_and_post_init_runs() -> None:
    seen = []

    @frozen
    class Own:
        a: int

        def __repr__(self) -> str:
            return "own"

        def __post_init__(self) -> None:
            seen.append(self.a)

    assert repr(Own(3)) == "own" and seen == [3]
    with pytest.raises(TypeError, match="follows default"):
        frozen(type("Bad", (), {"__annotations__": {"a": "int", "b": "int"}, "a": 1}))


def test_defining_the_model_imports_neither_dataclasses_nor_typing() -> None:
    code = "import sys, envcheck.verify.facts.model; print(sorted({'dataclasses', 'typing', " \
           "'inspect'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_envcheck_record_is_the_facts_source_without_the_facts_package() -> None:
    """envcheck.record loads facts/record.py by itself: the facts package is not imported,
    and its helpers work on the facts' records (made by the package's own load of the file)."""
    code = (
        "import sys, dataclasses\n"
        "import envcheck.record as r\n"
        "alone = 'envcheck.verify.facts' not in sys.modules\n"
        "from envcheck.verify.facts import NvLink\n"
        "from envcheck.verify.facts import record as facts_record\n"
        "same = r._record.__file__ == facts_record.__file__\n"
        "n = r.replace(NvLink(0, True, replay=1), replay=2)\n"
        "print(alone, same, n == NvLink(0, True, replay=2), r.field_names(NvLink)[:2],"
        " [f.name for f in dataclasses.fields(n)][:2])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "True True True ('link', 'up') ['link', 'up']", out
