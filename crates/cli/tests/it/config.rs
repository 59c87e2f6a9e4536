//! `bridle config check` and `bridle config show`: the configuration `serve` would run with —
//! file, `BRIDLE__…` overlay, `OPENAI_*`, `--data-dir` — checked with each mistake named by its
//! key path (exit 2), or shown as TOML with every default filled in and secrets redacted, which
//! loads again as the same configuration.

use crate::{bridle, fixture};
use assert_cmd::Command;
use predicates::str::contains;
use std::path::Path;

/// `bridle config ACTION` run in `dir`, with no configuration in its environment.
pub fn config(dir: &Path, action: &str) -> Command {
    let mut cmd = bridle();
    cmd.env_clear().current_dir(dir).args(["config", action]);
    cmd
}

/// A configuration that sets a key of every section (one provider of each kind, the optional
/// tables); `secrets` adds a literal API key, SMTP credentials and a webhook URL with a token.
/// Needs `UP_KEY` in the environment.
pub fn full_config(dir: &Path, secrets: bool) -> String {
    let script = dir.join("script.json");
    std::fs::write(&script, r#"{"turns": [{"attempts": [{"valid": true}]}]}"#).unwrap();
    let contracts = fixture("contracts");
    let mut text = format!(
        r#"
data_dir = {data:?}
store_url = {store:?}
store_commit = "after_reply"
contracts_dirs = [{contracts:?}]
default_model = "gpt"

[retry]
max_attempts = 4
delay_ms = 10
backoff = 2.0
max_delay_ms = 100
jitter = 0.1
max_turn_tokens = 20000

[retry.contracts.selfhelp-response]
max_attempts = 5
max_turn_tokens = 8000

[providers.up]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "UP_KEY"
timeout_secs = 2.5

[providers.claude]
kind = "anthropic"

[providers.az]
kind = "azure"
base_url = "https://res.openai.azure.com"
api_version = "2024-10-21"

[providers.gem]
kind = "gemini"

[providers.mock]
kind = "mock"
seed = 7
fault_rate = 0.25
faults = [{{ kind = "wrong_key" }}, {{ kind = "http429", retry_after_secs = 2 }}]
latency_ms = 5
stream_piece_chars = 3
stream_interval_ms = 1
script = {script:?}

[models.gpt]
provider = "up"
model = "gpt-4o"
native_structured_output = true
system_role = false
temperature = 0.2
max_tokens = 100
escalate_to = "mock"
escalate_after = 2
failover = ["mock"]
headers = {{ "X-Team" = "blue" }}
query = {{ foo = "bar" }}
timeout_secs = 5.0

[server]
bind = "127.0.0.1:9999"
key_file = {keys:?}

[server.limits]
redis_url = "redis://cache.internal:6379"

[safety]
admin_link = "https://admin.example/c/{{conversation_id}}"

[safety.crisis]
fr = "Appelez le 112."

[safety.blocked_notice]
fr = "Conversation suspendue."

[safety.smtp]
host = "127.0.0.1"
from = "Bridle <bridle@example.org>"
to = ["oncall@example.org"]

[retention]
payload_days = 30

[telemetry]
otlp_endpoint = "http://127.0.0.1:4318"
protocol = "grpc"
service_name = "bridle-eu"
sample_ratio = 0.25
capture_content = true
trace_url_template = "https://jaeger.example/trace/{{trace_id}}"

[log]
format = "json"
"#,
        data = dir.join("data").display().to_string(),
        store = format!("sqlite://{}", dir.join("data/other.db").display()),
        contracts = contracts.display().to_string(),
        script = script.display().to_string(),
        keys = dir.join("keys.json").display().to_string(),
    );
    if secrets {
        text = text.replace(
            "[safety]\n",
            "[safety]\nwebhook_url = \"https://ops.example/hooks/bridle?token=abc\"\n",
        );
        text = text.replace(
            "to = [\"oncall@example.org\"]\n",
            "to = [\"oncall@example.org\"]\nusername = \"bridle\"\npassword = \"hunter2\"\n",
        );
        text.push_str(
            "\n[providers.keyed]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
             api_key = \"sk-secret\"\n",
        );
    }
    text
}

/// The standard output of a command that must succeed.
pub fn stdout_of(cmd: &mut Command) -> String {
    let output = cmd.output().unwrap();
    assert!(
        output.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn check_says_ok_and_what_it_found() {
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), "check")
        .assert()
        .success()
        .stdout(contains(
            "ok: models mock (default mock); providers mock; store sqlite://./bridle-data/bridle.db; \
             listening on 127.0.0.1:8080; 10 requests/min and 3 conversations per user (in process)",
        ));
    let file = dir.path().join("bridle.toml");
    std::fs::write(&file, full_config(dir.path(), true)).unwrap();
    config(dir.path(), "check")
        .arg(&file)
        .env("UP_KEY", "k")
        .assert()
        .success()
        .stdout(contains("models gpt, mock (default gpt)"))
        .stdout(contains("shared in Redis"));
    // Nothing was created: checking is not starting.
    assert!(!dir.path().join("bridle-data").exists());
    assert!(!dir.path().join("data").exists());
}

#[test]
fn check_names_the_key_path_of_each_mistake_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bridle.toml");
    for (text, path) in [
        ("default_model = \"nope\"", "default_model"),
        ("data_dir = 3", "data_dir"),
        ("colour = \"blue\"", "colour"),
        ("[retry]\nmax_attempts = 0", "retry.max_attempts"),
        ("[retry]\nattempts = 2", "retry.attempts"),
        (
            "[providers.up]\nkind = \"openai\"\nbase_url = \"ftp://x\"",
            "providers.up.base_url",
        ),
        (
            "[providers.up]\nkind = \"openai\"\nbase_url = \"http://x\"\nseed = 1",
            "providers.up.seed",
        ),
        ("[models.m]\nprovider = \"ghost\"", "models.m.provider"),
        (
            "[models.m]\nprovider = \"mock\"\ntemperature = 9.0",
            "models.m.temperature",
        ),
        ("[safety]\nwebhook_url = \"ftp://x\"", "safety.webhook_url"),
        (
            "[safety.smtp]\nhost = \"h\"\nfrom = \"nobody\"\nto = [\"a@b.c\"]",
            "safety.smtp.from",
        ),
        ("[server]\nmax_body_bytes = 10", "server.max_body_bytes"),
        ("[server]\nport = 8080", "server.port"),
        (
            "[server.limits]\nrequests_per_minute = 0",
            "server.limits.requests_per_minute",
        ),
        ("[server.limits]\nrpm = 5", "server.limits.rpm"),
        ("[retention]\npayload_days = 0", "retention.payload_days"),
        ("[telemetry]\nsample_ratio = 2.0", "telemetry.sample_ratio"),
        (
            "[telemetry]\notlp_endpoint = \"ftp://collector\"",
            "telemetry.otlp_endpoint",
        ),
        ("[telemetry]\nprotocol = \"udp\"", "telemetry.protocol"),
        (
            "[providers.mock]\nkind = \"mock\"\nfault_rate = 1.5",
            "providers.mock.fault_rate",
        ),
        (
            "[providers.mock]\nkind = \"mock\"\nlatency_ms = \"slow\"",
            "providers.mock.latency_ms",
        ),
        (
            "[providers.mock]\nkind = \"mock\"\nscript = \"no-such-script.json\"",
            "providers.mock.script",
        ),
    ] {
        std::fs::write(&file, text).unwrap();
        let output = config(dir.path(), "check").arg(&file).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{text}: {stderr}");
        assert!(
            stderr.contains(&format!("configuration: {path}: ")),
            "{text}: {stderr}"
        );
        assert!(output.stdout.is_empty(), "{text}");
    }
    config(dir.path(), "check")
        .arg(dir.path().join("missing.toml"))
        .assert()
        .code(2)
        .stderr(contains("does not exist"));
}

