//! `bridle._native`: Bridle's contract core ([`bridle_core`]) as a Python extension module, the
//! engine room of the `bridle` Python package. Its principal type is [`contract::PyContract`]
//! (`bridle.Contract`); [`checked::PyChecked`] is what a check returns and
//! [`stream::PyStreamCheck`] checks a reply while it streams in.
//!
//! Everything here is a thin layer: the core decides, this module converts. Nothing is
//! reimplemented (there is no Python fallback); the Python side (`python/bridle/`) adds the
//! closed loop for OpenAI clients and the gateway client on top.

mod checked;
mod contract;
mod convert;
mod stream;

use bridle_core::{Contracts, RootHint};
use checked::{PyChecked, PyRepair, PyViolation};
use contract::PyContract;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use stream::{PyStreamCheck, PyStreamEvent};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

create_exception!(
    bridle,
    BridleError,
    PyException,
    "Base class of every error the bridle package raises."
);
create_exception!(
    bridle,
    ContractError,
    BridleError,
    "A contract that cannot be loaded or found, or a schema that does not compile."
);
create_exception!(
    bridle,
    RepairError,
    BridleError,
    "A reply that cannot be repaired into JSON (cut off, two answers, no JSON at all)."
);

/// The built-in contracts, loaded once.
fn builtin() -> PyResult<&'static Contracts> {
    static BUILTIN: OnceLock<Result<Contracts, String>> = OnceLock::new();
    BUILTIN
        .get_or_init(|| Contracts::builtin().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|message| ContractError::new_err(message.clone()))
}

/// `check(text, contract=None, *, schema=None, context=None)`: repair, parse, validate.
#[pyfunction]
#[pyo3(signature = (text, contract = None, *, schema = None, context = None))]
fn check(
    py: Python<'_>,
    text: &str,
    contract: Option<&Bound<'_, PyAny>>,
    schema: Option<&Bound<'_, PyAny>>,
    context: Option<BTreeMap<String, String>>,
) -> PyResult<PyChecked> {
    let contract = contract::resolve(py, contract, schema)?;
    contract.check_text(py, text, context)
}

/// `repair(text, *, contract=None)`: the reply repaired into JSON text; raises `RepairError`
/// when no JSON can be read from it.
#[pyfunction]
#[pyo3(signature = (text, *, contract = None))]
fn repair(py: Python<'_>, text: &str, contract: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
    let hint = match contract {
        Some(c) => contract::resolve(py, Some(c), None)?
            .inner
            .schema()
            .root_hint(),
        None => RootHint::Any,
    };
    let repaired = py.detach(|| bridle_core::repair(text, hint));
    if let Some(truncation) = repaired.truncated {
        return Err(RepairError::new_err(format!(
            "the reply was cut off at {}: {}",
            display_path(&truncation.path),
            truncation.message
        )));
    }
    if let Some(ambiguity) = repaired.ambiguous {
        return Err(RepairError::new_err(ambiguity.message));
    }
    if !repaired.found_json {
        return Err(RepairError::new_err("the reply holds no JSON value"));
    }
    if let Err(e) = serde_json::from_str::<serde_json::Value>(&repaired.text) {
        return Err(RepairError::new_err(format!(
            "the reply is not JSON even after repair: {e}"
        )));
    }
    Ok(repaired.text)
}

fn display_path(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the root"
    } else {
        pointer
    }
}

/// `prompt(contract, context=None)`: the contract's instructions for the system prompt.
#[pyfunction]
#[pyo3(signature = (contract, context = None))]
fn prompt(
    py: Python<'_>,
    contract: &Bound<'_, PyAny>,
    context: Option<BTreeMap<String, String>>,
) -> PyResult<String> {
    let contract = contract::resolve(py, Some(contract), None)?;
    Ok(contract.inner.instructions(&convert::context(context)))
}

/// `contracts()`: the built-in contracts, ordered by name.
#[pyfunction]
fn contracts() -> PyResult<Vec<PyContract>> {
    Ok(builtin()?
        .iter()
        .map(|c| PyContract::new(c.clone(), None))
        .collect())
}

/// `load_contracts(path)`: every contract in a directory (one contract, or one per
/// subdirectory), by name.
#[pyfunction]
fn load_contracts<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let mut set = Contracts::new();
    set.load_dir(&path)
        .map_err(|e| ContractError::new_err(e.to_string()))?;
    let out = PyDict::new(py);
    for contract in set.iter() {
        out.set_item(contract.name(), PyContract::new(contract.clone(), None))?;
    }
    Ok(out)
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add_class::<PyContract>()?;
    module.add_class::<PyChecked>()?;
    module.add_class::<PyViolation>()?;
    module.add_class::<PyRepair>()?;
    module.add_class::<PyStreamCheck>()?;
    module.add_class::<PyStreamEvent>()?;
    module.add_function(wrap_pyfunction!(check, module)?)?;
    module.add_function(wrap_pyfunction!(repair, module)?)?;
    module.add_function(wrap_pyfunction!(prompt, module)?)?;
    module.add_function(wrap_pyfunction!(contracts, module)?)?;
    module.add_function(wrap_pyfunction!(load_contracts, module)?)?;
    module.add("BridleError", py.get_type::<BridleError>())?;
    module.add("ContractError", py.get_type::<ContractError>())?;
    module.add("RepairError", py.get_type::<RepairError>())?;
    module.add("MAX_FEEDBACK_CHARS", bridle_core::MAX_FEEDBACK_CHARS)?;
    module.add("MAX_FEEDBACK_ITEMS", bridle_core::MAX_FEEDBACK_ITEMS)?;
    Ok(())
}
