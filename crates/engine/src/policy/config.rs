//! [`SafetyConfig`]: the `[safety]` settings — crisis texts per language, the notification
//! channels (webhook, SMTP email) and the admin link — and their validation.

use super::crisis::normalize_language;
use lettre::message::Mailbox;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

/// Default webhook timeout (seconds).
pub const DEFAULT_WEBHOOK_TIMEOUT_SECS: f64 = 5.0;
/// Default bound on one email delivery (seconds).
pub const DEFAULT_SMTP_TIMEOUT_SECS: f64 = 10.0;
/// Largest timeout accepted for either channel (seconds): a notification must never hold a
/// user's turn for long.
pub const MAX_TIMEOUT_SECS: f64 = 120.0;
/// The placeholders `admin_link` may use.
pub const LINK_PLACEHOLDERS: [&str; 2] = ["conversation_id", "message_id"];

/// A safety configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("safety configuration: {field}: {problem}")]
pub struct SafetyConfigError {
    /// The setting at fault (`smtp.to[1]`, `crisis.de`, …).
    pub field: String,
    /// What is wrong and how to fix it.
    pub problem: String,
}

impl SafetyConfigError {
    pub(crate) fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

/// The safety policy's settings (`[safety]` in `bridle.toml`). Everything is optional: with no
/// channel configured, events are still recorded and the decision says nobody was notified.
///
/// ```toml
/// [safety]
/// webhook_url = "https://ops.example/hooks/bridle"
/// webhook_timeout_secs = 5
/// admin_link = "https://admin.example/conversations/{conversation_id}"
///
/// [safety.crisis]          # per language (BCP 47 tag or its primary subtag); `en` is the fallback
/// fr = "Si vous êtes en danger immédiat, appelez le 112 …"
///
/// [safety.smtp]
/// host = "127.0.0.1"
/// port = 25
/// from = "Bridle <bridle@example.org>"
/// to = ["oncall@example.org", "lead@example.org"]
/// ```
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SafetyConfig {
    /// Crisis resources per language, shown with an emergency; merged over the built-in English
    /// and German texts (an entry here replaces the built-in one for its language).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub crisis: BTreeMap<String, String>,
    /// The notice put before the crisis resources when a blocked conversation gets another
    /// message, per language; merged over the built-in English and German notices.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub blocked_notice: BTreeMap<String, String>,
    /// Where to POST a JSON notification (`http://` or `https://`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_url: Option<String>,
    /// Bound on one webhook delivery, seconds.
    pub webhook_timeout_secs: f64,
    /// Email notifications.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smtp: Option<SmtpConfig>,
    /// A link to the conversation in an admin console, put into emails;
    /// `{conversation_id}` and `{message_id}` are replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_link: Option<String>,
}

impl Default for SafetyConfig {
    fn default() -> Self {
        Self {
            crisis: BTreeMap::new(),
            blocked_notice: BTreeMap::new(),
            webhook_url: None,
            webhook_timeout_secs: DEFAULT_WEBHOOK_TIMEOUT_SECS,
            smtp: None,
            admin_link: None,
        }
    }
}

impl fmt::Debug for SafetyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SafetyConfig")
            .field("crisis", &self.crisis.keys().collect::<Vec<_>>())
            .field(
                "blocked_notice",
                &self.blocked_notice.keys().collect::<Vec<_>>(),
            )
            // A webhook URL often carries a secret token in its path or query.
            .field("webhook_url", &self.webhook_url.as_ref().map(|_| "[set]"))
            .field("webhook_timeout_secs", &self.webhook_timeout_secs)
            .field("smtp", &self.smtp)
            .field("admin_link", &self.admin_link)
            .finish()
    }
}

