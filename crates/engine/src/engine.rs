//! [`Engine`]: the façade the server and the CLI use — configuration, contracts, the store and
//! one provider per model, and the operations on conversations (start one, send a message).

use crate::answer::{self, Answers};
use crate::chat_call::ChatCall;
use crate::config::{Config, ModelConfig, ProviderKind};
use crate::events::{EventSink, TurnEvent};
use crate::given_chat::GivenChat;
use crate::metrics::EngineMetrics;
use crate::policy::{SafetyConfigError, SafetyDecision, SafetyPolicy};
use crate::providers::gemini::GeminiOptions;
use crate::providers::openai::Azure;
use crate::providers::{
    self, Anthropic, Gemini, HttpSettings, OpenAi, OpenAiOptions, Provider, ProviderError,
};
use crate::providers::{ChatRequest, Role};
use crate::store::{self, Conversation, ConversationStatus, NewConversation, Store, StoreError};
use crate::turn::spans::StoreWrite;
use crate::turn::{TurnError, TurnInput, TurnOutcome, run_turn, turn_span};
use crate::turn_context::{self, TurnContext, UserTurn};
use bridle_core::{Contract, ContractError, Contracts};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Why an engine operation failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Loading contracts failed, or a contract name is unknown.
    #[error(transparent)]
    Contract(#[from] ContractError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A provider could not be set up.
    #[error("provider setup: {0}")]
    Provider(#[from] ProviderError),
    /// No such conversation.
    #[error("conversation {0} does not exist")]
    NoConversation(String),
    /// No such message.
    #[error("message {0} does not exist")]
    NoMessage(i64),
    /// The message cannot be replayed (not an attempt, or its provider is gone).
    #[error("cannot replay: {0}")]
    NotReplayable(String),
    /// The conversation is blocked by the safety policy.
    #[error("conversation {0} is blocked")]
    Blocked(String),
    /// No such model.
    #[error("unknown model {name:?} (known: {known})")]
    UnknownModel {
        /// Requested.
        name: String,
        /// Configured models.
        known: String,
    },
    /// The conversation's context is not a JSON object of strings.
    #[error("conversation context must be a JSON object; {0}")]
    BadContext(String),
    /// The message cannot be sent under the conversation's contract (an `<llmQuery>` limit).
    #[error("the message cannot be sent: {0}")]
    BadMessage(String),
    /// The turn produced no final message.
    #[error(transparent)]
    Turn(#[from] TurnError),
    /// The `[safety]` settings are unusable.
    #[error(transparent)]
    Safety(#[from] SafetyConfigError),
    /// A card answer does not fit the cards of the last reply (an unknown question or option,
    /// too many options, nothing chosen or written).
    #[error("the answer does not fit the question cards: {0}")]
    BadAnswer(String),
    /// The call asks what the model's provider cannot honour
    /// ([`ProviderError::Unsupported`], naming the field); nothing was sent or stored.
    #[error(transparent)]
    Refused(ProviderError),
}

/// A configured model: its provider instance and settings.
#[derive(Debug, Clone)]
pub struct Model {
    /// The entry's name (`[models.NAME]`): what requests name and attempts record.
    pub name: String,
    /// The provider, built for this model's options.
    pub provider: Arc<dyn Provider>,
    /// The model's settings.
    pub settings: ModelConfig,
}

/// Configuration, contracts, store and models.
#[derive(Debug, Clone)]
pub struct Engine {
    config: Arc<Config>,
    contracts: Arc<Contracts>,
    store: Arc<dyn Store>,
    models: Arc<BTreeMap<String, Model>>,
    policy: Arc<SafetyPolicy>,
    metrics: Arc<EngineMetrics>,
}

impl Engine {
    /// Loads contracts (built-ins + configured directories), opens the store (running its
    /// migrations) and builds a provider per model.
    pub async fn open(config: Config) -> Result<Self, EngineError> {
        if config.store_url.starts_with("sqlite:") {
            crate::private_files::create_dir(&config.data_dir).map_err(|e| {
                StoreError::Config(format!(
                    "cannot create the data dir {}: {e}",
                    config.data_dir.display()
                ))
            })?;
        }
        let options = store::StoreOptions {
            commit: config.store_commit,
            max_connections: Some(config.store_max_connections),
        };
        let store: Arc<dyn Store> =
            Arc::from(store::open_with_options(&config.store_url, options).await?);
        Self::with_store(config, store)
    }

    /// Like [`Engine::open`] with an already opened store.
    pub fn with_store(config: Config, store: Arc<dyn Store>) -> Result<Self, EngineError> {
        let mut contracts = Contracts::builtin()?;
        for dir in &config.contracts_dirs {
            contracts.load_dir(dir)?;
        }
        for contract in contracts.iter() {
            for warning in contract.warnings() {
                tracing::warn!(contract = contract.name(), "{warning}");
            }
        }
        let contracts = Arc::new(contracts);
        let mut models = BTreeMap::new();
        for (name, settings) in &config.models {
            let provider = build_provider(&config, settings, &contracts)?;
            models.insert(
                name.clone(),
                Model {
                    name: name.clone(),
                    provider,
                    settings: settings.clone(),
                },
            );
        }
        let policy = Arc::new(SafetyPolicy::new(config.safety.clone())?);
        let mut metrics = EngineMetrics::new(&contracts);
        if let Some(pauses) = store.write_pauses() {
            metrics.register_write_pauses(pauses);
        }
        if let Some(failures) = store.write_failures() {
            metrics.register_write_failures(failures);
        }
        let metrics = Arc::new(metrics);
        Ok(Self {
            config: Arc::new(config),
            contracts,
            store,
            models: Arc::new(models),
            policy,
            metrics,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The loaded contracts.
    pub fn contracts(&self) -> &Contracts {
        &self.contracts
    }

    /// The Prometheus series of turns, attempts, repairs, violations, upstream calls and
    /// safety actions.
    pub fn metrics(&self) -> &EngineMetrics {
        &self.metrics
    }

    /// Runs the retention sweep (`[retention] payload_days`) every `sweep_every` until the
    /// returned task is aborted; `None` when payloads are kept for ever. A failed sweep is
    /// logged and tried again at the next tick.
    pub fn spawn_retention(&self) -> Option<tokio::task::JoinHandle<()>> {
        let days = self.config.retention.payload_days?;
        let every = self.config.retention.sweep_every;
        let (store, metrics) = (Arc::clone(&self.store), Arc::clone(&self.metrics));
        Some(tokio::spawn(async move {
            let mut retention = bridle_store::retention::Retention::new(days);
            let mut ticks = tokio::time::interval(every);
            loop {
                ticks.tick().await;
                let purged = |count| metrics.purged(count);
                match retention.sweep(store.as_ref(), &purged).await {
                    Ok(0) => {}
                    Ok(purged) => tracing::info!(purged, days, "retention: payloads purged"),
                    Err(error) => tracing::warn!(%error, "retention sweep failed; next tick"),
                }
            }
        }))
    }

    /// The store.
    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The configured models.
    pub fn models(&self) -> impl Iterator<Item = &Model> {
        self.models.values()
    }

    /// The model named `name`, or the default model.
    pub fn model(&self, name: Option<&str>) -> Result<&Model, EngineError> {
        let name = name.unwrap_or(&self.config.default_model);
        self.models
            .get(name)
            .ok_or_else(|| EngineError::UnknownModel {
                name: name.to_owned(),
                known: self.models.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }

    /// Starts a conversation of `user_id` under `contract`. `context` is a JSON object of
    /// strings (`page`, `mode`, …; `prompt` is the application's own prompt) and the
    /// application's state under `app_state` (a JSON object): the default context of every
    /// turn, which a message's own context is merged over ([`Engine::send_message`]).
    pub async fn start_conversation(
        &self,
        user_id: &str,
        contract: &str,
        context: Value,
    ) -> Result<Conversation, EngineError> {
        self.contracts.get(contract)?;
        TurnContext::read(&context)?;
        Ok(self
            .store
            .create_conversation(&NewConversation {
                user_id: user_id.to_owned(),
                contract: contract.to_owned(),
                context,
            })
            .await?)
    }

    /// Sends `message` in conversation `id` and runs the turn under the conversation's context.
    pub async fn send(
        &self,
        id: &str,
        message: &str,
        model: Option<&str>,
    ) -> Result<TurnOutcome, EngineError> {
        let turn = UserTurn {
            content: message,
            model,
            ..UserTurn::default()
        };
        self.send_to(id, &turn, None).await
    }

    /// Sends a user message in conversation `id` and runs its turn under the conversation's
    /// context with the message's own merged over it ([`UserTurn::context`]).
    pub async fn send_message(
        &self,
        id: &str,
        turn: &UserTurn<'_>,
    ) -> Result<TurnOutcome, EngineError> {
        self.send_to(id, turn, None).await
    }

    /// Like [`Engine::send`], streaming: every attempt is read as a stream and the turn's
    /// events go to `sink` as they happen — `attempt_started`, `text_delta`, `partial`,
    /// `suggestions`, `payload`, `attempt_failed`, then for the final message its
    /// `question_card`s, `safety` and `message_complete`. A turn that ends without a final
    /// message sends no `message_complete`; the caller reports the error. When the client
    /// drops its receiver, the upstream request is cancelled and the turn ends with
    /// [`TurnError::Cancelled`].
    pub async fn send_streaming(
        &self,
        id: &str,
        message: &str,
        model: Option<&str>,
        sink: &EventSink,
    ) -> Result<TurnOutcome, EngineError> {
        let turn = UserTurn {
            content: message,
            model,
            ..UserTurn::default()
        };
        self.send_message_streaming(id, &turn, sink).await
    }

    /// [`Engine::send_message`], streaming as [`Engine::send_streaming`] does.
    pub async fn send_message_streaming(
        &self,
        id: &str,
        turn: &UserTurn<'_>,
        sink: &EventSink,
    ) -> Result<TurnOutcome, EngineError> {
        let outcome = self.send_to(id, turn, Some(sink)).await?;
        for event in final_events(&outcome) {
            if !sink.send(event).await {
                break;
            }
        }
        Ok(outcome)
    }

    async fn send_to(
        &self,
        id: &str,
        turn: &UserTurn<'_>,
        events: Option<&EventSink>,
    ) -> Result<TurnOutcome, EngineError> {
        let (message, model) = (turn.content, turn.model);
        let conversation = self
            .store
            .conversation(id)
            .await?
            .ok_or_else(|| EngineError::NoConversation(id.to_owned()))?;
        if conversation.status == ConversationStatus::Blocked {
            return Err(EngineError::Blocked(id.to_owned()));
        }
        let contract = self.contracts.get(&conversation.contract)?;
        let model = self.model(model)?;
        let merged = turn_context::merged(&conversation.context, turn.context);
        let read = TurnContext::read(&merged)?;
        let stored = turn_context::stored(&merged, turn.context);
        // A card answer is checked against the cards of the last reply and sent as its text.
        let answered = match turn.answer {
            Some(answers) => Some(self.answer_text(&conversation.id, answers).await?),
            None => None,
        };
        let message = answered.as_deref().unwrap_or(message);
        let answer_record = turn
            .answer
            .map(|answers| serde_json::to_value(answers.as_slice()).unwrap_or(Value::Null));
        contract
            .user_prompt(
                message,
                &conversation.state,
                turn_context::topic_id(&read.facts, &conversation.id),
                1,
            )
            .map_err(|e| EngineError::BadMessage(e.to_string()))?;
        let input = TurnInput {
            store: self.store.as_ref(),
            models: &self.models,
            model,
            contract: &contract,
            retry: self.config.retry_for(contract.name()),
            conversation: &conversation,
            new_conversation: false,
            app_prompt: read.prompt.as_deref(),
            context: &read.facts,
            app_state: read.app_state.as_ref(),
            turn_context: Some(&stored),
            answer: answer_record.as_ref(),
            user_message: message,
            given_messages: None,
            passthrough: None,
            metrics: &self.metrics,
            ids: turn.ids,
            events,
        };
        self.run(input).await
    }

    /// The text of `answers` to the cards of conversation `id`'s last reply (the last one the
    /// user saw: validated or a fallback), checked against those cards.
    async fn answer_text(&self, id: &str, answers: &Answers) -> Result<String, EngineError> {
        let messages = self.store.messages(id, store::View::User).await?;
        let shown = messages
            .iter()
            .rev()
            .find(|m| m.data.role == store::MessageRole::Assistant)
            .and_then(|m| m.data.value.as_ref())
            .map(answer::shown_cards)
            .unwrap_or_default();
        answer::read_answers(answers.as_slice(), &shown, answer::MAX_TEXT_CHARS)
    }

    /// Runs a turn, then stores the conversation's next state and applies the safety policy to
    /// its final message, all in the turn's span.
    async fn run(&self, input: TurnInput<'_>) -> Result<TurnOutcome, EngineError> {
        let conversation = input.conversation;
        let contract = input.contract;
        let span = turn_span(&input);
        let ran = async {
            let mut outcome = run_turn(input, &span).await?;
            let after = self.after_turn(conversation, contract, &outcome);
            outcome.safety = Some(span.run(after).await?);
            Ok(outcome)
        }
        .await;
        span.end();
        ran
    }

    /// What follows a turn that ended with `outcome`: the conversation's next state, then the
    /// safety policy.
    async fn after_turn(
        &self,
        conversation: &Conversation,
        contract: &Contract,
        outcome: &TurnOutcome,
    ) -> Result<SafetyDecision, EngineError> {
        let store = self.store.as_ref();
        if !outcome.fallback
            && let Some(state) = contract.next_state(&conversation.state, &outcome.value)
        {
            StoreWrite::STATE
                .traced(store, store.set_state(&conversation.id, &state))
                .await?;
        }
        let decision = self
            .policy
            .apply(store, conversation, outcome.message_id, &outcome.value)
            .await?;
        for action in &decision.actions {
            self.metrics.safety_action(
                decision.level.as_deref().unwrap_or(crate::policy::NO_LEVEL),
                action.as_str(),
            );
        }
        Ok(decision)
    }

    /// The safety policy.
    pub fn policy(&self) -> &SafetyPolicy {
        &self.policy
    }

    /// Runs one turn over a chat the client sent whole (the OpenAI-compatible endpoint), under
    /// the call's contract with its context (string facts such as `page` and `mode`, as a
    /// conversation of the native API has them) and its passthrough (the client's tools, tool
    /// choice and options, sent with every attempt). What the model's provider cannot honour
    /// is refused before anything is stored ([`EngineError::Refused`]). The call is recorded as
    /// a conversation of its own (its context plus `"source": "openai"`), every attempt
    /// included, and the safety policy applies as for any turn.
    pub async fn complete_chat(
        &self,
        call: ChatCall<'_>,
    ) -> Result<(Conversation, TurnOutcome), EngineError> {
        let model = self.model(call.model)?;
        let user_message = call
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| m.content.clone())
            .ok_or_else(|| EngineError::BadContext("the chat has no user message".into()))?;
        // The call's context (`page`, `mode`, … as strings), marked as the endpoint's; the
        // application's prompt is in the messages, never in the context.
        if call.context.contains_key("prompt") {
            return Err(EngineError::BadContext(
                "\"prompt\" is not a context key here: the prompt goes in the messages".into(),
            ));
        }
        let mut probe = ChatRequest {
            messages: call.messages.to_vec(),
            ..ChatRequest::default()
        };
        call.passthrough.apply(&mut probe);
        model.provider.check(&probe).map_err(EngineError::Refused)?;
        let mut context = call.context.clone();
        context.insert("source".into(), Value::String("openai".into()));
        let context = Value::Object(context);
        let read = TurnContext::read(&context)?;
        // Stored with the user's message, in one transaction; its state is what the chat's
        // earlier replies built.
        let mut conversation = Conversation::start(&NewConversation {
            user_id: call.user_id.to_owned(),
            contract: call.contract.name().to_owned(),
            context: context.clone(),
        });
        let mut given = GivenChat::read(call.contract, call.messages, &read.facts);
        given.ask(
            call.contract,
            turn_context::topic_id(&read.facts, &conversation.id),
        )?;
        conversation.state = given.state.clone();
        let input = TurnInput {
            store: self.store.as_ref(),
            models: &self.models,
            model,
            contract: call.contract,
            retry: self.config.retry_for(call.contract.name()),
            conversation: &conversation,
            new_conversation: true,
            app_prompt: None,
            context: &read.facts,
            app_state: read.app_state.as_ref(),
            turn_context: Some(&context),
            answer: None,
            user_message: &user_message,
            given_messages: Some(&given),
            passthrough: Some(call.passthrough),
            metrics: &self.metrics,
            ids: call.ids,
            events: None,
        };
        let outcome = self.run(input).await?;
        Ok((conversation, outcome))
    }
}

/// The events that close a streamed turn: one `question_card` per card of the final value, what
/// the safety policy did (when it did anything), then `message_complete`.
pub fn final_events(outcome: &TurnOutcome) -> Vec<TurnEvent> {
    let mut events: Vec<TurnEvent> = outcome
        .value
        .get("question_cards")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|card| TurnEvent::QuestionCard(card.clone()))
        .collect();
    if let Some(decision) = outcome
        .safety
        .as_ref()
        .filter(|d| d.level.is_some() || !d.is_noop())
    {
        events.push(TurnEvent::Safety(
            serde_json::to_value(decision).unwrap_or(Value::Null),
        ));
    }
    events.push(TurnEvent::MessageComplete {
        turn_id: outcome.turn_id.clone(),
        message_id: outcome.message_id,
        value: outcome.value.clone(),
        attempts: outcome.attempts,
        repairs: outcome.repairs.clone(),
        fallback: outcome.fallback,
        usage: serde_json::to_value(outcome.usage).unwrap_or(Value::Null),
        model: outcome.model.clone(),
    });
    events
}

/// The provider instance for one model entry.
pub fn build_provider(
    config: &Config,
    model: &ModelConfig,
    contracts: &Arc<Contracts>,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let Some(entry) = config.providers.get(&model.provider) else {
        return Err(ProviderError::Connection(format!(
            "no provider entry {:?}",
            model.provider
        )));
    };
    let settings = HttpSettings {
        base_url: entry.base_url.clone(),
        api_key: entry.api_key.clone(),
        timeout: model.http.timeout.unwrap_or(entry.timeout),
        headers: model.http.headers.clone(),
        query: model.http.query.clone(),
    };
    let openai = OpenAiOptions {
        native_structured_output: model.native_structured_output,
        merge_system: !model.system_role,
    };
    Ok(match entry.kind {
        ProviderKind::Openai => Arc::new(OpenAi::new(settings, openai)?),
        ProviderKind::Azure => {
            let azure = Azure {
                api_version: entry.api_version.clone().unwrap_or_default(),
                deployment: model.model.clone(),
            };
            Arc::new(OpenAi::azure(settings, openai, azure)?)
        }
        ProviderKind::Gemini => Arc::new(Gemini::new(
            settings,
            GeminiOptions {
                native_structured_output: model.native_structured_output,
                model: model.model.clone(),
            },
        )?),
        ProviderKind::Anthropic => {
            Arc::new(Anthropic::new(settings, model.native_structured_output)?)
        }
        ProviderKind::Mock => {
            // The model knows `contracts`: `with_config` puts them in.
            let mock = entry.mock.config(Contracts::default());
            Arc::new(providers::mock::Mock::with_config(contracts, mock)?)
        }
    })
}
