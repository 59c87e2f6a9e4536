//! [`Router`]: which model each attempt of a turn goes to — the turn's own model, then the
//! models its `escalate_to` chain names once a model has had its failed content attempts, and
//! for one attempt after a provider error the failing tier's `failover` models in order.
//!
//! A *tier* is a model of the escalation chain; the model answering for it is the tier itself
//! or one of its failover models standing in. Content failures count against the tier (so a
//! stand-in's invalid replies bring escalation nearer, as the tier's own would); provider
//! errors never do. The rules in words: `docs/escalation.md`.

use crate::engine::Model;
use crate::providers::ProviderError;
use crate::store::Route;
use std::collections::BTreeMap;
use std::time::Duration;

/// A move from one model to another, for metrics and events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Moved {
    /// Why.
    pub route: Route,
    /// The model left.
    pub from: String,
    /// The model the next attempt goes to.
    pub to: String,
}

/// When the next attempt may go after a provider error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AfterError {
    /// At once, to another model (a failover).
    Moved(Moved),
    /// After the retry delay (at least `Retry-After`), to the same tier.
    Wait(Option<Duration>),
}

/// The models of one turn and where it stands among them.
#[derive(Debug)]
pub(crate) struct Router<'a> {
    models: &'a BTreeMap<String, Model>,
    /// The model of the escalation chain the turn is at.
    tier: &'a Model,
    /// The model answering for the tier: the tier, or `tier.failover[stand_in - 1]`.
    current: &'a Model,
    stand_in: usize,
    /// Failed content attempts on this tier.
    content_failures: u32,
    /// Failed content attempts after which this tier escalates.
    escalate_after: u32,
    /// The current model already had a 429 it waited for in this turn.
    waited_on_429: bool,
    /// The move the next attempt makes, when it goes to another model than the previous
    /// attempt (`None`: the turn's own model, or a retry on the previous attempt's model).
    pending: Option<Moved>,
}

impl<'a> Router<'a> {
    /// A turn starting on `model`, with `max_attempts` attempts.
    pub fn new(models: &'a BTreeMap<String, Model>, model: &'a Model, max_attempts: u32) -> Self {
        Self {
            models,
            tier: model,
            current: model,
            stand_in: 0,
            content_failures: 0,
            escalate_after: escalate_after(model, max_attempts),
            waited_on_429: false,
            pending: None,
        }
    }

    /// The model the next attempt goes to.
    pub fn current(&self) -> &'a Model {
        self.current
    }

    /// The move the next attempt makes to reach [`Router::current`], once: the attempt after
    /// it is a retry on the same model unless the router moves again. Taken when the attempt
    /// starts, so a move no attempt follows (the attempts or the token budget ran out) is
    /// neither recorded nor counted.
    pub fn take_move(&mut self) -> Option<Moved> {
        self.pending.take()
    }

    /// A content attempt failed (invalid or aborted), `left` attempts remain: escalates when
    /// the tier has had its failed content attempts and names a next model.
    pub fn content_failed(&mut self, left: u32) -> Option<Moved> {
        self.content_failures += 1;
        if self.content_failures < self.escalate_after {
            return None;
        }
        let next = self
            .tier
            .settings
            .escalate_to
            .as_deref()
            .and_then(|name| self.models.get(name))?;
        let from = self.current.name.clone();
        self.tier = next;
        self.escalate_after = escalate_after(next, left);
        self.content_failures = 0;
        self.stand(0);
        Some(self.moved(Route::Escalated, from))
    }

    /// A retryable provider error of the current model: the next failover model of the tier
    /// takes the next attempt at once — except a 429 whose `Retry-After` fits within
    /// `max_delay`, waited for once per model and turn. With no failover model left, the tier's
    /// own model is retried after the delay.
    pub fn provider_failed(&mut self, error: &ProviderError, max_delay: Duration) -> AfterError {
        let rate_limited = matches!(error, ProviderError::Status { status: 429, .. });
        if rate_limited
            && !self.waited_on_429
            && error.retry_after().is_some_and(|wait| wait <= max_delay)
        {
            self.waited_on_429 = true;
            return AfterError::Wait(error.retry_after());
        }
        let from = self.current.name.clone();
        let next = self.stand_in + 1;
        if next <= self.tier.settings.failover.len() {
            self.stand(next);
            return AfterError::Moved(self.moved(Route::Failover, from));
        }
        let was_standing_in = self.stand_in != 0;
        self.stand(0);
        if was_standing_in {
            self.moved(Route::Failover, from);
        }
        AfterError::Wait(error.retry_after())
    }

    /// Puts stand-in `index` of the tier (0: the tier itself) in front.
    fn stand(&mut self, index: usize) {
        let current = match index {
            0 => Some(self.tier),
            n => self
                .tier
                .settings
                .failover
                .get(n - 1)
                .and_then(|name| self.models.get(name)),
        };
        if let Some(model) = current {
            if !std::ptr::eq(model, self.current) {
                self.waited_on_429 = false;
            }
            self.current = model;
            self.stand_in = index;
        }
    }

    fn moved(&mut self, route: Route, from: String) -> Moved {
        let moved = Moved {
            route,
            from,
            to: self.current.name.clone(),
        };
        self.pending = Some(moved.clone());
        moved
    }
}

