//! Checks of the keys that route a turn between models — [`check_entry`] for one
//! `[models.NAME]` entry's `escalate_to`, `escalate_after` and `failover`, [`check`] for the
//! whole table: every name a configured model, no escalation chain that comes back to a model
//! it passed. How the turn loop follows them: `docs/escalation.md`.

use super::ModelConfig;
use super::raw::RawModel;
use bridle_core::ConfigError;
use std::collections::BTreeMap;

/// Most models in one `failover` list.
pub const MAX_FAILOVER: usize = 8;

/// Most failed content attempts `escalate_after` may name (the most attempts a turn has).
const MAX_ESCALATE_AFTER: u32 = 20;

/// Checks one entry's own routing keys; an error names its key within the entry.
pub(super) fn check_entry(name: &str, m: &RawModel) -> Result<(), ConfigError> {
    if let Some(after) = m.escalate_after {
        if m.escalate_to.is_none() {
            return Err(ConfigError::new(
                "escalate_after",
                format!("model {name:?}: escalate_after needs escalate_to"),
            ));
        }
        if !(1..=MAX_ESCALATE_AFTER).contains(&after) {
            return Err(ConfigError::new(
                "escalate_after",
                format!("model {name:?}: must be 1–{MAX_ESCALATE_AFTER}, got {after}"),
            ));
        }
    }
    if m.escalate_to.as_deref() == Some(name) {
        return Err(ConfigError::new(
            "escalate_to",
            format!("model {name:?} cannot escalate to itself"),
        ));
    }
    if m.failover.len() > MAX_FAILOVER {
        return Err(ConfigError::new(
            "failover",
            format!(
                "model {name:?}: at most {MAX_FAILOVER} models, got {}",
                m.failover.len()
            ),
        ));
    }
    for (i, other) in m.failover.iter().enumerate() {
        if other == name {
            return Err(ConfigError::new(
                "failover",
                format!("model {name:?} cannot fail over to itself"),
            ));
        }
        if m.failover[..i].contains(other) {
            return Err(ConfigError::new(
                "failover",
                format!("model {name:?}: {other:?} is listed twice"),
            ));
        }
    }
    Ok(())
}

/// Checks the routing keys across the model table (built-ins included): each names a
/// configured model, and following `escalate_to` from any model never comes back to a model
/// already passed. The error's path is `models.NAME.escalate_to` or `models.NAME.failover`.
pub(super) fn check(models: &BTreeMap<String, ModelConfig>) -> Result<(), ConfigError> {
    let known = |name: &str| models.contains_key(name);
    for (name, model) in models {
        let at = |key: &str| format!("models.{name}.{key}");
        if let Some(next) = &model.escalate_to
            && !known(next)
        {
            return Err(ConfigError::new(
                at("escalate_to"),
                format!("{next:?} is not a configured model"),
            ));
        }
        if let Some(unknown) = model.failover.iter().find(|n| !known(n)) {
            return Err(ConfigError::new(
                at("failover"),
                format!("{unknown:?} is not a configured model"),
            ));
        }
        let mut chain = vec![name.as_str()];
        let mut next = model.escalate_to.as_deref();
        while let Some(step) = next {
            chain.push(step);
            if chain[..chain.len() - 1].contains(&step) {
                return Err(ConfigError::new(
                    at("escalate_to"),
                    format!("escalation goes round in a cycle: {}", chain.join(" → ")),
                ));
            }
            next = models.get(step).and_then(|m| m.escalate_to.as_deref());
        }
    }
    Ok(())
}