/// Plain SMTP delivery to a relay.
///
/// This build of Bridle has no TLS backend for SMTP, so mail goes in plain text to the relay:
/// point it at a local relay (postfix, msmtpd, …) that forwards over TLS. `starttls = true` and
/// credentials for a host that is not on loopback are refused by [`SafetyConfig::validate`]
/// rather than sent in the clear.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpConfig {
    /// Relay host name or IP address.
    pub host: String,
    /// Relay port.
    #[serde(default = "default_smtp_port")]
    pub port: u16,
    /// Sender, `addr@example.org` or `Name <addr@example.org>`.
    pub from: String,
    /// Administrators to notify (at least one).
    pub to: Vec<String>,
    /// Require STARTTLS (not available in this build; see above).
    #[serde(default)]
    pub starttls: bool,
    /// SMTP AUTH user name (with `password`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// SMTP AUTH password (with `username`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Bound on one delivery (connect, dialogue, data), seconds.
    #[serde(default = "default_smtp_timeout")]
    pub timeout_secs: f64,
}

fn default_smtp_port() -> u16 {
    25
}

fn default_smtp_timeout() -> f64 {
    DEFAULT_SMTP_TIMEOUT_SECS
}

impl fmt::Debug for SmtpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("from", &self.from)
            .field("to", &self.to)
            .field("starttls", &self.starttls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "[REDACTED]"))
            .field("timeout_secs", &self.timeout_secs)
            .finish()
    }
}

/// An SMTP configuration after validation: parsed addresses and timeout. (No `Debug`: it holds
/// the password.)
#[derive(Clone)]
pub(crate) struct ValidSmtp {
    pub host: String,
    pub port: u16,
    pub from: Mailbox,
    pub to: Vec<Mailbox>,
    pub credentials: Option<(String, String)>,
    pub timeout: Duration,
}

/// A configuration after validation, ready to build the policy from. (No `Debug`: it holds
/// secrets.)
#[derive(Clone)]
pub(crate) struct ValidConfig {
    pub crisis: BTreeMap<String, String>,
    pub blocked_notice: BTreeMap<String, String>,
    pub webhook: Option<(reqwest::Url, Duration)>,
    pub smtp: Option<ValidSmtp>,
    pub admin_link: Option<String>,
}

impl SafetyConfig {
    /// Checks every setting; the error names the first one at fault and says what to change.
    pub fn validate(&self) -> Result<(), SafetyConfigError> {
        self.checked().map(|_| ())
    }

    /// The settings with their secrets replaced by `marker`: the SMTP password, and the
    /// webhook URL past its origin (its path or query often carries a token).
    #[must_use]
    pub fn redacted(&self, marker: &str) -> Self {
        let mut copy = self.clone();
        copy.webhook_url = self
            .webhook_url
            .as_deref()
            .map(|url| match reqwest::Url::parse(url) {
                Ok(parsed) => format!("{}/{marker}", parsed.origin().ascii_serialization()),
                Err(_) => marker.to_owned(),
            });
        if let Some(smtp) = &mut copy.smtp {
            smtp.password = smtp.password.as_ref().map(|_| marker.to_owned());
        }
        copy
    }

    pub(crate) fn checked(&self) -> Result<ValidConfig, SafetyConfigError> {
        // Checked even without a URL, so a typo does not wait until a webhook is added.
        let webhook_timeout = timeout("webhook_timeout_secs", self.webhook_timeout_secs)?;
        let webhook = self
            .webhook_url
            .as_deref()
            .map(|url| http_url("webhook_url", url).map(|url| (url, webhook_timeout)))
            .transpose()?;
        let smtp = self.smtp.as_ref().map(SmtpConfig::checked).transpose()?;
        if let Some(link) = &self.admin_link {
            check_link(link)?;
        }
        Ok(ValidConfig {
            crisis: texts("crisis", &self.crisis)?,
            blocked_notice: texts("blocked_notice", &self.blocked_notice)?,
            webhook,
            smtp,
            admin_link: self.admin_link.clone(),
        })
    }
}

