//! [`EngineMetrics`]: the Prometheus series the turn loop and the safety policy feed — turns
//! by outcome, attempts by outcome, repairs by kind, violations by rule, upstream errors and
//! latency, tokens (first attempts vs retries), escalations and failovers between models, turns
//! stopped by their token budget, and safety actions. The server encodes them
//! with its own HTTP series at `/metrics`.
//!
//! Label values are bounded: contracts are named only when they are loaded contracts (a
//! schema sent inline on the OpenAI-compatible endpoint is `inline`), rules and repair kinds
//! come from fixed sets, providers and models from the configuration.

use crate::providers::{ProviderError, Usage};
use bridle_core::{Contract, Contracts, Repair, Violation};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::BTreeSet;
use std::time::Duration;

/// Label value for a contract that is not one of the loaded contracts.
pub const INLINE_CONTRACT: &str = "inline";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ContractOutcome {
    contract: String,
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ContractKind {
    contract: String,
    kind: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ContractRule {
    contract: String,
    rule: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamError {
    provider: String,
    kind: &'static str,
    status: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ContractLabel {
    contract: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabel {
    provider: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabels {
    contract: String,
    /// `prompt` or `completion`.
    direction: &'static str,
    /// `first` (the first attempt of a turn) or `retry`.
    attempt: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    /// The configured model left.
    from: String,
    /// The configured model the next attempt went to.
    to: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SafetyLabels {
    level: String,
    action: String,
}

fn upstream_buckets() -> Histogram {
    // 1 ms … ~65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

fn attempts_buckets() -> Histogram {
    Histogram::new([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0])
}

/// What one attempt ended with, for [`EngineMetrics::attempt`].
#[derive(Debug, Clone, Copy)]
pub enum AttemptOutcome<'a> {
    /// The reply met the contract.
    Valid {
        /// Repairs made to read it.
        repairs: &'a [Repair],
    },
    /// The reply broke the contract.
    Invalid {
        /// What it broke.
        violations: &'a [Violation],
        /// Repairs made while reading it.
        repairs: &'a [Repair],
    },
    /// The provider call failed.
    ProviderError(&'a ProviderError),
    /// The streamed reply was stopped early: what it had received already broke the contract.
    Aborted {
        /// What it broke.
        violations: &'a [Violation],
    },
}

/// The engine's Prometheus series.
#[derive(Debug)]
pub struct EngineMetrics {
    registry: Registry,
    known_contracts: BTreeSet<String>,
    turns: Family<ContractOutcome, Counter>,
    turn_attempts: Family<ContractOutcome, Histogram, fn() -> Histogram>,
    attempts: Family<ContractOutcome, Counter>,
    repairs: Family<ContractKind, Counter>,
    violations: Family<ContractRule, Counter>,
    upstream_errors: Family<UpstreamError, Counter>,
    upstream_latency: Family<ProviderLabel, Histogram, fn() -> Histogram>,
    tokens: Family<TokenLabels, Counter>,
    safety: Family<SafetyLabels, Counter>,
    tokens_saved: Family<ContractLabel, Counter>,
    aborted_tokens: Family<ContractLabel, Counter>,
    purged: Counter,
    escalations: Family<RouteLabels, Counter>,
    failovers: Family<RouteLabels, Counter>,
    budget_spent: Family<ContractLabel, Counter>,
    /// Output tokens of valid attempts per contract (sum, count): the length an aborted
    /// attempt would probably have reached.
    completed: std::sync::Mutex<std::collections::HashMap<String, (u64, u64)>>,
}

impl EngineMetrics {
    /// The series, with contract labels for the contracts in `contracts`.
    pub fn new(contracts: &Contracts) -> Self {
        let mut registry = Registry::default();
        let turns = Family::<ContractOutcome, Counter>::default();
        registry.register(
            "bridle_turns",
            "Turns (one user message each) by final outcome: valid, fallback, exhausted, provider_error, store_error",
            turns.clone(),
        );
        let turn_attempts = Family::new_with_constructor(attempts_buckets as fn() -> Histogram);
        registry.register(
            "bridle_turn_attempts",
            "Attempts a turn needed, by final outcome",
            turn_attempts.clone(),
        );
        let attempts = Family::<ContractOutcome, Counter>::default();
        registry.register(
            "bridle_attempts",
            "Attempts (provider calls) by outcome: valid, invalid, provider_error",
            attempts.clone(),
        );
        let repairs = Family::<ContractKind, Counter>::default();
        registry.register(
            "bridle_repairs",
            "Repairs applied to replies, by kind (counted per occurrence)",
            repairs.clone(),
        );
        let violations = Family::<ContractRule, Counter>::default();
        registry.register(
            "bridle_violations",
            "Contract violations found in replies, by rule",
            violations.clone(),
        );
        let upstream_errors = Family::<UpstreamError, Counter>::default();
        registry.register(
            "bridle_upstream_errors",
            "Failed provider calls by provider, kind (timeout, connection, status, decode, stream) and HTTP status",
            upstream_errors.clone(),
        );
        let upstream_latency = Family::new_with_constructor(upstream_buckets as fn() -> Histogram);
        registry.register(
            "bridle_upstream_latency_seconds",
            "Wall time of provider calls, successful or not",
            upstream_latency.clone(),
        );
        let tokens = Family::<TokenLabels, Counter>::default();
        registry.register(
            "bridle_tokens",
            "Tokens reported by providers, by direction and whether the attempt was a retry",
            tokens.clone(),
        );
        let safety = Family::<SafetyLabels, Counter>::default();
        registry.register(
            "bridle_safety_actions",
            "Safety policy actions by danger level and action (log, notify, block)",
            safety.clone(),
        );
        let tokens_saved = Family::<ContractLabel, Counter>::default();
        registry.register(
            "bridle_stream_tokens_saved",
            "Output tokens not generated thanks to early abort (estimated: the contract's mean valid reply length minus what the aborted stream had produced)",
            tokens_saved.clone(),
        );
        let aborted_tokens = Family::<ContractLabel, Counter>::default();
        registry.register(
            "bridle_stream_aborted_tokens",
            "Output tokens streamed before an early abort (estimated from the text, four characters a token)",
            aborted_tokens.clone(),
        );
        let purged = Counter::default();
        registry.register(
            "bridle_retention_purged",
            "Attempts whose request payload and raw response the retention sweep purged",
            purged.clone(),
        );
        let escalations = Family::<RouteLabels, Counter>::default();
        registry.register(
            "bridle_escalations",
            "Turns moved to the model a model escalates to (escalate_to), by configured model from and to",
            escalations.clone(),
        );
        let failovers = Family::<RouteLabels, Counter>::default();
        registry.register(
            "bridle_failovers",
            "Attempts moved to a failover model after a provider error, by configured model from and to",
            failovers.clone(),
        );
        let budget_spent = Family::<ContractLabel, Counter>::default();
        registry.register(
            "bridle_turn_budget_spent",
            "Turns that stopped retrying because their attempts used max_turn_tokens",
            budget_spent.clone(),
        );
        Self {
            registry,
            purged,
            escalations,
            failovers,
            budget_spent,
            tokens_saved,
            aborted_tokens,
            completed: std::sync::Mutex::default(),
            known_contracts: contracts.iter().map(|c| c.name().to_owned()).collect(),
            turns,
            turn_attempts,
            attempts,
            repairs,
            violations,
            upstream_errors,
            upstream_latency,
            tokens,
            safety,
        }
    }

    /// Adds the store's pauses of its writes ([`crate::store::TurnWrites::write_pauses`]).
    pub fn register_write_pauses(&mut self, pauses: Histogram) {
        self.registry.register(
            "bridle_store_write_pause_seconds",
            "Pauses of the store's writes (SQLite: the checkpoint that lets the log start over, two fsyncs on a disk); requests writing meanwhile wait that long",
            pauses,
        );
    }

    /// Adds the count of writes that failed after their answer went out
    /// ([`crate::store::TurnWrites::write_failures`]).
    pub fn register_write_failures(&mut self, failures: Counter) {
        self.registry.register(
            "bridle_store_write_failures",
            "Writes of the store that failed after their answer went out (store_commit = after_reply): those messages are not stored",
            failures,
        );
    }

    /// The registry to encode.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The label for `contract`: its name when it is a loaded contract, else `inline`.
    pub fn contract_label(&self, contract: &Contract) -> String {
        if self.known_contracts.contains(contract.name()) {
            contract.name().to_owned()
        } else {
            INLINE_CONTRACT.to_owned()
        }
    }

    /// Counts one attempt.
    pub fn attempt(
        &self,
        contract: &str,
        provider: &str,
        number: u32,
        latency: Duration,
        usage: Option<Usage>,
        outcome: AttemptOutcome<'_>,
    ) {
        self.upstream_latency
            .get_or_create(&ProviderLabel {
                provider: provider.to_owned(),
            })
            .observe(latency.as_secs_f64());
        if let Some(usage) = usage {
            let attempt = if number <= 1 { "first" } else { "retry" };
            for (direction, count) in [
                ("prompt", usage.input_tokens),
                ("completion", usage.output_tokens),
            ] {
                self.tokens
                    .get_or_create(&TokenLabels {
                        contract: contract.to_owned(),
                        direction,
                        attempt,
                    })
                    .inc_by(count);
            }
        }
        let (name, repairs) = match outcome {
            AttemptOutcome::Valid { repairs } => ("valid", repairs),
            AttemptOutcome::Invalid {
                violations,
                repairs,
            } => {
                for violation in violations {
                    self.violations
                        .get_or_create(&ContractRule {
                            contract: contract.to_owned(),
                            rule: violation.rule.as_str().to_owned(),
                        })
                        .inc();
                }
                ("invalid", repairs)
            }
            AttemptOutcome::Aborted { violations } => {
                for violation in violations {
                    self.violations
                        .get_or_create(&ContractRule {
                            contract: contract.to_owned(),
                            rule: violation.rule.as_str().to_owned(),
                        })
                        .inc();
                }
                ("aborted", &[][..])
            }
            AttemptOutcome::ProviderError(error) => {
                let status = match error {
                    ProviderError::Status { status, .. } => status.to_string(),
                    _ => String::new(),
                };
                self.upstream_errors
                    .get_or_create(&UpstreamError {
                        provider: provider.to_owned(),
                        kind: error.kind(),
                        status,
                    })
                    .inc();
                ("provider_error", &[][..])
            }
        };
        for repair in repairs {
            self.repairs
                .get_or_create(&ContractKind {
                    contract: contract.to_owned(),
                    kind: repair.kind.as_str().to_owned(),
                })
                .inc_by(u64::from(repair.count.max(1)));
        }
        self.attempts
            .get_or_create(&ContractOutcome {
                contract: contract.to_owned(),
                outcome: name,
            })
            .inc();
    }

    /// Counts one finished turn (`outcome`: valid, fallback, exhausted, provider_error,
    /// store_error) and the attempts it made, when known.
    pub fn turn(&self, contract: &str, outcome: &'static str, attempts: Option<u32>) {
        let labels = ContractOutcome {
            contract: contract.to_owned(),
            outcome,
        };
        self.turns.get_or_create(&labels).inc();
        if let Some(attempts) = attempts {
            self.turn_attempts
                .get_or_create(&labels)
                .observe(f64::from(attempts));
        }
    }

    /// Notes the output tokens of a valid attempt of `contract` (the estimate early abort's
    /// savings are measured against).
    pub fn completed_output(&self, contract: &str, tokens: u64) {
        let mut completed = self
            .completed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let entry = completed.entry(contract.to_owned()).or_default();
        entry.0 = entry.0.saturating_add(tokens);
        entry.1 += 1;
    }

    /// Counts an early abort of a `contract` attempt after `streamed` output tokens, and the
    /// tokens it saved: the contract's mean valid reply length minus `streamed` (nothing while
    /// no valid reply has been seen).
    pub fn aborted(&self, contract: &str, streamed: u64) {
        let label = ContractLabel {
            contract: contract.to_owned(),
        };
        self.aborted_tokens.get_or_create(&label).inc_by(streamed);
        let mean = self
            .completed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(contract)
            .and_then(|(sum, count)| sum.checked_div(*count));
        if let Some(mean) = mean {
            self.tokens_saved
                .get_or_create(&label)
                .inc_by(mean.saturating_sub(streamed));
        }
    }

    /// Counts one safety action.
    pub fn safety_action(&self, level: &str, action: &str) {
        self.safety
            .get_or_create(&SafetyLabels {
                level: level.to_owned(),
                action: action.to_owned(),
            })
            .inc();
    }

    /// Counts a move of a turn from configured model `from` to `to` (names from the
    /// configuration: the labels stay bounded).
    pub fn routed(&self, route: crate::store::Route, from: &str, to: &str) {
        let labels = RouteLabels {
            from: from.to_owned(),
            to: to.to_owned(),
        };
        match route {
            crate::store::Route::Escalated => self.escalations.get_or_create(&labels).inc(),
            crate::store::Route::Failover => self.failovers.get_or_create(&labels).inc(),
        };
    }

    /// Counts a turn of `contract` that stopped retrying on its token budget.
    pub fn budget_spent(&self, contract: &str) {
        self.budget_spent
            .get_or_create(&ContractLabel {
                contract: contract.to_owned(),
            })
            .inc();
    }

    /// Counts attempts purged by the retention sweep.
    pub fn purged(&self, count: u64) {
        self.purged.inc_by(count);
    }
}
