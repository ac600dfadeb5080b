"""frozen: frozen dataclasses without dataclasses' cost at import.

`@dataclass(frozen=True)` compiles six methods per class from generated source, and it
imports `dataclasses` and with it `inspect`. `@frozen` gives a class the same methods as
shared closures over its field names, compiled once with this module:

- ``__init__`` takes the fields positionally or by keyword, in order, with their defaults
  (``field(default_factory=...)`` for a fresh dict per instance); the same TypeErrors for a
  missing, repeated or unknown argument; ``__post_init__`` is called where the class has one
- ``__eq__`` and ``__hash__`` over the tuple of fields, for instances of the same class only
- ``__repr__`` as a dataclass's: ``Name(a=1, b='x')``
- assigning or deleting an attribute raises ``dataclasses.FrozenInstanceError``
- pickling and copying as any frozen dataclass (the state is the instance's ``__dict__``)

``dataclasses.fields``, ``asdict``, ``astuple``, ``replace`` and ``is_dataclass`` work on
these classes and their instances: ``__dataclass_fields__`` and ``__dataclass_params__`` are
made by dataclasses itself, from the same annotations and defaults, the first time anything
asks for them. No base classes, no field options beyond default_factory.

Standard library only, Python 3.8+: this module lives in the facts package, which is shipped
by source and imports nothing from envcheck; envcheck/record.py loads this same file for the
rest of envcheck, without importing the facts package.
"""

from __future__ import annotations

from operator import attrgetter

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    T = TypeVar("T", bound=type)


class _Factory:
    """A field's default made per instance (dataclasses' field(default_factory=...))."""

    __slots__ = ("factory",)

    def __init__(self, factory: Callable[[], Any]) -> None:
        self.factory = factory


def field(*, default_factory: Callable[[], Any]) -> Any:
    """A default made fresh for each instance: ``env: dict = field(default_factory=dict)``."""
    return _Factory(default_factory)


class _Introspection:
    """``__dataclass_fields__`` / ``__dataclass_params__``, made by dataclasses on first use."""

    def __init__(self, attr: str, namespace: dict[str, Any]) -> None:
        self.attr = attr
        self.namespace = namespace  # the class's annotations and defaults, as dataclass saw them

    def __get__(self, obj: object, owner: type) -> Any:
        import dataclasses

        shadow = dataclasses.dataclass(frozen=True)(
            type(owner.__name__, (), {**self._namespace(), "__module__": owner.__module__})
        )
        for attr in ("__dataclass_fields__", "__dataclass_params__"):
            setattr(owner, attr, getattr(shadow, attr))  # the class keeps them
        return getattr(owner, self.attr)

    def _namespace(self) -> dict[str, Any]:
        import dataclasses

        return {
            name: dataclasses.field(default_factory=value.factory)
            if isinstance(value, _Factory) else value
            for name, value in self.namespace.items()
        }


def frozen(cls: T) -> T:
    """The class as ``@dataclass(frozen=True)`` would make it (see the module's docstring)."""
    if cls.__bases__ != (object,):
        raise TypeError(f"@frozen {cls.__name__}: a record class has no base class")
    annotations = cls.__dict__.get("__annotations__", {})
    names = tuple(annotations)
    defaults: dict[str, Any] = {}
    factories: dict[str, Callable[[], Any]] = {}
    namespace: dict[str, Any] = {"__annotations__": dict(annotations)}
    for name in names:
        if name not in cls.__dict__:
            if defaults or factories:
                raise TypeError(f"non-default argument {name!r} follows default argument")
            continue
        value = cls.__dict__[name]
        if isinstance(value, _Factory):
            factories[name] = value.factory
            delattr(cls, name)  # as dataclasses: no class attribute for a factory's field
            namespace[name] = value
        elif isinstance(value, (list, dict, set)):
            raise ValueError(f"mutable default {type(value)} for field {name} is not allowed: "
                             "use default_factory")
        else:
            defaults[name] = namespace[name] = value
    methods = {
        "__init__": _init(cls, names, defaults, factories),
        "__repr__": _repr(names),
        "__eq__": _eq(names),
        "__hash__": _hash(names),
    }
    for name, method in methods.items():
        if cls.__dict__.get(name) is None:  # a class's own methods stay
            method.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, method)
    if "__setattr__" in cls.__dict__ or "__delattr__" in cls.__dict__:
        raise TypeError(f"cannot overwrite attribute __setattr__ in class {cls.__name__}")
    cls.__setattr__, cls.__delattr__ = _frozen_attributes(cls, frozenset(names))
    cls.__match_args__ = names
    cls.__replace__ = _replace
    for attr in ("__dataclass_fields__", "__dataclass_params__"):
        setattr(cls, attr, _Introspection(attr, namespace))
    return cls


