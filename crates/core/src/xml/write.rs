//! [`write`]: a JSON value → the XML document it reads back as (the inverse of
//! [`read`](super::read) for values of that mapping): `"@name"` members become attributes,
//! `"#text"` the element's text, arrays repeated elements, objects nested elements, scalars
//! text elements; `null` members are left out. Used to show examples and by the mock LLM.

use quick_xml::escape::escape;
use serde_json::Value;
use std::fmt::Write as _;

/// `value` as a document with root element `root`, indented by two spaces.
pub fn write(value: &Value, root: &str) -> String {
    let mut out = String::new();
    element(&mut out, root, value, 0);
    out
}

fn element(out: &mut String, name: &str, value: &Value, depth: usize) {
    let indent = "  ".repeat(depth);
    match value {
        Value::Null => {}
        Value::Array(items) => {
            for item in items {
                element(out, name, item, depth);
            }
        }
        Value::Object(members) => {
            let _ = write!(out, "{indent}<{name}");
            for (key, attribute) in members {
                if let Some(attribute_name) = key.strip_prefix('@')
                    && !attribute.is_null()
                {
                    let _ = write!(out, " {attribute_name}=\"{}\"", escape(scalar(attribute)));
                }
            }
            let children: Vec<(&String, &Value)> = members
                .iter()
                .filter(|(key, v)| !key.starts_with('@') && *key != "#text" && !v.is_null())
                .collect();
            let text = members.get("#text").map(scalar);
            if children.is_empty() && text.is_none() {
                out.push_str(" />\n");
                return;
            }
            out.push('>');
            if let Some(text) = &text {
                out.push_str(&escape(text.as_str()));
            }
            if !children.is_empty() {
                out.push('\n');
                for (key, child) in children {
                    element(out, key, child, depth + 1);
                }
                out.push_str(&indent);
            }
            let _ = writeln!(out, "</{name}>");
        }
        scalar_value => {
            let _ = writeln!(
                out,
                "{indent}<{name}>{}</{name}>",
                escape(scalar(scalar_value))
            );
        }
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
