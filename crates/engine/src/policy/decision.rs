//! The policy table, pure: a reply's `/safety` assessment → what to do.
//!
//! | `danger_level` | `requires_intervention` | actions          | event action |
//! |----------------|-------------------------|------------------|--------------|
//! | `null`         | false                   | —                | —            |
//! | `null`         | true                    | notify           | `notify`     |
//! | `"warning"`    | false                   | log              | `log`        |
//! | `"warning"`    | true                    | notify           | `notify`     |
//! | `"critical"`   | either                  | notify           | `notify`     |
//! | `"emergency"`  | either                  | notify, block    | `block`      |
//!
//! One safety event is recorded per decision, named after its strongest action; `log` means
//! "recorded, nothing else done", so it never appears next to `notify` or `block`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// How dangerous the user's message was, as the model assessed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DangerLevel {
    /// Sensitive topics, general distress: log only.
    Warning,
    /// Potential risk: notify administrators.
    Critical,
    /// Imminent danger: block the conversation, show crisis resources, notify.
    Emergency,
}

impl DangerLevel {
    /// The name used in the contract, the store and notifications.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warning => "warning",
            Self::Critical => "critical",
            Self::Emergency => "emergency",
        }
    }

    /// Reads a level name (case and surrounding space ignored).
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "warning" => Some(Self::Warning),
            "critical" => Some(Self::Critical),
            "emergency" => Some(Self::Emergency),
            _ => None,
        }
    }
}

impl fmt::Display for DangerLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The level recorded (store, webhook, email) when the model asked for an intervention
/// without naming a danger level.
pub const NO_LEVEL: &str = "none";

/// Something the policy did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Recorded the event, nothing more.
    Log,
    /// Notified administrators (attempted on every configured channel).
    Notify,
    /// Blocked the conversation until an administrator unblocks it.
    Block,
}

impl Action {
    /// The name stored in `safety_events.action`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Log => "log",
            Self::Notify => "notify",
            Self::Block => "block",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reply's `/safety` object, as far as the policy needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    /// `danger_level` (None for `null`, a missing member, or a name that is not a level).
    pub level: Option<DangerLevel>,
    /// `requires_intervention` (false unless it is `true`).
    pub requires_intervention: bool,
    /// `detected_concerns` (its strings, in order).
    pub concerns: Vec<String>,
}

impl Assessment {
    /// Reads `/safety` from a reply's value; None when the value has no `/safety` object
    /// (the contract carries no safety assessment).
    pub fn read(value: &Value) -> Option<Self> {
        let safety = value.get("safety")?.as_object()?;
        let level = match safety.get("danger_level") {
            Some(Value::String(name)) => {
                let level = DangerLevel::parse(name);
                if level.is_none() {
                    tracing::warn!(danger_level = %name, "unknown danger level ignored");
                }
                level
            }
            _ => None,
        };
        let concerns = safety
            .get("detected_concerns")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Some(Self {
            level,
            requires_intervention: safety
                .get("requires_intervention")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            concerns,
        })
    }

    /// What the policy table says to do.
    pub fn plan(&self) -> Plan {
        let notify = self.requires_intervention
            || matches!(
                self.level,
                Some(DangerLevel::Critical | DangerLevel::Emergency)
            );
        let block = self.level == Some(DangerLevel::Emergency);
        let mut actions = Vec::new();
        if notify {
            actions.push(Action::Notify);
        }
        if block {
            actions.push(Action::Block);
        }
        if actions.is_empty() && self.level.is_some() {
            actions.push(Action::Log);
        }
        Plan { actions }
    }

    /// The level as recorded in events and notifications.
    pub fn level_name(&self) -> &'static str {
        self.level.map_or(NO_LEVEL, DangerLevel::as_str)
    }
}

/// The actions one assessment calls for, in the order they are listed in a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Log alone, or notify and/or block; empty when nothing is to be done.
    pub actions: Vec<Action>,
}

