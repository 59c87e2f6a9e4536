//! The built-in mock's entries (provider and model `mock`), added to a configuration only when
//! it uses the mock: zero config, or a file that names it. Behind a real default model the
//! mock is no model, so no key can hand it a schema to generate.

use super::{MockSettings, ModelConfig, ModelHttp, ProviderConfig, ProviderKind};
use std::collections::BTreeMap;
use std::time::Duration;

/// Adds the built-in mock (provider and model `mock`) when the configuration uses it: zero
/// config or `default_model = "mock"`, a `[models.mock]` entry, a model of provider `mock`, or a
/// `kind = "mock"` provider. Otherwise there is no `mock` model — any key could hand it a
/// schema to generate.
pub(super) fn add_mock(
    default_model: &str,
    providers: &mut BTreeMap<String, ProviderConfig>,
    models: &mut BTreeMap<String, ModelConfig>,
) {
    let named = default_model == "mock"
        || models.contains_key("mock")
        || models.values().any(|m| m.provider == "mock")
        || providers.values().any(|p| p.kind == ProviderKind::Mock);
    if !named {
        return;
    }
    models.entry("mock".into()).or_insert(ModelConfig {
        provider: "mock".into(),
        model: "bridle-mock".into(),
        native_structured_output: false,
        system_role: true,
        temperature: None,
        max_tokens: None,
        escalate_to: None,
        escalate_after: None,
        failover: Vec::new(),
        http: ModelHttp::default(),
    });
    if models.values().any(|m| m.provider == "mock") {
        providers.entry("mock".into()).or_insert(ProviderConfig {
            kind: ProviderKind::Mock,
            base_url: String::new(),
            api_key: None,
            api_key_env: None,
            timeout: Duration::from_secs(60),
            api_version: None,
            mock: MockSettings::default(),
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::config::tests::env;
    use crate::config::{Config, ProviderKind};

    #[test]
    fn the_mock_is_a_model_only_when_the_configuration_uses_it() {
        let upstream = "[providers.up]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
                        [models.gpt]\nprovider = \"up\"\n";
        let openai_env = env(&[("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")]);
        let without = [
            (String::new(), openai_env.clone()),
            (format!("default_model = \"gpt\"\n{upstream}"), env(&[])),
            (
                format!("default_model = \"gpt\"\n{upstream}"),
                openai_env.clone(),
            ),
        ];
        for (text, environment) in without {
            let c = Config::from_toml(&text, &environment).unwrap();
            assert!(!c.models.contains_key("mock"), "{text}: {:?}", c.models);
            assert!(!c.providers.contains_key("mock"), "{text}");
        }
        let with = [
            (String::new(), env(&[])),
            ("default_model = \"mock\"".to_owned(), openai_env.clone()),
            (
                format!(
                    "default_model = \"gpt\"\n{upstream}[providers.mock]\nkind = \"mock\"\nseed = 3"
                ),
                env(&[]),
            ),
            (
                format!("default_model = \"gpt\"\n{upstream}[providers.fake]\nkind = \"mock\""),
                env(&[]),
            ),
            (
                format!("default_model = \"gpt\"\n{upstream}[models.mock]\nprovider = \"mock\""),
                env(&[]),
            ),
            (
                "[models.small]\nprovider = \"mock\"".to_owned(),
                openai_env.clone(),
            ),
        ];
        for (text, environment) in with {
            let c = Config::from_toml(&text, &environment).unwrap();
            assert_eq!(c.providers["mock"].kind, ProviderKind::Mock, "{text}");
            assert_eq!(c.models["mock"].provider, "mock", "{text}");
        }
        let named = Config::from_toml(
            &format!(
                "default_model = \"gpt\"\n{upstream}[providers.mock]\nkind = \"mock\"\nseed = 3"
            ),
            &env(&[]),
        )
        .unwrap();
        assert_eq!(named.providers["mock"].mock.seed, 3);
        // A model named "mock" on a real provider brings no built-in mock provider.
        let renamed = Config::from_toml(
            &format!("default_model = \"mock\"\n{upstream}[models.mock]\nprovider = \"up\""),
            &env(&[]),
        )
        .unwrap();
        assert_eq!(renamed.models["mock"].provider, "up");
        assert!(!renamed.providers.contains_key("mock"));
    }
}
