//! Tests of [`Config`](super::Config): zero config, a full file, each mistake named by its key
//! path, the environment conveniences, and retry delays.

use super::*;

/// An environment of `pairs` (also used by `builtin.rs`'s tests).
pub(super) fn env(pairs: &[(&str, &str)]) -> Environment {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn zero_config_is_sqlite_and_the_mock() {
    let c = Config::from_toml("", &env(&[])).unwrap();
    assert_eq!(c.store_url, "sqlite://./bridle-data/bridle.db");
    assert_eq!(c.default_model, "mock");
    assert_eq!(c.providers["mock"].kind, ProviderKind::Mock);
    assert_eq!(c.retry, RetryPolicy::default());
}

#[test]
fn store_commit_is_before_reply_unless_told() {
    use crate::store::Commit;
    let default = Config::from_toml("", &env(&[])).unwrap();
    assert_eq!(default.store_commit, Commit::BeforeReply);
    let first = Config::from_toml("store_commit = \"after_reply\"", &env(&[])).unwrap();
    assert_eq!(first.store_commit, Commit::AfterReply);
    let error = Config::from_toml("store_commit = \"sometimes\"", &env(&[])).unwrap_err();
    assert!(error.to_string().contains("before_reply"), "{error}");
}

#[test]
fn store_max_connections_is_one_a_writer_lane_and_two_unless_told() {
    let default = Config::from_toml("", &env(&[])).unwrap();
    assert_eq!(default.store_max_connections, 10);
    let told = Config::from_toml("store_max_connections = 24", &env(&[])).unwrap();
    assert_eq!(told.store_max_connections, 24);
    assert_eq!(told.to_raw().store_max_connections, Some(24));
    for wrong in ["0", "1001"] {
        let error =
            Config::from_toml(&format!("store_max_connections = {wrong}"), &env(&[])).unwrap_err();
        assert!(
            error.to_string().contains("store_max_connections"),
            "{error}"
        );
    }
}

#[test]
fn retention_keeps_payloads_unless_told_and_refuses_zero_days() {
    let kept = Config::from_toml("", &env(&[])).unwrap();
    assert_eq!(kept.retention.payload_days, None);
    let purged = Config::from_toml(
        "[retention]\npayload_days = 30\nsweep_every_secs = 600",
        &env(&[]),
    )
    .unwrap();
    assert_eq!(purged.retention.payload_days, Some(30));
    assert_eq!(purged.retention.sweep_every, Duration::from_secs(600));
    for bad in ["payload_days = 0", "sweep_every_secs = 0", "keep = 1"] {
        let text = format!("[retention]\n{bad}");
        assert!(Config::from_toml(&text, &env(&[])).is_err(), "{bad}");
    }
}

#[test]
fn openai_base_url_adds_the_default_upstream() {
    let c = Config::from_toml(
        "",
        &env(&[
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
            ("OPENAI_API_KEY", "sk-x"),
        ]),
    )
    .unwrap();
    assert_eq!(c.default_model, "openai");
    assert_eq!(c.providers["openai"].api_key.as_deref(), Some("sk-x"));
    assert_eq!(c.models["openai"].model, "gpt-4o-mini");
}

#[test]
fn a_full_file_is_read_and_checked() {
    let text = r#"
        data_dir = "/tmp/b"
        default_model = "gpt"
        [retry]
        max_attempts = 4
        backoff = 2.0
        [retry.contracts.selfhelp-response]
        max_attempts = 5
        [providers.up]
        kind = "openai"
        base_url = "http://127.0.0.1:1/v1"
        api_key_env = "UP_KEY"
        [models.gpt]
        provider = "up"
        model = "gpt-4o"
        system_role = false
    "#;
    let c = Config::from_toml(text, &env(&[("UP_KEY", "k")])).unwrap();
    assert_eq!(c.store_url, "sqlite:///tmp/b/bridle.db");
    assert_eq!(c.retry.max_attempts, 4);
    assert_eq!(c.retry_for("selfhelp-response").max_attempts, 5);
    assert_eq!(c.retry_for("selfhelp-response").backoff, 2.0);
    assert_eq!(c.retry_for("other").max_attempts, 4);
    assert_eq!(c.providers["up"].api_key.as_deref(), Some("k"));
    assert!(!c.models["gpt"].system_role);
}

#[test]
fn mistakes_are_named() {
    for (text, env_pairs, wanted) in [
        ("colour = 1", vec![], "colour"),
        ("[retry]\nmax_attempts = 0", vec![], "max_attempts"),
        ("[retry]\njitter = 2.0", vec![], "jitter"),
        ("[retry]\nattempts = 2", vec![], "attempts"),
        (
            "[providers.x]\nkind = \"openai\"",
            vec![],
            "base_url is required",
        ),
        (
            "[providers.x]\nkind = \"openai\"\nbase_url = \"ftp://x\"",
            vec![],
            "http://",
        ),
        (
            "[providers.x]\nkind = \"openai\"\nbase_url = \"http://x\"\napi_key_env = \"NOPE\"",
            vec![],
            "NOPE",
        ),
        ("[models.m]\nprovider = \"ghost\"", vec![], "ghost"),
        ("default_model = \"nope\"", vec![], "nope"),
        ("[providers.x]\nkind = \"smtp\"", vec![], "smtp"),
    ] {
        let e = Config::from_toml(text, &env(&env_pairs))
            .unwrap_err()
            .to_string();
        assert!(e.contains(wanted), "{wanted:?} not in {e}");
    }
}

#[test]
fn delays_back_off_cap_and_honour_retry_after() {
    let p = RetryPolicy {
        max_attempts: 5,
        delay: Duration::from_millis(100),
        backoff: 2.0,
        max_delay: Duration::from_millis(300),
        jitter: 0.0,
        max_turn_tokens: None,
    };
    assert_eq!(p.delay_after(1, None), Duration::from_millis(100));
    assert_eq!(p.delay_after(2, None), Duration::from_millis(200));
    assert_eq!(p.delay_after(3, None), Duration::from_millis(300));
    assert_eq!(
        p.delay_after(1, Some(Duration::from_secs(2))),
        Duration::from_secs(2)
    );
    let j = RetryPolicy { jitter: 0.5, ..p };
    for _ in 0..50 {
        let d = j.delay_after(1, None);
        assert!(
            d >= Duration::from_millis(50) && d <= Duration::from_millis(150),
            "{d:?}"
        );
    }
}

#[test]
fn each_mistake_is_named_by_its_key_path() {
    let script = "/nonexistent/bridle-script.json";
    for (text, path) in [
        ("colour = 1", "colour"),
        ("data_dir = 3", "data_dir"),
        ("[retry]\nmax_attempts = 0", "retry.max_attempts"),
        ("[retry]\nbackoff = 0.5", "retry.backoff"),
        ("[retry]\nattempts = 2", "retry.attempts"),
        (
            "[retry.contracts.selfhelp-response]\njitter = 2.0",
            "retry.contracts.selfhelp-response.jitter",
        ),
        ("[providers.x]\nkind = \"openai\"", "providers.x.base_url"),
        ("[providers.x]\nbase_url = \"http://x\"", "providers.x.kind"),
        (
            "[providers.x]\nkind = \"anthropic\"\ntimeout_secs = 0",
            "providers.x.timeout_secs",
        ),
        (
            "[providers.x]\nkind = \"anthropic\"\ncolour = 1",
            "providers.x.colour",
        ),
        (
            "[providers.x]\nkind = \"anthropic\"\nseed = 1",
            "providers.x.seed",
        ),
        (
            "[providers.m]\nkind = \"mock\"\nfault_rate = 2.0",
            "providers.m.fault_rate",
        ),
        (
            "[providers.m]\nkind = \"mock\"\nstream_piece_chars = 0",
            "providers.m.stream_piece_chars",
        ),
        (
            &format!("[providers.m]\nkind = \"mock\"\nscript = \"{script}\""),
            "providers.m.script",
        ),
        ("[models.m]\nprovider = \"ghost\"", "models.m.provider"),
        (
            "[models.m]\nprovider = \"mock\"\ntemperature = 3.0",
            "models.m.temperature",
        ),
        ("[models.m]\nmodel = \"x\"", "models.m.provider"),
        ("default_model = \"nope\"", "default_model"),
        ("[safety]\nwebhook_url = \"ftp://x\"", "safety.webhook_url"),
        (
            "[safety.smtp]\nhost = \"h\"\nfrom = \"a@b.c\"\nto = []",
            "safety.smtp.to",
        ),
        ("[retention]\npayload_days = 0", "retention.payload_days"),
        ("[retention]\nkeep = 1", "retention.keep"),
    ] {
        let error = Config::from_toml(text, &env(&[])).unwrap_err();
        assert_eq!(error.path, path, "{text}: {error}");
        assert!(
            error.to_string().starts_with(&format!("{path}: ")),
            "{error}"
        );
    }
}

#[test]
fn written_back_a_configuration_loads_as_itself() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"{"turns": [{"attempts": [{"valid": true}]}]}"#).unwrap();
    let text = format!(
        r#"
        default_model = "gpt"
        store_commit = "after_reply"
        contracts_dirs = ["./contracts"]
        [retry]
        max_attempts = 4
        backoff = 2.0
        jitter = 0.1
        max_turn_tokens = 20000
        [retry.contracts.selfhelp-response]
        max_attempts = 5
        max_turn_tokens = 8000
        [providers.up]
        kind = "openai"
        base_url = "http://127.0.0.1:1/v1"
        api_key_env = "UP_KEY"
        timeout_secs = 2.5
        [providers.claude]
        kind = "anthropic"
        [providers.mock]
        kind = "mock"
        seed = 7
        fault_rate = 0.25
        faults = [{{ kind = "wrong_key" }}, {{ kind = "http429", retry_after_secs = 2 }}]
        script = {script:?}
        [models.gpt]
        provider = "up"
        model = "gpt-4o"
        system_role = false
        temperature = 0.2
        max_tokens = 100
        escalate_to = "large"
        escalate_after = 2
        failover = ["mock"]
        [models.large]
        provider = "claude"
        failover = ["gpt", "mock"]
        [safety]
        admin_link = "https://admin.example/c/{{conversation_id}}"
        [safety.crisis]
        fr = "Appelez le 112."
        [retention]
        payload_days = 30
        "#
    );
    let environment = env(&[
        ("UP_KEY", "k"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
    ]);
    for text in [text.as_str(), ""] {
        let config = Config::from_toml(text, &environment).unwrap();
        let raw = config.to_raw();
        let again = raw.clone().load(&environment).unwrap();
        assert_eq!(again, config, "{raw:?}");
        // Written out, nothing is left to a default.
        assert!(raw.data_dir.is_some() && raw.store_url.is_some());
        assert!(raw.retry.max_attempts.is_some() && raw.retention.sweep_every_secs.is_some());
    }
}

#[test]
fn written_back_secrets_are_redacted() {
    let text = r#"
        store_url = "postgres://bridle:pw@db/bridle"
        [providers.up]
        kind = "openai"
        base_url = "http://127.0.0.1:1/v1"
        api_key = "sk-secret"
        [safety]
        webhook_url = "https://ops.example/hooks/bridle?token=abc"
        [safety.smtp]
        host = "localhost"
        from = "a@example.org"
        to = ["b@example.org"]
        username = "u"
        password = "hunter2"
    "#;
    let raw = Config::from_toml(text, &env(&[])).unwrap().to_raw();
    let shown = format!("{raw:?}");
    for secret in ["sk-secret", "pw@", "token=abc", "hunter2"] {
        assert!(!shown.contains(secret), "{secret} in {shown}");
    }
    assert_eq!(raw.providers["up"].api_key.as_deref(), Some(REDACTED));
    assert_eq!(
        raw.store_url.as_deref(),
        Some("postgres://bridle:[REDACTED]@db/bridle")
    );
    // A key from the environment is shown as the variable's name.
    let from_env = Config::from_toml(
        "",
        &env(&[
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
            ("OPENAI_API_KEY", "sk-x"),
        ]),
    )
    .unwrap()
    .to_raw();
    assert_eq!(from_env.providers["openai"].api_key, None);
    assert_eq!(
        from_env.providers["openai"].api_key_env.as_deref(),
        Some("OPENAI_API_KEY")
    );
}

#[test]
fn passwords_leave_urls_and_nothing_else_does() {
    for (url, shown) in [
        ("postgres://u:p@h/db", "postgres://u:[REDACTED]@h/db"),
        ("redis://:p@ss@h:6379", "redis://:[REDACTED]@h:6379"),
        ("postgres://u@h/db", "postgres://u@h/db"),
        (
            "sqlite://./bridle-data/bridle.db",
            "sqlite://./bridle-data/bridle.db",
        ),
        ("not a url", "not a url"),
    ] {
        assert_eq!(redact_password(url), shown);
    }
}

#[test]
fn azure_and_gemini_entries_take_their_defaults() {
    let text = "[providers.az]\nkind = \"azure\"\nbase_url = \"https://r.openai.azure.com\"\n\
                [providers.gem]\nkind = \"gemini\"\napi_key = \"AIza\"\n\
                [models.a]\nprovider = \"az\"\nmodel = \"my-deployment\"\n\
                [models.g]\nprovider = \"gem\"\nmodel = \"gemini-2.5-flash\"\n";
    let c = Config::from_toml(text, &env(&[])).unwrap();
    assert_eq!(c.providers["az"].kind, ProviderKind::Azure);
    assert_eq!(
        c.providers["az"].api_version.as_deref(),
        Some(bridle_providers::openai::AZURE_API_VERSION)
    );
    assert_eq!(c.providers["gem"].base_url, GEMINI_BASE_URL);
    assert_eq!(c.providers["gem"].api_version, None);
    let set = "[providers.az]\nkind = \"azure\"\nbase_url = \"https://r\"\napi_version = \"2025-01-01-preview\"\n";
    let c = Config::from_toml(set, &env(&[])).unwrap();
    assert_eq!(
        c.providers["az"].api_version.as_deref(),
        Some("2025-01-01-preview")
    );
    for (bad, key) in [
        (
            "[providers.az]\nkind = \"azure\"\n",
            "providers.az.base_url",
        ),
        (
            "[providers.az]\nkind = \"azure\"\nbase_url = \"https://r\"\napi_version = \"a&b=c\"\n",
            "providers.az.api_version",
        ),
        (
            "[providers.gem]\nkind = \"gemini\"\napi_version = \"1\"\n",
            "providers.gem.api_version",
        ),
    ] {
        let error = Config::from_toml(bad, &env(&[])).unwrap_err();
        assert!(error.to_string().contains(key), "{bad}: {error}");
    }
}

#[test]
fn a_model_s_headers_query_and_timeout_are_checked_and_kept() {
    let text = "[providers.up]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
                timeout_secs = 30\n\
                [models.gpt]\nprovider = \"up\"\ntimeout_secs = 5\n\
                headers = { \"X-Team\" = \"blue\" }\nquery = { foo = \"bar\" }\n\
                [models.plain]\nprovider = \"up\"\n";
    let c = Config::from_toml(text, &env(&[])).unwrap();
    let http = &c.models["gpt"].http;
    assert_eq!(http.headers, [("X-Team".to_owned(), "blue".to_owned())]);
    assert_eq!(http.query, [("foo".to_owned(), "bar".to_owned())]);
    assert_eq!(http.timeout, Some(Duration::from_secs(5)));
    assert_eq!(c.models["plain"].http, ModelHttp::default());
    // Written back, the keys load to the same entry; a secret-looking header is redacted.
    let again = c.to_raw().load(&env(&[])).unwrap();
    assert_eq!(&again.models["gpt"].http, http);
    let secret = text.replace("\"X-Team\" = \"blue\"", "\"X-Team-Token\" = \"t0k\"");
    let raw = Config::from_toml(&secret, &env(&[])).unwrap().to_raw();
    assert_eq!(raw.models["gpt"].headers["X-Team-Token"], REDACTED);

    let model = |line: &str| {
        format!(
            "[providers.up]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
             [models.gpt]\nprovider = \"up\"\n{line}\n"
        )
    };
    for (line, key, says) in [
        (
            "headers = { Authorization = \"Bearer x\" }",
            "models.gpt.headers",
            "cannot be overridden",
        ),
        (
            "headers = { \"Content-Type\" = \"text/plain\" }",
            "models.gpt.headers",
            "cannot be overridden",
        ),
        (
            "headers = { \"bad name\" = \"x\" }",
            "models.gpt.headers",
            "not a valid",
        ),
        ("timeout_secs = 0", "models.gpt.timeout_secs", "(0, 3600]"),
    ] {
        let error = Config::from_toml(&model(line), &env(&[])).unwrap_err();
        let text = error.to_string();
        assert!(text.contains(key) && text.contains(says), "{line}: {text}");
    }
    let many: Vec<String> = (0..=32).map(|i| format!("p{i} = \"v\"")).collect();
    let error = Config::from_toml(
        &model(&format!("query = {{ {} }}", many.join(", "))),
        &env(&[]),
    )
    .unwrap_err();
    assert!(error.to_string().contains("at most 32"), "{error}");
    let long = "v".repeat(3000);
    let error = Config::from_toml(
        &model(&format!("query = {{ foo = \"{long}\" }}")),
        &env(&[]),
    )
    .unwrap_err();
    assert!(error.to_string().contains("models.gpt.query"), "{error}");
}
