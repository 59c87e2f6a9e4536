//! [`PyContract`] (`bridle.Contract`): a loaded contract — a built-in one, a directory, an ad-hoc
//! JSON Schema or a Pydantic model's schema — with its check, instructions and feedback; and
//! [`resolve`], which turns what a caller passed (a name, a `Contract`, a schema) into one.

use crate::checked::{PyChecked, PyViolation, model_checked};
use crate::convert;
use crate::{ContractError, builtin};
use bridle_core::{Contract, Contracts, ToolCall};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// A contract, and the Pydantic model it was made from (if any).
#[pyclass(name = "Contract", module = "bridle", frozen)]
#[derive(Debug)]
pub struct PyContract {
    pub(crate) inner: Arc<Contract>,
    pub(crate) model: Option<Py<PyAny>>,
}

impl PyContract {
    pub(crate) fn new(inner: Arc<Contract>, model: Option<Py<PyAny>>) -> Self {
        Self { inner, model }
    }

    /// A new handle on the same contract.
    pub(crate) fn share(&self, py: Python<'_>) -> Self {
        Self::new(
            self.inner.clone(),
            self.model.as_ref().map(|m| m.clone_ref(py)),
        )
    }

    /// Checks `text` (the GIL released meanwhile), then the Pydantic model if there is one.
    pub(crate) fn check_text(
        &self,
        py: Python<'_>,
        text: &str,
        context: Option<BTreeMap<String, String>>,
    ) -> PyResult<PyChecked> {
        let context = convert::context(context);
        let inner = &self.inner;
        let checked = py.detach(|| inner.check(text, &context));
        model_checked(py, self, checked)
    }

    fn from_schema_text(name: &str, text: &str) -> PyResult<Self> {
        Contract::from_schema_text(name, text)
            .map(|c| Self::new(Arc::new(c), None))
            .map_err(|e| ContractError::new_err(e.to_string()))
    }
}