impl SmtpConfig {
    fn checked(&self) -> Result<ValidSmtp, SafetyConfigError> {
        let host = self.host.trim();
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(SafetyConfigError::new(
                "smtp.host",
                format!("{:?} is not a host name or IP address", self.host),
            ));
        }
        if self.port == 0 {
            return Err(SafetyConfigError::new("smtp.port", "must be 1..=65535"));
        }
        if self.starttls {
            return Err(SafetyConfigError::new(
                "smtp.starttls",
                "this build has no TLS support for SMTP; send through a local relay that \
                 forwards over TLS and set starttls = false",
            ));
        }
        let from = mailbox("smtp.from", &self.from)?;
        if self.to.is_empty() {
            return Err(SafetyConfigError::new(
                "smtp.to",
                "list at least one administrator's address",
            ));
        }
        let to = self
            .to
            .iter()
            .enumerate()
            .map(|(i, address)| mailbox(&format!("smtp.to[{i}]"), address))
            .collect::<Result<Vec<_>, _>>()?;
        let credentials = match (&self.username, &self.password) {
            (None, None) => None,
            (Some(user), Some(password)) => {
                if user.is_empty() {
                    return Err(SafetyConfigError::new("smtp.username", "is empty"));
                }
                if !is_loopback(host) {
                    return Err(SafetyConfigError::new(
                        "smtp.username",
                        format!(
                            "credentials would cross the network in plain text to {host:?}; \
                             use credentials only with a relay on this machine (localhost)"
                        ),
                    ));
                }
                Some((user.clone(), password.clone()))
            }
            (Some(_), None) => {
                return Err(SafetyConfigError::new(
                    "smtp.password",
                    "missing: username and password go together",
                ));
            }
            (None, Some(_)) => {
                return Err(SafetyConfigError::new(
                    "smtp.username",
                    "missing: username and password go together",
                ));
            }
        };
        Ok(ValidSmtp {
            host: host.to_owned(),
            port: self.port,
            from,
            to,
            credentials,
            timeout: timeout("smtp.timeout_secs", self.timeout_secs)?,
        })
    }
}

