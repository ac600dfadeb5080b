"""An option declared once: one field of a verb's Options, its flag, help, argparse type and
check beside it.

    @frozen
    @declared
    class NodeOptions:
        load_seconds: float = Option(4.0, type=float, metavar="S", check=values.seconds,
                                     help="seconds of copies per GPU (default %(default)g)")

``declared`` leaves each field a plain default (for ``@frozen`` or ``@dataclass``), keeps the
Options in ``cls.__options__`` and runs each field's check when an instance is made, before
the class's own ``__post_init__`` (the checks across fields). ``add_arguments`` makes the
argparse arguments of a class's options; ``from_args`` makes the Options from the parsed
ones. The command line and the Python API (api.py, whose keywords left at ``DEFAULT`` take
the field's default) build the same Options: one default, one check, one message.

Standard library only, no ``typing`` or ``dataclasses`` at run time (`verify node` starts
without them), Python 3.8.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    import argparse
    from typing import Any, Callable, TypeVar

    T = TypeVar("T", bound=type)

_ARGPARSE = ("type", "metavar", "choices", "action", "nargs", "help")


class _Default:
    """An API keyword not given: the Options field's default applies (api.py)."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT: Any = _Default()


class _Required:
    """An Option with no default: the argument must be given (a positional one, mostly)."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


class Option:
    """One field of a verb's Options: its ``default`` (``REQUIRED``: a field without one),
    its ``flag`` (``--`` and the field's name with dashes when not given; ``positional=True``
    for an argument), argparse's ``type``/``metavar``/``choices``/``action``/``nargs``/
    ``help``, the argument ``group``'s title, the ``exclusive`` group it shares with the
    options of the same key (argparse refuses two of them on one line), ``complete``, the
    values shell completion offers where argparse's ``choices`` list none (``--smoke a,b``),
    and ``check(value, said) -> value``, which validates and normalises the value the field
    holds, whichever way it came (``said``: how a message names the option)."""

    __slots__ = ("default", "flag", "positional", "group", "exclusive", "check", "argparse",
                 "name", "complete")

    def __init__(
        self, default: Any = None, *, flag: str | None = None, positional: bool = False,
        group: str | None = None, exclusive: str | None = None,
        check: Callable[[Any, str], Any] | None = None, complete: tuple[str, ...] = (),
        **argparse: Any,
    ) -> None:
        unknown = set(argparse) - set(_ARGPARSE)
        if unknown:
            raise TypeError(f"Option: unknown argparse keyword {', '.join(sorted(unknown))}")
        self.default, self.flag, self.positional = default, flag, positional
        self.group, self.exclusive, self.check, self.argparse = group, exclusive, check, argparse
        self.name = ""
        self.complete = complete

    @property
    def said(self) -> str:
        """How a message names the option: its flag; an argument its metavar (else its name as
        a flag); a flag that turns a field off (``--no-plugins``) the field's keyword."""
        if self.argparse.get("action") == "store_false":
            return self.name
        if self.positional:
            return self.argparse.get("metavar") or "--" + self.name.replace("_", "-")
        return self.flag or ""

    def arguments(self) -> tuple[tuple[str, ...], dict[str, Any]]:
        """``add_argument``'s positional and keyword arguments for this option."""
        kwargs = dict(self.argparse)
        repeated = kwargs.get("action") == "append"
        if self.default is not REQUIRED:
            kwargs["default"] = [] if repeated else self.default  # argparse copies to append
        if self.positional:
            return (self.name,), kwargs
        if self.default is REQUIRED:
            kwargs["required"] = True
        return (self.flag or "",), {"dest": self.name, **kwargs}

    def value(self, given: Any) -> Any:
        """The parsed argument as the field takes it (a repeated flag's list as a tuple)."""
        return tuple(given) if isinstance(given, list) else given


def declared(cls: T) -> T:
    """The class with its Option attributes as plain defaults and their checks run on every
    instance; apply it under ``@frozen`` / ``@dataclass(frozen=True)``."""
    options: dict[str, Option] = {}
    for name in cls.__dict__.get("__annotations__", {}):
        declared_ = cls.__dict__.get(name)
        if isinstance(declared_, Option):
            declared_.name = name
            if declared_.flag is None and not declared_.positional:
                declared_.flag = "--" + name.replace("_", "-")
            options[name] = declared_
            if declared_.default is REQUIRED:
                delattr(cls, name)  # a field without a default
            else:
                setattr(cls, name, declared_.default)
    own = cls.__dict__.get("__post_init__")

    def __post_init__(self: Any) -> None:
        for name, option in options.items():
            if option.check is not None:
                object.__setattr__(self, name, option.check(getattr(self, name), option.said))
        if own is not None:
            own(self)

    cls.__options__ = options
    cls.__post_init__ = __post_init__
    return cls


def add_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """The argparse arguments of ``cls``'s options, each group's under its title."""
    groups: dict[str, Any] = {}
    exclusive: dict[str, Any] = {}
    for option in cls.__options__.values():
        where = parser
        if option.group:
            if option.group not in groups:
                groups[option.group] = parser.add_argument_group(option.group)
            where = groups[option.group]
        if option.exclusive:
            if option.exclusive not in exclusive:
                exclusive[option.exclusive] = where.add_mutually_exclusive_group()
            where = exclusive[option.exclusive]
        args, kwargs = option.arguments()
        action = where.add_argument(*args, **kwargs)
        if option.complete:  # what shell completion offers (envcheck.completion)
            action.complete = option.complete  # type: ignore[attr-defined]


def from_args(cls: type, args: argparse.Namespace, **given: Any) -> Any:
    """``cls`` from the parsed arguments; ``given`` holds the fields no flag of the verb sets
    (the expectations, --debug) and those the command reads from more than one flag."""
    fields = {name: option.value(getattr(args, name)) for name, option in cls.__options__.items()}
    return cls(**{**fields, **given})


def command(
    cls: type, pipeline: Callable[[Any], Any],
    extra: Callable[[argparse.Namespace], dict[str, Any]] | None = None,
) -> tuple[Callable[..., None], Callable[..., Any], Callable[..., Any]]:
    """A verb's command module for Options ``cls`` and its ``pipeline``: ``add_arguments``
    (the flags ``cls`` declares), ``options_from_args`` (``cls`` from them, with ``extra(args)``:
    the fields no flag of the verb sets) and ``run`` (the pipeline's Report)."""

    def add_arguments_(parser: argparse.ArgumentParser) -> None:
        add_arguments(parser, cls)

    def options_from_args(args: argparse.Namespace) -> Any:
        return from_args(cls, args, **(extra(args) if extra else {}))

    def run(args: argparse.Namespace) -> Any:
        return pipeline(options_from_args(args))

    return add_arguments_, options_from_args, run


def given(cls: type, keywords: dict[str, Any], **renamed: Any) -> dict[str, Any]:
    """The API keywords that name ``cls``'s options and were given (not ``DEFAULT``), with
    ``renamed`` (field -> value) for those whose keyword is not the field's name."""
    out = {name: keywords[name] for name in cls.__options__ if name in keywords}
    out.update(renamed)
    return {name: value for name, value in out.items() if value is not DEFAULT}
