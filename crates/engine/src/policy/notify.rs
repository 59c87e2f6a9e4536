//! Notifying administrators of a safety event: a JSON webhook (HTTP POST) and SMTP email to a
//! list of addresses. Both channels are optional and are tried concurrently; each is bounded by
//! its own timeout. A failed channel is reported, never raised: the policy records the event
//! whatever happens here.

use super::config::{ValidConfig, ValidSmtp, fill_link};
use super::decision::Action;
use crate::providers::traces::TraceSpan;
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, Message};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use opentelemetry::KeyValue;
use opentelemetry::trace::SpanKind;
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

/// The `event` member of every webhook payload.
pub const WEBHOOK_EVENT: &str = "bridle.safety";

/// One safety event to tell administrators about.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Notification<'a> {
    /// Always [`WEBHOOK_EVENT`].
    pub event: &'static str,
    /// Conversation id.
    pub conversation_id: &'a str,
    /// The conversation's owner.
    pub user_id: &'a str,
    /// The message whose assessment triggered it.
    pub message_id: i64,
    /// `warning`, `critical`, `emergency`, or `none` (an intervention without a level).
    pub level: &'a str,
    /// Detected concerns.
    pub concerns: &'a [String],
    /// The recorded action (`notify`, `block`).
    pub action: Action,
    /// When the policy acted (Unix ms).
    pub at: i64,
}

/// What happened on the channels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Delivery {
    /// At least one channel delivered.
    pub delivered: bool,
    /// One line per failed channel (`webhook: …`, `email: …`), or why nothing was tried.
    pub errors: Vec<String>,
}

/// The configured channels.
#[derive(Debug, Clone)]
pub(crate) struct Notifier {
    webhook: Option<Webhook>,
    email: Option<Email>,
    admin_link: Option<String>,
}

impl Notifier {
    pub fn new(config: &ValidConfig) -> Result<Self, reqwest::Error> {
        let webhook = match &config.webhook {
            Some((url, timeout)) => Some(Webhook::new(url.clone(), *timeout)?),
            None => None,
        };
        Ok(Self {
            webhook,
            email: config.smtp.as_ref().map(Email::new),
            admin_link: config.admin_link.clone(),
        })
    }

    /// Sends `notification` on every configured channel at once, in a span of its own
    /// (`bridle.safety.notify`: the channels tried, whether one delivered).
    pub async fn send(&self, notification: &Notification<'_>) -> Delivery {
        let span = TraceSpan::start("bridle.safety.notify", SpanKind::Internal, || {
            vec![
                KeyValue::new("bridle.notify.webhook", self.webhook.is_some()),
                KeyValue::new("bridle.notify.email", self.email.is_some()),
            ]
        });
        let delivery = self.send_all(notification).await;
        span.set(KeyValue::new("bridle.notify.delivered", delivery.delivered));
        if !delivery.delivered {
            span.fail();
        }
        span.end();
        delivery
    }

    async fn send_all(&self, notification: &Notification<'_>) -> Delivery {
        if self.webhook.is_none() && self.email.is_none() {
            return Delivery {
                delivered: false,
                errors: vec![
                    "no notification channel is configured (set safety.webhook_url or \
                     [safety.smtp])"
                        .to_owned(),
                ],
            };
        }
        let link = self
            .admin_link
            .as_deref()
            .map(|t| fill_link(t, notification.conversation_id, notification.message_id));
        let webhook = async {
            match &self.webhook {
                Some(webhook) => Some(webhook.post(notification).await),
                None => None,
            }
        };
        let email = async {
            match &self.email {
                Some(email) => Some(email.send(notification, link.as_deref()).await),
                None => None,
            }
        };
        let (webhook, email) = tokio::join!(webhook, email);
        let mut delivery = Delivery::default();
        for (channel, result) in [("webhook", webhook), ("email", email)] {
            match result {
                Some(Ok(())) => delivery.delivered = true,
                Some(Err(error)) => {
                    tracing::warn!(
                        channel,
                        conversation_id = notification.conversation_id,
                        %error,
                        "safety notification failed"
                    );
                    delivery.errors.push(format!("{channel}: {error}"));
                }
                None => {}
            }
        }
        delivery
    }
}

/// POSTs the notification as JSON; any 2xx answer is a delivery.
#[derive(Clone)]
struct Webhook {
    client: reqwest::Client,
    url: reqwest::Url,
    timeout: Duration,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL's path or query often carries a secret token: show where it goes only.
        f.debug_struct("Webhook")
            .field("host", &self.host())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Webhook {
    fn new(url: reqwest::Url, timeout: Duration) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            // A redirect would turn the POST into a GET (or resend it elsewhere): report it.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("bridle/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            client,
            url,
            timeout,
        })
    }

    async fn post(&self, notification: &Notification<'_>) -> Result<(), String> {
        let response = self
            .client
            .post(self.url.clone())
            .json(notification)
            .send()
            .await
            .map_err(|e| self.describe(e))?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("{} answered HTTP {status}", self.host()))
        }
    }

    /// The error in words, without the URL (which may carry a secret token).
    fn describe(&self, error: reqwest::Error) -> String {
        let host = self.host();
        if error.is_timeout() {
            format!("{host} did not answer within {:?}", self.timeout)
        } else if error.is_connect() {
            format!("cannot connect to {host}")
        } else {
            format!("request to {host} failed: {}", error.without_url())
        }
    }

    fn host(&self) -> String {
        match (self.url.host_str(), self.url.port()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) => host.to_owned(),
            (None, _) => "the webhook".to_owned(),
        }
    }
}

/// Plain SMTP delivery to the configured relay.
#[derive(Debug, Clone)]
struct Email {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    to: Vec<Mailbox>,
    relay: String,
    timeout: Duration,
}

