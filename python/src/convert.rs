//! Conversions between Python objects and the core's types: [`context`] (a `dict[str, str]` →
//! [`Context`]), [`to_py`] / [`from_py`] (JSON values, through `pythonize`), [`schema_text`]
//! (a schema given as a dict or as JSON text, its key order kept) and [`pointer`] (a Pydantic
//! error location → JSON pointer).

use bridle_core::Context;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{IntoPyDict as _, PyDict, PyString};
use serde_json::Value;
use std::collections::BTreeMap;

/// A Python mapping of strings (or `None`) as a core [`Context`].
pub fn context(given: Option<BTreeMap<String, String>>) -> Context {
    let mut context = Context::new();
    for (key, value) in given.unwrap_or_default() {
        context.insert(key, value);
    }
    context
}

/// A JSON value as Python objects (dicts, lists, str, int, float, bool, None).
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}

/// A Python object as a JSON value; a Pydantic model instance is dumped first (`mode="json"`).
pub fn from_py(object: &Bound<'_, PyAny>) -> PyResult<Value> {
    if object.hasattr("model_dump")? && !object.is_instance_of::<PyDict>() {
        let dumped = object.call_method(
            "model_dump",
            (),
            Some(&[("mode", "json")].into_py_dict(object.py())?),
        )?;
        return Ok(pythonize::depythonize(&dumped)?);
    }
    Ok(pythonize::depythonize(object)?)
}

/// A schema given as a `dict` (written with `json.dumps`, so the author's key order reaches the
/// prompt) or as JSON text.
pub fn schema_text(schema: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = schema.cast::<PyString>() {
        return Ok(text.to_str()?.to_owned());
    }
    if !schema.is_instance_of::<PyDict>() {
        return Err(PyTypeError::new_err(
            "a schema is a dict (a JSON Schema) or its JSON text",
        ));
    }
    let json = schema.py().import("json")?;
    json.call_method1("dumps", (schema,))?.extract()
}

/// A Pydantic error location (`("items", 0, "name")`) as a JSON pointer (`/items/0/name`).
pub fn pointer(location: &Bound<'_, PyAny>) -> PyResult<String> {
    let mut out = String::new();
    for part in location.try_iter()? {
        let part = part?.str()?;
        out.push('/');
        out.push_str(&part.to_str()?.replace('~', "~0").replace('/', "~1"));
    }
    Ok(out)
}
