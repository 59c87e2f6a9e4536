//! [`SafetyPolicy`]: what happens after a turn's final message (a valid reply or the contract's
//! fallback) when its value carries a safety assessment (`/safety` with `danger_level`,
//! `requires_intervention`, `detected_concerns`; spec 01, "Danger Levels").
//!
//! - `warning` → **log**: one safety event, action `log`.
//! - `critical` → **notify** administrators (webhook and/or email) and record the event, action
//!   `notify`, `notified_at` set when a channel delivered.
//! - `emergency` → **block** the conversation, notify, record the event (action `block`); the
//!   decision carries crisis resources in the reply's language (`/metadata/language`, else `en`).
//! - `requires_intervention: true` at any level → notify too.
//! - no level and no intervention, or no `/safety` at all → nothing.
//!
//! Notification never fails a turn: a channel that is down is reported in
//! [`SafetyDecision::notify_error`] and the event is recorded with `notified_at = None`. Only a
//! store failure is an error — and even then the notification has been attempted and the event
//! write tried before it is returned.
//!
//! The table itself is [`decision`] (pure), the channels are [`notify`], crisis texts `crisis`.

mod config;
mod crisis;
pub mod decision;
pub mod notify;

pub use config::{
    DEFAULT_SMTP_TIMEOUT_SECS, DEFAULT_WEBHOOK_TIMEOUT_SECS, LINK_PLACEHOLDERS, MAX_TIMEOUT_SECS,
    SafetyConfig, SafetyConfigError, SmtpConfig,
};
pub use crisis::{BLOCKED_DE, BLOCKED_EN, CRISIS_DE, CRISIS_EN, FALLBACK_LANGUAGE};
pub use decision::{Action, Assessment, DangerLevel, NO_LEVEL, Plan, SafetyDecision};

use crate::store::{Conversation, ConversationStatus, NewSafetyEvent, Store, StoreError, now_ms};
use crate::turn::spans::StoreWrite;
use crisis::CrisisTexts;
use notify::{Notification, Notifier, WEBHOOK_EVENT};
use serde_json::Value;

/// The safety policy: the configured crisis texts and notification channels.
#[derive(Debug, Clone)]
pub struct SafetyPolicy {
    texts: CrisisTexts,
    notifier: Notifier,
}

impl SafetyPolicy {
    /// Validates `config` and builds the channels it names.
    pub fn new(config: SafetyConfig) -> Result<Self, SafetyConfigError> {
        let valid = config.checked()?;
        let notifier = Notifier::new(&valid).map_err(|e| {
            SafetyConfigError::new("webhook_url", format!("cannot build an HTTP client: {e}"))
        })?;
        Ok(Self {
            texts: CrisisTexts::new(valid.crisis, valid.blocked_notice),
            notifier,
        })
    }

    /// Applies the policy to the final message `message_id` of a turn in `conversation`, whose
    /// value is `value`. Returns what was done; fails only when the store does (after having
    /// tried to notify and to record the event anyway).
    pub async fn apply(
        &self,
        store: &dyn Store,
        conversation: &Conversation,
        message_id: i64,
        value: &Value,
    ) -> Result<SafetyDecision, StoreError> {
        let Some(assessment) = Assessment::read(value) else {
            return Ok(SafetyDecision::default());
        };
        let plan = assessment.plan();
        let mut decision = SafetyDecision {
            level: assessment.level.map(|l| l.as_str().to_owned()),
            actions: plan.actions.clone(),
            ..SafetyDecision::default()
        };
        let Some(event_action) = plan.event_action() else {
            return Ok(decision);
        };

        // Block first, so no further message gets through while administrators are notified.
        // A store error here is returned only after the notification and the event were tried.
        let block_result = if plan.blocks() {
            let block = store.set_status(&conversation.id, ConversationStatus::Blocked);
            let result = StoreWrite::STATUS.traced(store, block).await;
            decision.blocked = matches!(result, Ok(true));
            decision.crisis_resources = Some(self.crisis_resources(language(value)).to_owned());
            Some(result)
        } else {
            None
        };

        let mut notified_at = None;
        if plan.notifies() {
            let notification = Notification {
                event: WEBHOOK_EVENT,
                conversation_id: &conversation.id,
                user_id: &conversation.user_id,
                message_id,
                level: assessment.level_name(),
                concerns: &assessment.concerns,
                action: event_action,
                at: now_ms(),
            };
            let delivery = self.notifier.send(&notification).await;
            if delivery.delivered {
                notified_at = Some(now_ms());
            }
            if !delivery.errors.is_empty() {
                decision.notify_error = Some(delivery.errors.join("; "));
            }
        }

        let event = NewSafetyEvent {
            conversation_id: conversation.id.clone(),
            message_id: Some(message_id),
            level: assessment.level_name().to_owned(),
            concerns: Value::from(assessment.concerns.clone()),
            action: event_action.as_str().to_owned(),
            notified_at,
        };
        let recorded = StoreWrite::SAFETY_EVENT
            .traced(store, store.record_safety_event(&event))
            .await;
        tracing::info!(
            conversation_id = %conversation.id,
            message_id,
            level = event.level,
            action = event.action,
            notified = notified_at.is_some(),
            "safety event"
        );
        if let Some(Err(error)) = block_result {
            tracing::error!(conversation_id = %conversation.id, %error, "could not block the conversation");
            return Err(error);
        }
        recorded?;
        Ok(decision)
    }

    /// Crisis resources for a reply in `language` (exact tag, its primary subtag, else `en`).
    pub fn crisis_resources(&self, language: Option<&str>) -> &str {
        self.texts.crisis(language)
    }

    /// The answer to a later message in a blocked conversation: a short notice (when one exists
    /// in the resolved language) followed by the crisis resources.
    pub fn blocked_answer(&self, language: Option<&str>) -> String {
        self.texts.blocked_answer(language)
    }
}

/// `/metadata/language` of a reply, if it is a string.
fn language(value: &Value) -> Option<&str> {
    value.pointer("/metadata/language").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_keeps_secrets_out() -> Result<(), SafetyConfigError> {
        let policy = SafetyPolicy::new(SafetyConfig {
            webhook_url: Some("https://hooks.example/T0/B1/s3cr3t-token".into()),
            smtp: Some(SmtpConfig {
                host: "localhost".into(),
                port: 1025,
                from: "bridle@example.org".into(),
                to: vec!["oncall@example.org".into()],
                starttls: false,
                username: Some("bridle".into()),
                password: Some("hunter2-password".into()),
                timeout_secs: DEFAULT_SMTP_TIMEOUT_SECS,
            }),
            ..SafetyConfig::default()
        })?;
        let debug = format!("{policy:?}");
        assert!(debug.contains("hooks.example"), "{debug}");
        assert!(
            !debug.contains("s3cr3t-token") && !debug.contains("hunter2-password"),
            "{debug}"
        );
        Ok(())
    }

    #[test]
    fn invalid_config_is_refused_at_construction() {
        let error = SafetyPolicy::new(SafetyConfig {
            webhook_url: Some("mailto:ops@example.org".into()),
            ..SafetyConfig::default()
        })
        .err();
        assert_eq!(error.map(|e| e.field), Some("webhook_url".to_owned()));
    }
}