impl Email {
    fn new(config: &ValidSmtp) -> Self {
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&config.host)
            .port(config.port)
            .timeout(Some(config.timeout));
        if let Some((user, password)) = &config.credentials {
            builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
        }
        Self {
            transport: builder.build(),
            from: config.from.clone(),
            to: config.to.clone(),
            relay: format!("{}:{}", config.host, config.port),
            timeout: config.timeout,
        }
    }

    async fn send(
        &self,
        notification: &Notification<'_>,
        link: Option<&str>,
    ) -> Result<(), String> {
        let mut builder = Message::builder()
            .from(self.from.clone())
            .subject(subject(notification))
            .message_id(None)
            .header(ContentType::TEXT_PLAIN);
        for to in &self.to {
            builder = builder.to(to.clone());
        }
        let message = builder
            .body(body(notification, link))
            .map_err(|e| format!("cannot build the message: {e}"))?;
        // lettre bounds each step; this bounds the whole dialogue.
        match tokio::time::timeout(self.timeout, self.transport.send(message)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(error)) => Err(format!("{} refused or failed: {error}", self.relay)),
            Err(_) => Err(format!(
                "{} did not finish within {:?}",
                self.relay, self.timeout
            )),
        }
    }
}

/// `[Bridle] critical safety event in conversation …`.
pub(crate) fn subject(notification: &Notification<'_>) -> String {
    let id = notification.conversation_id;
    match (notification.level, notification.action) {
        (super::decision::NO_LEVEL, _) => {
            format!("[Bridle] safety intervention requested in conversation {id}")
        }
        (level, Action::Block) => {
            format!("[Bridle] {level} safety event in conversation {id} (blocked)")
        }
        (level, _) => format!("[Bridle] {level} safety event in conversation {id}"),
    }
}

/// The plain-text email body.
pub(crate) fn body(notification: &Notification<'_>, link: Option<&str>) -> String {
    let concerns = if notification.concerns.is_empty() {
        "(none named)".to_owned()
    } else {
        notification.concerns.join(", ")
    };
    let mut text =
        String::from("Bridle recorded a safety event that needs an administrator's attention.\n\n");
    let mut line = |label: &str, value: &str| {
        let _ = writeln!(text, "{label:<14}{value}");
    };
    line("Level:", notification.level);
    line("Concerns:", &concerns);
    line("Action:", notification.action.as_str());
    line("Conversation:", notification.conversation_id);
    line("User:", notification.user_id);
    line("Message id:", &notification.message_id.to_string());
    line("Time:", &utc_time(notification.at));
    if let Some(link) = link {
        line("Open:", link);
    }
    if notification.action == Action::Block {
        text.push_str(
            "\nThe conversation is blocked and stays blocked until an administrator unblocks it. \
             The user was shown crisis resources.\n",
        );
    }
    text
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM:SS UTC`.
pub(crate) fn utc_time(unix_ms: i64) -> String {
    let seconds = unix_ms.div_euclid(1000);
    let (days, of_day) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    )
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar
/// (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notification<'a>(
        level: &'a str,
        action: Action,
        concerns: &'a [String],
    ) -> Notification<'a> {
        Notification {
            event: WEBHOOK_EVENT,
            conversation_id: "0193-c",
            user_id: "ada",
            message_id: 42,
            level,
            concerns,
            action,
            at: 1_767_225_600_000, // 2026-01-01T00:00:00Z
        }
    }

    #[test]
    fn times_are_utc() {
        assert_eq!(utc_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_time(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_time(1_767_225_599_999), "2025-12-31 23:59:59 UTC");
        assert_eq!(utc_time(-1), "1969-12-31 23:59:59 UTC");
    }

    #[test]
    fn subjects_name_level_and_conversation() {
        let none = Vec::new();
        assert_eq!(
            subject(&notification("critical", Action::Notify, &none)),
            "[Bridle] critical safety event in conversation 0193-c"
        );
        assert_eq!(
            subject(&notification("emergency", Action::Block, &none)),
            "[Bridle] emergency safety event in conversation 0193-c (blocked)"
        );
        assert_eq!(
            subject(&notification("none", Action::Notify, &none)),
            "[Bridle] safety intervention requested in conversation 0193-c"
        );
    }

    #[test]
    fn body_lists_the_facts() {
        let concerns = vec!["suicide".to_owned(), "self_harm".to_owned()];
        let text = body(
            &notification("emergency", Action::Block, &concerns),
            Some("https://admin.example/c/0193-c"),
        );
        for expected in [
            "Level:        emergency\n",
            "Concerns:     suicide, self_harm\n",
            "Action:       block\n",
            "Conversation: 0193-c\n",
            "User:         ada\n",
            "Message id:   42\n",
            "Time:         2026-01-01 00:00:00 UTC\n",
            "Open:         https://admin.example/c/0193-c\n",
            "stays blocked until an administrator unblocks it",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
        let plain = body(&notification("warning", Action::Notify, &[]), None);
        assert!(plain.contains("Concerns:     (none named)\n") && !plain.contains("Open:"));
    }

    #[test]
    fn webhook_payload_has_the_documented_members() -> Result<(), serde_json::Error> {
        let concerns = vec!["violence".to_owned()];
        let value = serde_json::to_value(notification("critical", Action::Notify, &concerns))?;
        assert_eq!(
            value,
            serde_json::json!({"event": "bridle.safety", "conversation_id": "0193-c",
                "user_id": "ada", "message_id": 42, "level": "critical",
                "concerns": ["violence"], "action": "notify", "at": 1_767_225_600_000_i64})
        );
        Ok(())
    }
}
