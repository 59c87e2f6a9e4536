"""Bridle for Python: LLM replies that obey a contract.

- The contract core, in-process (Rust, through PyO3): `check`, `repair`, `prompt`,
  `contracts`, `Contract`, `StreamCheck`.
- A closed loop for any OpenAI-compatible client: `complete`, `acomplete`, `complete_stream`,
  `acomplete_stream`.
- A client for the Bridle gateway's native and admin API: `Client`, `AsyncClient`.

See docs/python.md in the repository for the whole API.
"""

from bridle._native import (
    MAX_FEEDBACK_CHARS,
    MAX_FEEDBACK_ITEMS,
    BridleError,
    Checked,
    Contract,
    ContractError,
    Repair,
    RepairError,
    StreamCheck,
    StreamEvent,
    Violation,
    check,
    contracts,
    load_contracts,
    prompt,
    repair,
)
from bridle._complete import (
    Attempt,
    Completion,
    ContractUnmet,
    Event,
    acomplete,
    acomplete_stream,
    complete,
    complete_stream,
)
from bridle._client import (
    ApiError,
    AsyncClient,
    Client,
    ContractInfo,
    Conversation,
    HistoryMessage,
    Page,
    Turn,
)

__version__ = "0.1.0"

__all__ = [
    "MAX_FEEDBACK_CHARS",
    "MAX_FEEDBACK_ITEMS",
    "ApiError",
    "AsyncClient",
    "Attempt",
    "BridleError",
    "Checked",
    "Client",
    "Completion",
    "Contract",
    "ContractError",
    "ContractInfo",
    "ContractUnmet",
    "Conversation",
    "Event",
    "HistoryMessage",
    "Page",
    "Repair",
    "RepairError",
    "StreamCheck",
    "StreamEvent",
    "Turn",
    "Violation",
    "acomplete",
    "acomplete_stream",
    "check",
    "complete",
    "complete_stream",
    "contracts",
    "load_contracts",
    "prompt",
    "repair",
]