/// Failed content attempts before `model` escalates: its `escalate_after`, else half of the
/// `left` attempts rounded up (at least 1). Without `escalate_to` it never does.
fn escalate_after(model: &Model, left: u32) -> u32 {
    match (&model.settings.escalate_to, model.settings.escalate_after) {
        (None, _) => u32::MAX,
        (Some(_), Some(after)) => after,
        (Some(_), None) => left.div_ceil(2).max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use bridle_core::Contracts;
    use std::sync::Arc;

    /// Mock models: `small` escalates to `large` (after `after`, when given) and fails over to
    /// `b1` then `b2`.
    fn models(after: Option<u32>) -> BTreeMap<String, Model> {
        let after = after.map_or(String::new(), |n| format!("escalate_after = {n}\n"));
        let text = format!(
            "[models.small]\nprovider = \"mock\"\nescalate_to = \"large\"\n{after}failover = [\"b1\", \"b2\"]\n\
             [models.large]\nprovider = \"mock\"\n[models.b1]\nprovider = \"mock\"\n[models.b2]\nprovider = \"mock\"\n"
        );
        let config = Config::from_toml(&text, &BTreeMap::new()).unwrap();
        let contracts = Arc::new(Contracts::builtin().unwrap());
        config
            .models
            .iter()
            .map(|(name, settings)| {
                let provider =
                    crate::engine::build_provider(&config, settings, &contracts).unwrap();
                let model = Model {
                    name: name.clone(),
                    provider,
                    settings: settings.clone(),
                };
                (name.clone(), model)
            })
            .collect()
    }

    fn status(status: u16, retry_after: Option<u64>) -> ProviderError {
        ProviderError::Status {
            status,
            retry_after: retry_after.map(Duration::from_secs),
            message: String::new(),
        }
    }

    const MAX_DELAY: Duration = Duration::from_secs(8);

    #[test]
    fn escalates_after_half_the_attempts_by_default_and_once_told() {
        let table = models(None);
        let mut router = Router::new(&table, &table["small"], 5);
        assert_eq!(
            router.content_failed(4),
            None,
            "3 of 5 attempts are small's"
        );
        assert_eq!(router.content_failed(3), None);
        let moved = router.content_failed(2).unwrap();
        assert_eq!(
            (moved.route, moved.from.as_str(), moved.to.as_str()),
            (Route::Escalated, "small", "large")
        );
        assert_eq!(router.current().name, "large");
        assert_eq!(router.take_move(), Some(moved));
        assert_eq!(
            router.take_move(),
            None,
            "only the first attempt there is marked"
        );
        // The end of the chain: no further move.
        assert_eq!(router.content_failed(1), None);

        let table = models(Some(1));
        let mut router = Router::new(&table, &table["small"], 5);
        assert!(router.content_failed(4).is_some());
    }

    #[test]
    fn provider_errors_fail_over_in_order_then_wait_on_the_model_itself() {
        let table = models(None);
        let mut router = Router::new(&table, &table["small"], 5);
        let AfterError::Moved(moved) = router.provider_failed(&status(503, None), MAX_DELAY) else {
            panic!("a 503 fails over")
        };
        assert_eq!((moved.from.as_str(), moved.to.as_str()), ("small", "b1"));
        let timeout = ProviderError::Timeout(Duration::from_secs(1));
        assert!(matches!(
            router.provider_failed(&timeout, MAX_DELAY),
            AfterError::Moved(Moved { ref to, .. }) if to == "b2"
        ));
        // Every failover failed: back to small, after the retry delay.
        assert_eq!(
            router.provider_failed(&status(500, None), MAX_DELAY),
            AfterError::Wait(None)
        );
        assert_eq!(router.current().name, "small");
        let back = router.take_move().unwrap();
        assert_eq!(
            (back.route, back.from.as_str(), back.to.as_str()),
            (Route::Failover, "b2", "small")
        );
        // Provider errors never bring escalation nearer.
        assert_eq!(router.content_failed(4), None);
    }

    #[test]
    fn a_429_is_waited_for_once_when_its_retry_after_fits() {
        let table = models(None);
        let mut router = Router::new(&table, &table["small"], 5);
        assert_eq!(
            router.provider_failed(&status(429, Some(2)), MAX_DELAY),
            AfterError::Wait(Some(Duration::from_secs(2)))
        );
        assert_eq!(router.current().name, "small");
        assert!(matches!(
            router.provider_failed(&status(429, Some(2)), MAX_DELAY),
            AfterError::Moved(_)
        ));
        // A Retry-After past max_delay fails over at once.
        let mut router = Router::new(&table, &table["small"], 5);
        assert!(matches!(
            router.provider_failed(&status(429, Some(60)), MAX_DELAY),
            AfterError::Moved(_)
        ));
    }
}
