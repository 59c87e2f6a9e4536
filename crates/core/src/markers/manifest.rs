//! `[markers]` of a `markers` contract's manifest: the payload types (marker, schema file,
//! pages, instructions), the pages (instructions, client actions) and the global client
//! actions, read into a [`MarkerSpec`].
//!
//! ```toml
//! [markers]
//! actions = [{ action = "close_chat", description = "Close the chat panel" }]
//!
//! [[markers.payloads]]
//! name = "schema_proposal"          # payload.type in the value
//! marker = "SCHEMA_PROPOSAL"        # upper case, digits and '_'
//! schema = "payloads/schema_proposal.json"
//! pages = ["tables_list", "table_view"]   # empty or absent: every page
//! instructions = "When and how to propose …"
//!
//! [markers.pages.table_view]
//! instructions = "The user is looking at one table …"
//! actions = [{ action = "export_csv", description = "Download the table" }]
//! ```

use super::{ACTIONS_MARKER, Action, CLOSE_CHAT, MarkerSpec, Page, PayloadType, VALUES_MARKER};
use crate::error::ContractError;
use crate::manifest::{ContractFiles, read_json_text};
use crate::schema::Schema;
use serde::Deserialize;
use std::collections::BTreeMap;

/// `[markers]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkersManifest {
    #[serde(default)]
    actions: Vec<ActionSpec>,
    #[serde(default)]
    payloads: Vec<PayloadSpec>,
    #[serde(default)]
    pages: BTreeMap<String, PageSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionSpec {
    action: String,
    #[serde(default)]
    description: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PayloadSpec {
    name: String,
    marker: String,
    schema: String,
    #[serde(default)]
    pages: Vec<String>,
    #[serde(default)]
    instructions: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageSpec {
    #[serde(default)]
    instructions: String,
    #[serde(default)]
    actions: Vec<ActionSpec>,
}

/// Reads the payload schemas `manifest` names from `files` and checks names and markers.
pub(crate) fn load(
    manifest: MarkersManifest,
    files: &dyn ContractFiles,
    options: &crate::schema::SchemaOptions,
) -> Result<MarkerSpec, ContractError> {
    let origin = files.origin();
    let invalid = |message: String| ContractError::Invalid {
        origin: origin.clone(),
        message,
    };
    let mut payloads: Vec<PayloadType> = Vec::new();
    for spec in manifest.payloads {
        if !valid_marker(&spec.marker)
            || [VALUES_MARKER, ACTIONS_MARKER].contains(&spec.marker.as_str())
        {
            return Err(invalid(format!(
                "payload {:?}: marker {:?} must be upper-case letters, digits and '_', and not a suggestion marker",
                spec.name, spec.marker
            )));
        }
        if spec.name.trim().is_empty() {
            return Err(invalid(format!(
                "payload with marker {:?} has no name",
                spec.marker
            )));
        }
        if payloads
            .iter()
            .any(|p| p.name == spec.name || p.marker == spec.marker)
        {
            return Err(invalid(format!(
                "payload {:?} ({}) is registered twice",
                spec.name, spec.marker
            )));
        }
        let (raw, schema_text) = read_json_text(files, &spec.schema)?;
        let schema =
            Schema::compile_with(raw, &[], options).map_err(|source| ContractError::Schema {
                origin: origin.clone(),
                file: spec.schema.clone(),
                source,
            })?;
        payloads.push(PayloadType {
            name: spec.name,
            marker: spec.marker,
            schema,
            schema_text,
            pages: spec.pages,
            instructions: spec.instructions.trim().to_owned(),
        });
    }
    let mut actions = vec![Action {
        action: CLOSE_CHAT.to_owned(),
        description: "Close the chat panel".to_owned(),
    }];
    merge_actions(&mut actions, manifest.actions).map_err(&invalid)?;
    let mut pages = BTreeMap::new();
    for (name, spec) in manifest.pages {
        let mut page_actions = Vec::new();
        merge_actions(&mut page_actions, spec.actions)
            .map_err(|e| invalid(format!("page {name:?}: {e}")))?;
        pages.insert(
            name,
            Page {
                instructions: spec.instructions.trim().to_owned(),
                actions: page_actions,
            },
        );
    }
    Ok(MarkerSpec {
        payloads,
        pages,
        actions,
    })
}

fn merge_actions(into: &mut Vec<Action>, specs: Vec<ActionSpec>) -> Result<(), String> {
    for spec in specs {
        if spec.action.is_empty()
            || spec
                .action
                .contains(|c: char| c == ',' || c.is_whitespace())
        {
            return Err(format!(
                "action {:?} must be a non-empty identifier without spaces or commas",
                spec.action
            ));
        }
        match into.iter_mut().find(|a| a.action == spec.action) {
            Some(existing) => existing.description = spec.description,
            None => into.push(Action {
                action: spec.action,
                description: spec.description,
            }),
        }
    }
    Ok(())
}

fn valid_marker(marker: &str) -> bool {
    (2..=64).contains(&marker.len())
        && marker
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && marker.as_bytes()[0].is_ascii_uppercase()
}
