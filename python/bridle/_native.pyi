"""Type stubs of `bridle._native`, the Rust core (python/src/*.rs). Everything here is
re-exported by `bridle`."""

from os import PathLike
from typing import Any, Mapping, Sequence

MAX_FEEDBACK_CHARS: int
MAX_FEEDBACK_ITEMS: int

class BridleError(Exception):
    """Base class of every error the bridle package raises."""

class ContractError(BridleError):
    """A contract that cannot be loaded or found, or a schema that does not compile."""

class RepairError(BridleError):
    """A reply that cannot be repaired into JSON."""

class Violation:
    """One way a reply breaks its contract."""

    @property
    def path(self) -> str:
        """JSON pointer into the value (`""`: the whole reply)."""
    @property
    def rule(self) -> str:
        """The rule broken: a JSON Schema keyword (`required`, `enum`, …), a declared rule
        (`unique`, `less_than`, `implies`), a parse-stage rule (`parse`, `truncated`, …), or a
        Pydantic error type (`value_error`, …) for a model's own validators."""
    @property
    def message(self) -> str:
        """What is wrong, in words."""
    def to_dict(self) -> dict[str, str]: ...

class Repair:
    """One named change made so that a reply could be read."""

    @property
    def kind(self) -> str:
        """`code_fence`, `surrounding_prose`, `trailing_comma`, `python_literal`, … or a
        coercion (`wrap_string`, `rename_key`)."""
    @property
    def count(self) -> int: ...
    @property
    def message(self) -> str: ...
    @property
    def path(self) -> str | None:
        """Where, for a change to the parsed value (a coercion); `None` for the text."""
    def to_dict(self) -> dict[str, Any]: ...

class Checked:
    """The outcome of checking one reply."""

    @property
    def valid(self) -> bool:
        """True when the reply meets the contract (possibly after repairs)."""
    @property
    def value(self) -> Any:
        """The parsed, repaired, coerced value (`None` when the reply could not be read); the
        Pydantic model's instance when the contract came from a model and the reply is valid.
        Converted on first access, then the same object each time."""
    @property
    def violations(self) -> list[Violation]: ...
    @property
    def repairs(self) -> list[Repair]: ...
    @property
    def contract(self) -> str:
        """The name of the contract checked against."""
    def feedback(self) -> str:
        """The bounded retry message the gateway sends for this reply (empty when valid)."""
    def to_dict(self) -> dict[str, Any]:
        """`{valid, contract, value, violations, repairs}` as plain JSON values."""

class Contract:
    """A loaded contract: built-in, from a directory, a JSON Schema or a Pydantic model."""

    @staticmethod
    def builtin(name: str) -> Contract: ...
    @staticmethod
    def load(path: str | PathLike[str]) -> Contract:
        """The contract in a directory (`manifest.toml` and its schema files)."""
    @staticmethod
    def from_schema(schema: Mapping[str, Any] | str, name: str = "schema") -> Contract:
        """A contract from a JSON Schema (a dict, or its JSON text)."""
    @staticmethod
    def from_pydantic(model: type) -> Contract:
        """A contract from a Pydantic model class; checked values are the model's instances."""
    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def kind(self) -> str:
        """`json`, `xml`, `markers` or `text`."""
    @property
    def description(self) -> str: ...
    @property
    def origin(self) -> str:
        """`builtin:NAME`, a directory, or `schema:NAME`."""
    @property
    def schema(self) -> dict[str, Any]: ...
    @property
    def example(self) -> Any: ...
    @property
    def model(self) -> type | None: ...
    @property
    def has_fallback(self) -> bool: ...
    def instructions(self, context: Mapping[str, str] | None = None) -> str: ...
    def check(self, text: str, context: Mapping[str, str] | None = None) -> Checked: ...
    def check_reply(self, text: str, tool_calls: Sequence[Mapping[str, Any]],
                    context: Mapping[str, str] | None = None) -> Checked: ...
    def tools(self, context: Mapping[str, str] | None = None) -> list[dict[str, Any]]: ...
    def validate(self, value: Any) -> list[Violation]: ...
    def feedback(self, checked: Checked) -> str: ...
    def reply_text(self, value: Any) -> str: ...
    def fallback(self, attempts: Sequence[Any] = ...) -> Any: ...

class StreamEvent:
    """What a streaming reply produced: `text_delta` `{text}`, `partial` `{value}`,
    `suggestions`, `payload`, or `aborted` `{violations}`."""

    @property
    def type(self) -> str: ...
    @property
    def data(self) -> dict[str, Any]: ...

class StreamCheck:
    """A reply checked while it streams in, one delta at a time."""

    def __init__(self, contract: Contract | str, context: Mapping[str, str] | None = None, *,
                 partials: bool = True) -> None: ...
    def push(self, delta: str) -> list[StreamEvent]: ...
    def finish(self, tool_calls: Sequence[Mapping[str, Any]] | None = None) -> Checked: ...
    @property
    def released(self) -> list[StreamEvent]:
        """Events `finish()` released (text held back for question cards or markers)."""
    @property
    def raw(self) -> str: ...
    @property
    def aborted(self) -> bool: ...

def check(text: str, contract: Contract | str | type | None = None, *,
          schema: Mapping[str, Any] | str | None = None,
          context: Mapping[str, str] | None = None) -> Checked: ...
def repair(text: str, *, contract: Contract | str | None = None) -> str: ...
def prompt(contract: Contract | str | type, context: Mapping[str, str] | None = None) -> str: ...
def contracts() -> list[Contract]: ...
def load_contracts(path: str | PathLike[str]) -> dict[str, Contract]: ...