impl Plan {
    /// Administrators are to be notified.
    pub fn notifies(&self) -> bool {
        self.actions.contains(&Action::Notify)
    }

    /// The conversation is to be blocked.
    pub fn blocks(&self) -> bool {
        self.actions.contains(&Action::Block)
    }

    /// The action the one recorded event is named after (the strongest); None: no event.
    pub fn event_action(&self) -> Option<Action> {
        self.actions.iter().copied().max()
    }
}

/// What the safety policy did after a turn's final message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SafetyDecision {
    /// The assessed danger level (`warning`, `critical`, `emergency`), None for `null` or when
    /// the value carried no assessment.
    pub level: Option<String>,
    /// What was done: `[]`, `[log]`, `[notify]` or `[notify, block]`.
    pub actions: Vec<Action>,
    /// The conversation is now blocked.
    pub blocked: bool,
    /// Crisis resources to show the user, in the reply's language (emergencies).
    pub crisis_resources: Option<String>,
    /// Why notifying administrators failed, on the channels that failed (the event is recorded
    /// regardless; `notified_at` is set when at least one channel delivered).
    pub notify_error: Option<String>,
}

impl SafetyDecision {
    /// Nothing was done.
    pub fn is_noop(&self) -> bool {
        self.actions.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_policy_table() {
        use Action::{Block, Log, Notify};
        let cases: [(Value, bool, &[Action], Option<Action>); 8] = [
            (Value::Null, false, &[], None),
            (Value::Null, true, &[Notify], Some(Notify)),
            (json!("warning"), false, &[Log], Some(Log)),
            (json!("warning"), true, &[Notify], Some(Notify)),
            (json!("critical"), false, &[Notify], Some(Notify)),
            (json!("critical"), true, &[Notify], Some(Notify)),
            (json!("emergency"), false, &[Notify, Block], Some(Block)),
            (json!("emergency"), true, &[Notify, Block], Some(Block)),
        ];
        for (level, intervention, actions, event) in cases {
            let value = json!({"safety": {
                "danger_level": level, "requires_intervention": intervention,
                "detected_concerns": ["suicide"]}});
            let assessment = Assessment::read(&value);
            let plan = assessment.as_ref().map(Assessment::plan);
            assert_eq!(
                plan.as_ref().map(|p| p.actions.as_slice()),
                Some(actions),
                "{level} {intervention}"
            );
            assert_eq!(
                plan.and_then(|p| p.event_action()),
                event,
                "{level} {intervention}"
            );
        }
    }

    #[test]
    fn reading_is_lenient_but_never_invents_danger() {
        assert_eq!(Assessment::read(&json!({"content": {}})), None);
        assert_eq!(Assessment::read(&json!({"safety": null})), None);
        assert_eq!(Assessment::read(&json!([1, 2])), None);
        let odd = Assessment::read(&json!({"safety": {
            "danger_level": " Critical ", "requires_intervention": "yes",
            "detected_concerns": ["self_harm", 3, null, "violence"]}}));
        assert_eq!(
            odd,
            Some(Assessment {
                level: Some(DangerLevel::Critical),
                requires_intervention: false,
                concerns: vec!["self_harm".into(), "violence".into()],
            })
        );
        let unknown = Assessment::read(&json!({"safety": {"danger_level": "high"}}));
        assert_eq!(unknown.map(|a| a.plan().actions), Some(Vec::new()));
    }

    #[test]
    fn decisions_serialise_with_lowercase_actions() -> Result<(), serde_json::Error> {
        let decision = SafetyDecision {
            level: Some("emergency".into()),
            actions: vec![Action::Notify, Action::Block],
            blocked: true,
            crisis_resources: Some("Call 112.".into()),
            notify_error: None,
        };
        assert_eq!(
            serde_json::to_value(&decision)?,
            json!({"level": "emergency", "actions": ["notify", "block"], "blocked": true,
                   "crisis_resources": "Call 112.", "notify_error": null})
        );
        Ok(())
    }
}