/// The contract a call names: `contract` (a `Contract` or a built-in's name) or `schema`.
pub(crate) fn resolve(
    py: Python<'_>,
    contract: Option<&Bound<'_, PyAny>>,
    schema: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyContract> {
    match (contract, schema) {
        (Some(_), Some(_)) => Err(PyTypeError::new_err(
            "give either a contract or a schema, not both",
        )),
        (None, None) => Err(PyTypeError::new_err("a contract or a schema is required")),
        (None, Some(schema)) => {
            PyContract::from_schema_text("schema", &convert::schema_text(schema)?)
        }
        (Some(given), None) => {
            if let Ok(contract) = given.cast::<PyContract>() {
                return Ok(contract.get().share(py));
            }
            if let Ok(name) = given.cast::<PyString>() {
                return by_name(name.to_str()?);
            }
            if given.is_instance_of::<PyType>() && given.hasattr("model_json_schema")? {
                return PyContract::from_pydantic(given);
            }
            Err(PyTypeError::new_err(
                "contract must be a bridle.Contract, a built-in contract's name or a Pydantic model class",
            ))
        }
    }
}

fn by_name(name: &str) -> PyResult<PyContract> {
    builtin()?
        .get(name)
        .map(|c| PyContract::new(c, None))
        .map_err(|e| ContractError::new_err(e.to_string()))
}

#[pymethods]
impl PyContract {
    /// The built-in contract called `name`.
    #[staticmethod]
    fn builtin(name: &str) -> PyResult<Self> {
        by_name(name)
    }

    /// The contract in directory `path` (its `manifest.toml` and schema files).
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<Self> {
        let mut set = Contracts::new();
        let names = set
            .load_dir(&path)
            .map_err(|e| ContractError::new_err(e.to_string()))?;
        match names.as_slice() {
            [name] => by_name_in(&set, name),
            _ => Err(ContractError::new_err(format!(
                "{} holds {} contracts ({}); load them with bridle.load_contracts",
                path.display(),
                names.len(),
                names.join(", ")
            ))),
        }
    }

    /// A contract made from a JSON Schema (a dict, or its JSON text): no rules, no fallback.
    #[staticmethod]
    #[pyo3(signature = (schema, name = "schema"))]
    fn from_schema(schema: &Bound<'_, PyAny>, name: &str) -> PyResult<Self> {
        Self::from_schema_text(name, &convert::schema_text(schema)?)
    }

    /// A contract made from a Pydantic model class (its `model_json_schema()`); checked values
    /// are then instances of the model.
    #[staticmethod]
    fn from_pydantic(model: &Bound<'_, PyAny>) -> PyResult<Self> {
        if !model.hasattr("model_json_schema")? {
            return Err(PyTypeError::new_err(
                "from_pydantic takes a Pydantic model class (pydantic.BaseModel subclass)",
            ));
        }
        let schema = model.call_method0("model_json_schema")?;
        let name: String = model.getattr("__name__")?.extract()?;
        let mut contract = Self::from_schema_text(&name, &convert::schema_text(&schema)?)?;
        contract.model = Some(model.clone().unbind());
        Ok(contract)
    }

    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    #[getter]
    fn version(&self) -> String {
        self.inner.version().to_string()
    }

    /// `json`, `xml`, `markers` or `text`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind().as_str()
    }

    #[getter]
    fn description(&self) -> &str {
        self.inner.description()
    }

    #[getter]
    fn origin(&self) -> &str {
        self.inner.origin()
    }

    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::to_py(py, self.inner.schema().raw())
    }

    #[getter]
    fn example<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .example()
            .map(|v| convert::to_py(py, v))
            .transpose()
    }

    /// The Pydantic model class the contract was made from, or `None`.
    #[getter]
    fn model(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.model.as_ref().map(|m| m.clone_ref(py))
    }

    #[getter]
    fn has_fallback(&self) -> bool {
        self.inner.has_fallback()
    }

    /// The text for the system prompt.
    #[pyo3(signature = (context = None))]
    fn instructions(&self, context: Option<BTreeMap<String, String>>) -> String {
        self.inner.instructions(&convert::context(context))
    }

    /// Checks a raw reply.
    #[pyo3(signature = (text, context = None))]
    fn check(
        &self,
        py: Python<'_>,
        text: &str,
        context: Option<BTreeMap<String, String>>,
    ) -> PyResult<PyChecked> {
        self.check_text(py, text, context)
    }

    /// Checks a reply together with the tool calls it made (`[{"id", "name", "arguments"}]`,
    /// arguments as JSON text or as a dict).
    #[pyo3(signature = (text, tool_calls, context = None))]
    fn check_reply(
        &self,
        py: Python<'_>,
        text: &str,
        tool_calls: Vec<Bound<'_, PyAny>>,
        context: Option<BTreeMap<String, String>>,
    ) -> PyResult<PyChecked> {
        let calls = tool_calls
            .iter()
            .map(tool_call)
            .collect::<PyResult<Vec<_>>>()?;
        let context = convert::context(context);
        let inner = &self.inner;
        let checked = py.detach(|| inner.check_reply(text, &calls, &context));
        model_checked(py, self, checked)
    }

    /// The function tools to offer the model (OpenAI `tools` entries); empty for most contracts.
    #[pyo3(signature = (context = None))]
    fn tools<'py>(
        &self,
        py: Python<'py>,
        context: Option<BTreeMap<String, String>>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        self.inner
            .tools(&convert::context(context))
            .iter()
            .map(|t| convert::to_py(py, t))
            .collect()
    }

    /// Validates an already parsed value (schema, then declared rules).
    fn validate(&self, value: &Bound<'_, PyAny>) -> PyResult<Vec<PyViolation>> {
        let value = convert::from_py(value)?;
        Ok(self
            .inner
            .validate(&value)
            .iter()
            .map(PyViolation::from)
            .collect())
    }

    /// The retry message for a failed check (empty for a valid one).
    fn feedback(&self, checked: &PyChecked) -> String {
        self.inner.feedback(checked.core())
    }

    /// The reply text a model would write for `value`.
    fn reply_text(&self, value: &Bound<'_, PyAny>) -> PyResult<String> {
        Ok(self.inner.reply_text(&convert::from_py(value)?))
    }

    /// The contract's fallback reply given the values of the failed attempts, or `None`.
    #[pyo3(signature = (attempts = Vec::new()))]
    fn fallback<'py>(
        &self,
        py: Python<'py>,
        attempts: Vec<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let values = attempts
            .iter()
            .map(convert::from_py)
            .collect::<PyResult<Vec<_>>>()?;
        let refs: Vec<&serde_json::Value> = values.iter().collect();
        self.inner
            .fallback(&refs)
            .map(|v| convert::to_py(py, &v))
            .transpose()
    }

    fn __repr__(&self) -> String {
        format!(
            "<bridle.Contract {:?} {} v{} ({})>",
            self.inner.name(),
            self.inner.kind().as_str(),
            self.inner.version(),
            self.inner.origin()
        )
    }
}

fn by_name_in(set: &Contracts, name: &str) -> PyResult<PyContract> {
    set.get(name)
        .map(|c| PyContract::new(c, None))
        .map_err(|e| ContractError::new_err(e.to_string()))
}

/// One tool call given as a dict `{"id"?, "name", "arguments"}` (OpenAI's `function` fields
/// flattened; `arguments` JSON text or an object).
pub(crate) fn tool_call(call: &Bound<'_, PyAny>) -> PyResult<ToolCall> {
    let call = match call.get_item("function") {
        Ok(function) => {
            let id: String = call
                .get_item("id")
                .ok()
                .and_then(|i| i.extract().ok())
                .unwrap_or_default();
            return tool_call(&function).map(|c| c.with_id(id));
        }
        Err(_) => call,
    };
    let name: String = call.get_item("name")?.extract()?;
    let arguments = call.get_item("arguments")?;
    let made = match arguments.cast::<PyString>() {
        Ok(text) => ToolCall::from_text(name, text.to_str()?),
        Err(_) => ToolCall::new(name, convert::from_py(&arguments)?),
    };
    let id: String = call
        .get_item("id")
        .ok()
        .and_then(|i| i.extract().ok())
        .unwrap_or_default();
    Ok(made.with_id(id))
}
