//! [`PyChecked`] (`bridle.Checked`): the outcome of checking one reply — `valid`, `value`,
//! `violations` ([`PyViolation`]), `repairs` ([`PyRepair`]) and `feedback()`; and
//! [`model_checked`], which runs a Pydantic model's own validation after the contract's.
//!
//! The value is converted to Python objects on first access, not by the check: a caller that
//! only asks `valid` pays for no conversion.

use crate::contract::PyContract;
use crate::convert;
use bridle_core::{Checked, Contract, Repair, Rule, Violation};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use std::sync::Arc;

/// One way a reply breaks its contract.
#[pyclass(name = "Violation", module = "bridle", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct PyViolation {
    /// JSON pointer into the value (`""`: the whole reply).
    pub path: String,
    /// The rule broken (`required`, `enum`, `parse`, `truncated`, `unique`, …).
    pub rule: String,
    /// What is wrong, in words.
    pub message: String,
}

impl From<&Violation> for PyViolation {
    fn from(v: &Violation) -> Self {
        Self {
            path: v.path.clone(),
            rule: v.rule.as_str().to_owned(),
            message: v.message.clone(),
        }
    }
}

#[pymethods]
impl PyViolation {
    pub(crate) fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        out.set_item("path", &self.path)?;
        out.set_item("rule", &self.rule)?;
        out.set_item("message", &self.message)?;
        Ok(out)
    }

    fn __repr__(&self) -> String {
        format!(
            "Violation(path={:?}, rule={:?}, message={:?})",
            self.path, self.rule, self.message
        )
    }
}

/// One named change made so that a reply could be read.
#[pyclass(name = "Repair", module = "bridle", frozen, get_all)]
#[derive(Debug, Clone)]
pub struct PyRepair {
    /// `code_fence`, `trailing_comma`, `python_literal`, … or a coercion (`wrap_string`, …).
    pub kind: String,
    /// How many times it was applied.
    pub count: u32,
    /// What was changed, in words.
    pub message: String,
    /// Where, for a change to the parsed value (a coercion); `None` for the text.
    pub path: Option<String>,
}

impl From<&Repair> for PyRepair {
    fn from(r: &Repair) -> Self {
        Self {
            kind: r.kind.as_str().to_owned(),
            count: r.count,
            message: r.message.clone(),
            path: r.path.clone(),
        }
    }
}

#[pymethods]
impl PyRepair {
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        out.set_item("kind", &self.kind)?;
        if let Some(path) = &self.path {
            out.set_item("path", path)?;
        }
        out.set_item("count", self.count)?;
        out.set_item("message", &self.message)?;
        Ok(out)
    }

    fn __repr__(&self) -> String {
        format!(
            "Repair(kind={:?}, count={}, message={:?})",
            self.kind, self.count, self.message
        )
    }
}

/// The outcome of a check.
#[pyclass(name = "Checked", module = "bridle", frozen)]
pub struct PyChecked {
    contract: Arc<Contract>,
    checked: Checked,
    /// The value as Python objects, made on first access (the model instance when there is one).
    value: PyOnceLock<Py<PyAny>>,
}

impl std::fmt::Debug for PyChecked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PyChecked")
            .field("contract", &self.contract.name())
            .field("checked", &self.checked)
            .finish_non_exhaustive()
    }
}

impl PyChecked {
    pub(crate) fn core(&self) -> &Checked {
        &self.checked
    }
}

/// `checked` as a `Checked`; when the contract came from a Pydantic model and the reply met the
/// schema, the model validates it too: its instance becomes the value, or its errors become
/// violations (rule: Pydantic's error type, path: the error's location).
pub(crate) fn model_checked(
    py: Python<'_>,
    contract: &PyContract,
    mut checked: Checked,
) -> PyResult<PyChecked> {
    let value = PyOnceLock::new();
    if let (Some(model), Some(parsed)) = (&contract.model, &checked.value)
        && checked.violations.is_empty()
    {
        let plain = convert::to_py(py, parsed)?;
        match model.bind(py).call_method1("model_validate", (plain,)) {
            Ok(instance) => {
                let _ = value.set(py, instance.unbind());
            }
            Err(error) => {
                let errors = match error.value(py).call_method0("errors") {
                    Ok(errors) => errors,
                    Err(_) => return Err(error),
                };
                for item in errors.try_iter()? {
                    let item = item?;
                    let path = convert::pointer(&item.get_item("loc")?)?;
                    let kind: String = item.get_item("type")?.extract()?;
                    let message: String = item.get_item("msg")?.extract()?;
                    checked
                        .violations
                        .push(Violation::new(path, Rule::from_name(&kind), message));
                }
            }
        }
    }
    Ok(PyChecked {
        contract: contract.inner.clone(),
        checked,
        value,
    })
}

/// A `Checked` without a model: the abort of a stream, for instance.
pub(crate) fn plain(contract: Arc<Contract>, checked: Checked) -> PyChecked {
    PyChecked {
        contract,
        checked,
        value: PyOnceLock::new(),
    }
}

#[pymethods]
impl PyChecked {
    /// True when the reply meets the contract (possibly after repairs).
    #[getter]
    fn valid(&self) -> bool {
        self.checked.is_valid()
    }

    /// The parsed (repaired, coerced) value, or `None` when the reply could not be read; the
    /// Pydantic model's instance when the contract came from a model and the reply is valid.
    #[getter]
    fn value(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.value
            .get_or_try_init(py, || match &self.checked.value {
                Some(v) => convert::to_py(py, v).map(Bound::unbind),
                None => Ok(py.None()),
            })
            .map(|v| v.clone_ref(py))
    }

    #[getter]
    fn violations(&self) -> Vec<PyViolation> {
        self.checked
            .violations
            .iter()
            .map(PyViolation::from)
            .collect()
    }

    #[getter]
    fn repairs(&self) -> Vec<PyRepair> {
        self.checked.repairs.iter().map(PyRepair::from).collect()
    }

    /// The name of the contract checked against.
    #[getter]
    fn contract(&self) -> &str {
        self.contract.name()
    }

    /// The bounded retry message the gateway would send (empty for a valid reply).
    fn feedback(&self) -> String {
        self.contract.feedback(&self.checked)
    }

    /// `{valid, contract, value, violations, repairs}`, as `bridle check --json` prints it.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        out.set_item("valid", self.checked.is_valid())?;
        out.set_item("contract", self.contract.name())?;
        let value = match &self.checked.value {
            Some(v) => convert::to_py(py, v)?,
            None => py.None().into_bound(py),
        };
        out.set_item("value", value)?;
        let violations = self
            .checked
            .violations
            .iter()
            .map(|v| PyViolation::from(v).to_dict(py))
            .collect::<PyResult<Vec<_>>>()?;
        out.set_item("violations", violations)?;
        let repairs = self
            .checked
            .repairs
            .iter()
            .map(|r| PyRepair::from(r).to_dict(py))
            .collect::<PyResult<Vec<_>>>()?;
        out.set_item("repairs", repairs)?;
        Ok(out)
    }

    fn __repr__(&self) -> String {
        let rules: Vec<&str> = self
            .checked
            .violations
            .iter()
            .map(|v| v.rule.as_str())
            .collect();
        format!(
            "<bridle.Checked valid={} violations={:?} repairs={}>",
            if self.checked.is_valid() {
                "True"
            } else {
                "False"
            },
            rules,
            self.checked.repairs.len()
        )
    }
}