#[test]
fn the_environment_and_the_command_line_count_as_for_serve() {
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), "check")
        .env("BRIDLE__RETRY__MAX_ATTEMPTS", "0")
        .assert()
        .code(2)
        .stderr(contains(
            "configuration: retry.max_attempts: must be 1–20, got 0",
        ));
    config(dir.path(), "check")
        .env("BRIDLE__SERVER__LIMITS__REQUESTS_PER_MINUTE", "many")
        .assert()
        .code(2)
        .stderr(contains("server.limits.requests_per_minute: "))
        .stderr(contains("environment"));
    let file = dir.path().join("bridle.toml");
    std::fs::write(
        &file,
        "data_dir = \"/from/file\"\n[server.limits]\nenabled = true\n",
    )
    .unwrap();
    let shown = stdout_of(
        config(dir.path(), "show")
            .env("BRIDLE_CONFIG", &file)
            .env("BRIDLE__SERVER__LIMITS__REQUESTS_PER_MINUTE", "7")
            .env("BRIDLE_DATA_DIR", "/from/flag")
            .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
            .env("OPENAI_API_KEY", "sk-env")
            .args(["--bind", "0.0.0.0:1234"]),
    );
    for line in [
        "data_dir = \"/from/flag\"",
        "store_url = \"sqlite:///from/flag/bridle.db\"",
        "default_model = \"openai\"",
        "[providers.openai]",
        "api_key_env = \"OPENAI_API_KEY\"",
        "timeout_secs = 120.0",
        "model = \"gpt-4o-mini\"",
        "bind = \"0.0.0.0:1234\"",
        "requests_per_minute = 7",
    ] {
        assert!(shown.lines().any(|l| l == line), "{line} not in\n{shown}");
    }
    assert!(!shown.contains("sk-env"), "{shown}");
}

