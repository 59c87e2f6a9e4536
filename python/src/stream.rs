//! [`PyStreamCheck`] (`bridle.StreamCheck`): a reply checked while it streams in — `push(delta)`
//! returns [`PyStreamEvent`]s (text with markers stripped, partial values, suggestions,
//! payloads, the early abort), `finish()` the checked reply.
//!
//! Events carry the names and data of the gateway's SSE events (docs/streaming.md):
//! `text_delta` `{text}`, `partial` `{value}`, `suggestions`, `payload`, and `aborted`
//! `{violations}` for the early abort. Partial values are offered as the gateway throttles
//! them by size: once the reply has grown by an eighth (at least 64 bytes) since the last one,
//! so their cost stays linear in the reply's length however small the deltas.

use crate::checked::{PyChecked, PyViolation, model_checked, plain};
use crate::contract::{PyContract, resolve};
use crate::{BridleError, convert};
use bridle_core::{Checked, Emit, StreamCheck, ToolCall, Violation};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;

/// Least growth, in bytes, between two partial values.
const PARTIAL_MIN_GROWTH: usize = 64;

/// Something a streaming reply produced: `type` and `data` as the gateway's events carry them.
#[pyclass(name = "StreamEvent", module = "bridle", frozen, get_all)]
#[derive(Debug)]
pub struct PyStreamEvent {
    /// `text_delta`, `partial`, `suggestions`, `payload` or `aborted`.
    #[pyo3(name = "type")]
    pub kind: &'static str,
    /// The event's data (a dict).
    pub data: Py<PyAny>,
}

#[pymethods]
impl PyStreamEvent {
    fn __repr__(&self, py: Python<'_>) -> String {
        let data = self
            .data
            .bind(py)
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_default();
        format!("StreamEvent(type={:?}, data={data})", self.kind)
    }
}

/// The streaming check of one reply.
#[pyclass(name = "StreamCheck", module = "bridle")]
#[derive(Debug)]
pub struct PyStreamCheck {
    contract: PyContract,
    context: BTreeMap<String, String>,
    check: StreamCheck,
    partials: bool,
    /// The reply's length when the last partial value was looked for.
    partial_at: usize,
    aborted: Option<Vec<Violation>>,
    released: Vec<Py<PyStreamEvent>>,
}

fn event(
    py: Python<'_>,
    kind: &'static str,
    data: Bound<'_, PyAny>,
) -> PyResult<Py<PyStreamEvent>> {
    Py::new(
        py,
        PyStreamEvent {
            kind,
            data: data.unbind(),
        },
    )
}

fn one<'py>(py: Python<'py>, key: &str, value: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let data = PyDict::new(py);
    data.set_item(key, value)?;
    Ok(data.into_any())
}

fn emitted(py: Python<'_>, emits: Vec<Emit>) -> PyResult<Vec<Py<PyStreamEvent>>> {
    emits
        .into_iter()
        .map(|emit| match emit {
            Emit::Text(text) => event(
                py,
                "text_delta",
                one(py, "text", text.into_pyobject(py)?.into_any())?,
            ),
            Emit::Suggestions(value) => event(py, "suggestions", convert::to_py(py, &value)?),
            Emit::Payload(value) => event(py, "payload", convert::to_py(py, &value)?),
        })
        .collect()
}

#[pymethods]
impl PyStreamCheck {
    /// A streaming check of one reply to `contract` (a `Contract` or a built-in's name).
    #[new]
    #[pyo3(signature = (contract, context = None, *, partials = true))]
    fn new(
        py: Python<'_>,
        contract: &Bound<'_, PyAny>,
        context: Option<BTreeMap<String, String>>,
        partials: bool,
    ) -> PyResult<Self> {
        let contract = resolve(py, Some(contract), None)?;
        let context = context.unwrap_or_default();
        let check = StreamCheck::new(&contract.inner, &convert::context(Some(context.clone())));
        Ok(Self {
            contract,
            context,
            check,
            partials,
            partial_at: 0,
            aborted: None,
            released: Vec::new(),
        })
    }

    /// Feeds the next delta; returns what it makes visible. An `aborted` event means the reply
    /// so far already breaks the contract whatever follows: stop reading it and call `finish()`.
    fn push(&mut self, py: Python<'_>, delta: &str) -> PyResult<Vec<Py<PyStreamEvent>>> {
        if self.aborted.is_some() {
            return Err(BridleError::new_err(
                "this stream was aborted; call finish() for its violations",
            ));
        }
        let mut out = Vec::new();
        let result = self.check.push(delta, &mut out);
        let mut events = emitted(py, out)?;
        if let Err(abort) = result {
            let violations = abort
                .violations
                .iter()
                .map(|v| PyViolation::from(v).to_dict(py))
                .collect::<PyResult<Vec<_>>>()?;
            events.push(event(
                py,
                "aborted",
                one(py, "violations", violations.into_pyobject(py)?.into_any())?,
            )?);
            self.aborted = Some(abort.violations);
            return Ok(events);
        }
        let length = self.check.raw().len();
        if self.partials && length >= self.partial_at + PARTIAL_MIN_GROWTH.max(self.partial_at / 8)
        {
            self.partial_at = length;
            if let Some(text) = self.check.partial()
                && let Ok(value) = serde_json::from_str::<serde_json::Value>(&text)
            {
                events.push(event(
                    py,
                    "partial",
                    one(py, "value", convert::to_py(py, &value)?)?,
                )?);
            }
        }
        Ok(events)
    }

    /// The reply is complete: its check (with the tool calls it made, if any). After an abort,
    /// the abort's violations. Text still held back is in `released` afterwards.
    #[pyo3(signature = (tool_calls = None))]
    fn finish(
        &mut self,
        py: Python<'_>,
        tool_calls: Option<Vec<Bound<'_, PyAny>>>,
    ) -> PyResult<PyChecked> {
        let contract = self.contract.inner.clone();
        if let Some(violations) = &self.aborted {
            let checked = Checked {
                value: None,
                violations: violations.clone(),
                repairs: Vec::new(),
            };
            return Ok(plain(contract, checked));
        }
        let calls: Vec<ToolCall> = match tool_calls {
            Some(calls) => calls
                .iter()
                .map(crate::contract::tool_call)
                .collect::<PyResult<_>>()?,
            None => Vec::new(),
        };
        let context = convert::context(Some(self.context.clone()));
        let raw = self.check.raw();
        let checked = py.detach(|| contract.check_reply(raw, &calls, &context));
        let mut out = Vec::new();
        self.check.finish(&checked, &mut out);
        self.released = emitted(py, out)?;
        model_checked(py, &self.contract, checked)
    }

    /// Events released by `finish()` (text a question card did not take, held-back marker text).
    #[getter]
    fn released(&self, py: Python<'_>) -> Vec<Py<PyStreamEvent>> {
        self.released.iter().map(|e| e.clone_ref(py)).collect()
    }

    /// The reply received so far.
    #[getter]
    fn raw(&self) -> &str {
        self.check.raw()
    }

    /// True once a push proved a violation.
    #[getter]
    fn aborted(&self) -> bool {
        self.aborted.is_some()
    }
}