fn is_loopback(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

fn mailbox(field: &str, text: &str) -> Result<Mailbox, SafetyConfigError> {
    text.parse::<Mailbox>().map_err(|e| {
        SafetyConfigError::new(field, format!("{text:?} is not an email address ({e})"))
    })
}

fn timeout(field: &str, seconds: f64) -> Result<Duration, SafetyConfigError> {
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= MAX_TIMEOUT_SECS) {
        return Err(SafetyConfigError::new(
            field,
            format!("{seconds} is out of range: use more than 0 and at most {MAX_TIMEOUT_SECS}"),
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

fn http_url(field: &str, text: &str) -> Result<reqwest::Url, SafetyConfigError> {
    let url = reqwest::Url::parse(text)
        .map_err(|e| SafetyConfigError::new(field, format!("not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(SafetyConfigError::new(
            field,
            "must be an http:// or https:// URL with a host",
        ));
    }
    Ok(url)
}

/// The admin link must be an http(s) URL once its placeholders are filled, and name no other
/// placeholder.
fn check_link(link: &str) -> Result<(), SafetyConfigError> {
    let mut rest = link;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(SafetyConfigError::new("admin_link", "has an unclosed '{'"));
        };
        let name = &after[..close];
        if !LINK_PLACEHOLDERS.contains(&name) {
            return Err(SafetyConfigError::new(
                "admin_link",
                format!(
                    "unknown placeholder {{{name}}}; use {}",
                    LINK_PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(" or ")
                ),
            ));
        }
        rest = &after[close + 1..];
    }
    http_url("admin_link", &fill_link(link, "c", 1)).map(|_| ())
}

/// `template` with its placeholders replaced (values percent-encoded).
pub(crate) fn fill_link(template: &str, conversation_id: &str, message_id: i64) -> String {
    template
        .replace("{conversation_id}", &percent_encode(conversation_id))
        .replace("{message_id}", &message_id.to_string())
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Texts keyed by language, keys normalised (`de_AT` → `de-at`), every text non-blank.
fn texts(
    field: &str,
    map: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, SafetyConfigError> {
    let mut out = BTreeMap::new();
    for (language, text) in map {
        let Some(key) = normalize_language(language) else {
            return Err(SafetyConfigError::new(
                format!("{field}.{language}"),
                "is not a language tag (like en, de or pt-BR)",
            ));
        };
        if text.trim().is_empty() {
            return Err(SafetyConfigError::new(
                format!("{field}.{language}"),
                "is empty",
            ));
        }
        if out.insert(key, text.trim().to_owned()).is_some() {
            return Err(SafetyConfigError::new(
                format!("{field}.{language}"),
                "names a language given twice (tags are case-insensitive)",
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> Result<SafetyConfig, Box<figment::Error>> {
        use figment::providers::{Format, Toml};
        figment::Figment::new()
            .merge(Toml::string(toml_text))
            .extract()
            .map_err(Box::new)
    }

    fn smtp() -> SmtpConfig {
        SmtpConfig {
            host: "127.0.0.1".into(),
            port: 2525,
            from: "Bridle <bridle@example.org>".into(),
            to: vec!["oncall@example.org".into()],
            starttls: false,
            username: None,
            password: None,
            timeout_secs: 5.0,
        }
    }

    #[test]
    fn full_example_parses_and_validates() -> Result<(), Box<dyn std::error::Error>> {
        let config = parse(
            r#"
            webhook_url = "https://ops.example/hooks/bridle?token=abc"
            webhook_timeout_secs = 2.5
            admin_link = "https://admin.example/conversations/{conversation_id}#m{message_id}"
            [crisis]
            fr = "Appelez le 112."
            pt-BR = "Ligue 188."
            [blocked_notice]
            fr = "Cette conversation est suspendue."
            [smtp]
            host = "localhost"
            port = 1025
            from = "Bridle <bridle@example.org>"
            to = ["a@example.org", "B <b@example.org>"]
            username = "bridle"
            password = "secret"
            "#,
        )?;
        let valid = config.checked()?;
        assert_eq!(valid.crisis.keys().collect::<Vec<_>>(), ["fr", "pt-br"]);
        let smtp = valid.smtp.ok_or("smtp")?;
        assert_eq!((smtp.port, smtp.to.len()), (1025, 2));
        assert_eq!(smtp.timeout, Duration::from_secs(10));
        assert_eq!(
            valid.webhook.ok_or("webhook")?.1,
            Duration::from_millis(2500)
        );
        // Secrets stay out of debug output.
        let debug = format!("{config:?}");
        assert!(
            !debug.contains("secret") && !debug.contains("token=abc"),
            "{debug}"
        );
        Ok(())
    }

    #[test]
    fn empty_config_is_valid() {
        assert_eq!(parse("").map(|c| c.validate().is_ok()).ok(), Some(true));
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(parse("webhook = \"http://x\"").is_err());
        assert!(parse("[smtp]\nhost = \"h\"\nfrom = \"a@b.c\"\nto = []\ntls = true").is_err());
    }

    #[test]
    fn invalid_settings_name_their_field() {
        let with_smtp = |change: fn(&mut SmtpConfig)| {
            let mut smtp = smtp();
            change(&mut smtp);
            SafetyConfig {
                smtp: Some(smtp),
                ..SafetyConfig::default()
            }
        };
        let cases: Vec<(SafetyConfig, &str)> = vec![
            (
                SafetyConfig {
                    webhook_url: Some("ftp://x.example/".into()),
                    ..SafetyConfig::default()
                },
                "webhook_url",
            ),
            (
                SafetyConfig {
                    webhook_url: Some("not a url".into()),
                    ..SafetyConfig::default()
                },
                "webhook_url",
            ),
            (
                SafetyConfig {
                    webhook_timeout_secs: 0.0,
                    ..SafetyConfig::default()
                },
                "webhook_timeout_secs",
            ),
            (
                SafetyConfig {
                    webhook_timeout_secs: f64::NAN,
                    ..SafetyConfig::default()
                },
                "webhook_timeout_secs",
            ),
            (
                SafetyConfig {
                    admin_link: Some("https://a.example/{conversation}".into()),
                    ..SafetyConfig::default()
                },
                "admin_link",
            ),
            (
                SafetyConfig {
                    admin_link: Some("https://a.example/{conversation_id".into()),
                    ..SafetyConfig::default()
                },
                "admin_link",
            ),
            (
                SafetyConfig {
                    admin_link: Some("/conversations/{conversation_id}".into()),
                    ..SafetyConfig::default()
                },
                "admin_link",
            ),
            (
                SafetyConfig {
                    crisis: BTreeMap::from([("en".into(), "  ".into())]),
                    ..SafetyConfig::default()
                },
                "crisis.en",
            ),
            (
                SafetyConfig {
                    crisis: BTreeMap::from([("e n".into(), "x".into())]),
                    ..SafetyConfig::default()
                },
                "crisis.e n",
            ),
            (
                SafetyConfig {
                    crisis: BTreeMap::from([("DE".into(), "x".into()), ("de".into(), "y".into())]),
                    ..SafetyConfig::default()
                },
                "crisis.de",
            ),
            (with_smtp(|s| s.host = " ".into()), "smtp.host"),
            (with_smtp(|s| s.port = 0), "smtp.port"),
            (with_smtp(|s| s.starttls = true), "smtp.starttls"),
            (with_smtp(|s| s.from = "nobody".into()), "smtp.from"),
            (with_smtp(|s| s.to = Vec::new()), "smtp.to"),
            (
                with_smtp(|s| s.to = vec!["a@example.org".into(), "b@".into()]),
                "smtp.to[1]",
            ),
            (
                with_smtp(|s| s.username = Some("u".into())),
                "smtp.password",
            ),
            (
                with_smtp(|s| s.password = Some("p".into())),
                "smtp.username",
            ),
            (
                with_smtp(|s| {
                    s.host = "smtp.example.org".into();
                    s.username = Some("u".into());
                    s.password = Some("p".into());
                }),
                "smtp.username",
            ),
            (with_smtp(|s| s.timeout_secs = 500.0), "smtp.timeout_secs"),
        ];
        for (config, field) in cases {
            match config.validate() {
                Err(error) => assert_eq!(error.field, field, "{error}"),
                Ok(()) => panic!("{config:?} should be refused ({field})"),
            }
        }
    }

    #[test]
    fn credentials_are_accepted_for_loopback_relays() {
        for host in ["localhost", "127.0.0.1", "::1", "[::1]"] {
            let config = SafetyConfig {
                smtp: Some(SmtpConfig {
                    host: host.into(),
                    username: Some("u".into()),
                    password: Some("p".into()),
                    ..smtp()
                }),
                ..SafetyConfig::default()
            };
            assert!(config.validate().is_ok(), "{host}");
        }
    }

    #[test]
    fn redaction_hides_the_password_and_the_webhook_token() {
        let config = SafetyConfig {
            webhook_url: Some("https://ops.example:8443/hooks/bridle?token=abc".into()),
            smtp: Some(SmtpConfig {
                username: Some("u".into()),
                password: Some("hunter2".into()),
                ..smtp()
            }),
            ..SafetyConfig::default()
        };
        let redacted = config.redacted("[REDACTED]");
        assert_eq!(
            redacted.webhook_url.as_deref(),
            Some("https://ops.example:8443/[REDACTED]")
        );
        let smtp = redacted.smtp.unwrap_or_else(smtp);
        assert_eq!(smtp.password.as_deref(), Some("[REDACTED]"));
        assert_eq!(smtp.username.as_deref(), Some("u"));
    }

    #[test]
    fn links_are_filled_and_encoded() {
        assert_eq!(
            fill_link(
                "https://a.example/c/{conversation_id}?m={message_id}",
                "a b/c",
                7
            ),
            "https://a.example/c/a%20b%2Fc?m=7"
        );
    }
}