#[test]
fn show_redacts_every_secret() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bridle.toml");
    let text = full_config(dir.path(), true)
        .replace(
            "redis://cache.internal:6379",
            "redis://:redis-pw@cache.internal:6379",
        )
        .replace(
            &format!(
                "store_url = {:?}",
                format!("sqlite://{}", dir.path().join("data/other.db").display())
            ),
            "store_url = \"postgres://bridle:pg-pw@db/bridle\"",
        );
    std::fs::write(&file, text).unwrap();
    let shown = stdout_of(
        config(dir.path(), "show")
            .arg(&file)
            .env("UP_KEY", "up-key-value"),
    );
    for secret in [
        "sk-secret",
        "hunter2",
        "token=abc",
        "hooks/bridle",
        "redis-pw",
        "pg-pw",
        "up-key-value",
    ] {
        assert!(!shown.contains(secret), "{secret} in\n{shown}");
    }
    for line in [
        "api_key = \"[REDACTED]\"",
        "password = \"[REDACTED]\"",
        "webhook_url = \"https://ops.example/[REDACTED]\"",
        "redis_url = \"redis://[REDACTED]@cache.internal:6379\"",
        "store_url = \"postgres://bridle:[REDACTED]@db/bridle\"",
        "api_key_env = \"UP_KEY\"",
        "username = \"bridle\"",
    ] {
        assert!(shown.lines().any(|l| l == line), "{line} not in\n{shown}");
    }
}

#[test]
fn what_show_prints_loads_as_the_same_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bridle.toml");
    for text in [String::new(), full_config(dir.path(), false)] {
        std::fs::write(&file, &text).unwrap();
        let first = stdout_of(config(dir.path(), "show").arg(&file).env("UP_KEY", "k"));
        let shown = dir.path().join("shown.toml");
        std::fs::write(&shown, &first).unwrap();
        let second = stdout_of(config(dir.path(), "show").arg(&shown).env("UP_KEY", "k"));
        assert_eq!(first, second, "{text}");
        config(dir.path(), "check")
            .arg(&shown)
            .env("UP_KEY", "k")
            .assert()
            .success();
        // Every default is written out: nothing in the output is left to one.
        for key in ["sweep_every_secs", "webhook_timeout_secs", "lease_ttl_secs"] {
            assert!(first.contains(key), "{key} not in\n{first}");
        }
    }
}
