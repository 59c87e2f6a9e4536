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

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::super::tests::env;

    const MODELS: &str = "[providers.up]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
        [models.small]\nprovider = \"up\"\n[models.large]\nprovider = \"up\"\n\
        [models.backup]\nprovider = \"up\"\n";

    fn load(extra: &str) -> Result<Config, bridle_core::ConfigError> {
        Config::from_toml(
            &format!("default_model = \"small\"\n{MODELS}{extra}"),
            &env(&[]),
        )
    }

    #[test]
    fn routing_keys_are_read() {
        let config = load("").unwrap();
        assert_eq!(config.models["small"].escalate_to, None);
        let text = format!(
            "default_model = \"small\"\n{}",
            MODELS.replace(
                "[models.small]\nprovider = \"up\"\n",
                "[models.small]\nprovider = \"up\"\nescalate_to = \"large\"\nescalate_after = 2\nfailover = [\"backup\"]\n",
            )
        );
        let config = Config::from_toml(&text, &env(&[])).unwrap();
        let small = &config.models["small"];
        assert_eq!(small.escalate_to.as_deref(), Some("large"));
        assert_eq!(small.escalate_after, Some(2));
        assert_eq!(small.failover, ["backup"]);
    }

    #[test]
    fn routing_mistakes_are_named_by_their_key() {
        let entry = |keys: &str| {
            MODELS.replace(
                "[models.small]\nprovider = \"up\"\n",
                &format!("[models.small]\nprovider = \"up\"\n{keys}\n"),
            )
        };
        let eight: Vec<String> = (0..9).map(|i| format!("\"m{i}\"")).collect();
        for (keys, path, words) in [
            (
                "escalate_to = \"huge\"",
                "models.small.escalate_to",
                "not a configured model",
            ),
            (
                "escalate_to = \"small\"",
                "models.small.escalate_to",
                "itself",
            ),
            (
                "failover = [\"ghost\"]",
                "models.small.failover",
                "not a configured model",
            ),
            ("failover = [\"small\"]", "models.small.failover", "itself"),
            (
                "failover = [\"large\", \"large\"]",
                "models.small.failover",
                "twice",
            ),
            (
                &format!("failover = [{}]", eight.join(", ")),
                "models.small.failover",
                "at most 8",
            ),
            (
                "escalate_after = 2",
                "models.small.escalate_after",
                "needs escalate_to",
            ),
            (
                "escalate_to = \"large\"\nescalate_after = 0",
                "models.small.escalate_after",
                "1–20",
            ),
        ] {
            let text = format!("default_model = \"small\"\n{}", entry(keys));
            let error = Config::from_toml(&text, &env(&[])).unwrap_err();
            assert_eq!(error.path, path, "{keys}: {error}");
            assert!(error.to_string().contains(words), "{keys}: {error}");
        }
    }

    #[test]
    fn an_escalation_cycle_is_refused_with_its_path() {
        let text = format!(
            "default_model = \"small\"\n{}",
            MODELS
                .replace(
                    "[models.small]\nprovider = \"up\"\n",
                    "[models.small]\nprovider = \"up\"\nescalate_to = \"large\"\n",
                )
                .replace(
                    "[models.large]\nprovider = \"up\"\n",
                    "[models.large]\nprovider = \"up\"\nescalate_to = \"backup\"\n",
                )
                .replace(
                    "[models.backup]\nprovider = \"up\"\n",
                    "[models.backup]\nprovider = \"up\"\nescalate_to = \"small\"\n",
                )
        );
        let error = Config::from_toml(&text, &env(&[])).unwrap_err();
        assert_eq!(error.path, "models.backup.escalate_to", "{error}");
        assert!(
            error
                .to_string()
                .contains("backup → small → large → backup"),
            "{error}"
        );
    }

    #[test]
    fn the_token_budget_is_optional_bounded_and_per_contract() {
        let config = load("").unwrap();
        assert_eq!(config.retry.max_turn_tokens, None);
        let config = load(
            "[retry]\nmax_turn_tokens = 5000\n[retry.contracts.selfhelp-response]\nmax_attempts = 4\n[retry.contracts.markers]\nmax_turn_tokens = 900\n",
        )
        .unwrap();
        assert_eq!(config.retry.max_turn_tokens, Some(5000));
        assert_eq!(
            config.retry_for("selfhelp-response").max_turn_tokens,
            Some(5000)
        );
        assert_eq!(config.retry_for("markers").max_turn_tokens, Some(900));
        let error = load("[retry]\nmax_turn_tokens = 0\n").unwrap_err();
        assert_eq!(error.path, "retry.max_turn_tokens", "{error}");
    }
}