def _init(
    cls: type, names: tuple[str, ...], defaults: dict[str, Any],
    factories: dict[str, Callable[[], Any]],
) -> Callable[..., None]:
    count = len(names)
    takes = _takes(count + 1 - len(defaults) - len(factories), count + 1)
    post_init = getattr(cls, "__post_init__", None) is not None

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if args:
            if len(args) > count:
                raise TypeError(f"{cls.__qualname__}.__init__() takes {takes} but "
                                f"{len(args) + 1} were given")
            for name, value in zip(names, args):
                if name in kwargs:
                    raise TypeError(f"{cls.__qualname__}.__init__() got multiple values for "
                                    f"argument {name!r}")
                kwargs[name] = value
        values = {}
        missing = []
        given = 0
        for name in names:
            if name in kwargs:
                values[name] = kwargs[name]
                given += 1
            elif name in defaults:
                values[name] = defaults[name]
            elif name in factories:
                values[name] = factories[name]()
            else:
                missing.append(name)
        if given < len(kwargs):
            unknown = next(k for k in kwargs if k not in values)
            raise TypeError(f"{cls.__qualname__}.__init__() got an unexpected keyword argument "
                            f"{unknown!r}")
        if missing:
            raise TypeError(_missing_message(cls, missing))
        self.__dict__.update(values)
        if post_init:
            self.__post_init__()

    return __init__


def _takes(least: int, most: int) -> str:
    """Python's own words for how many positional arguments a function takes."""
    if least == most:
        return f"{most} positional argument{'s' if most > 1 else ''}"
    return f"from {least} to {most} positional arguments"


def _missing_message(cls: type, missing: list[str]) -> str:
    quoted = [repr(name) for name in missing]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]
    plural = "s" if len(missing) > 1 else ""
    return (f"{cls.__qualname__}.__init__() missing {len(missing)} required positional "
            f"argument{plural}: {listed}")


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda self: (one(self),)
    return attrgetter(*names) if names else lambda self: ()


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        inner = ", ".join([f"{name}={getattr(self, name)!r}" for name in names])
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


def _eq(names: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    values = _values(names)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(names: tuple[str, ...]) -> Callable[[Any], int]:
    values = _values(names)

    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _frozen_attributes(
    cls: type, names: frozenset[str]
) -> tuple[Callable[[Any, str, Any], None], Callable[[Any, str], None]]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            from dataclasses import FrozenInstanceError

            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    return __setattr__, __delattr__


def field_names(cls: type) -> tuple[str, ...]:
    """The fields of a @frozen class, in order (dataclasses.fields' names, without importing
    dataclasses)."""
    return cls.__match_args__  # type: ignore[attr-defined]


def _replace(self: Any, /, **changes: Any) -> Any:
    """copy.replace (Python 3.13+), as a dataclass has it."""
    return replace(self, **changes)


def replace(obj: Any, **changes: Any) -> Any:
    """dataclasses.replace for a @frozen instance, without importing dataclasses."""
    return obj.__class__(**{**obj.__dict__, **changes})
