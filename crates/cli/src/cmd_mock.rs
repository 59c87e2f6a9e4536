//! `bridle mock-llm`: the built-in mock LLM as a standalone OpenAI-, Azure-, Anthropic- and
//! Gemini-compatible HTTP server (`/v1/chat/completions`, `/openai/deployments/…`,
//! `/v1/messages`, `/v1beta/models/…:generateContent`, streaming too — piece size, pacing and
//! write size set by the `--stream-*` flags) with a request log at `/_mock/requests` — for
//! tests, benchmarks and front-end work without a model.

use crate::{Outcome, setup};
use anyhow::{Context as _, Result};
use bridle_mock::{Fault, MockConfig, SafetyMode, Script};
use clap::{Args, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct MockArgs {
    /// Port to listen on (127.0.0.1 unless --host says otherwise); 0 picks a free one.
    #[arg(long, default_value_t = 8090)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
    /// Share of attempts given a fault, 0.0–1.0 (feedback that names the fault's path fixes it).
    #[arg(long, default_value_t = 0.0)]
    fault_rate: f64,
    /// Faults to draw from (comma-separated: fence, prose, trailing_comma, wrong_key,
    /// missing_required, wrong_enum, truncate, plain_text, broken_rule, broken_expr, http500,
    /// http429[:SECS], slow[:MS], broken_stream, reset, invalid_utf8, garbage); default: the
    /// content faults (not the rule faults), http500 and http429.
    #[arg(long, value_delimiter = ',')]
    faults: Vec<String>,
    /// A JSON script of replies and faults per turn.
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Added to every reply, in milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Seed of the mock's choices.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Require this API key (Authorization: Bearer or x-api-key); others get 401.
    #[arg(long, value_name = "KEY", env = "BRIDLE_MOCK_API_KEY")]
    require_api_key: Option<String>,
    /// Characters of content (and of tool-call arguments) per streamed delta, at least 1.
    #[arg(long, value_name = "N", default_value_t = bridle_mock::DEFAULT_STREAM_PIECE_CHARS)]
    stream_piece_chars: usize,
    /// Pause between the SSE frames of a stream, in milliseconds (real models trickle tokens);
    /// 0 sends them at once.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    stream_interval_ms: u64,
    /// Re-cut streams into writes of N bytes, whatever the frame and UTF-8 boundaries (tests a
    /// client's SSE decoder on split frames and characters); default: one write per frame.
    #[arg(long, value_name = "N")]
    stream_chunk_bytes: Option<usize>,
    /// How a reply's `safety` object is filled: from the user's message (crisis and worry
    /// words), or drawn at random like every other value (tests of the safety policy).
    #[arg(long, value_enum, default_value_t = Safety::Message)]
    safety: Safety,
}

/// `--safety`: the command line's names for [`SafetyMode`].
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Safety {
    Message,
    Random,
}

impl From<Safety> for SafetyMode {
    fn from(safety: Safety) -> Self {
        match safety {
            Safety::Message => Self::Message,
            Safety::Random => Self::Random,
        }
    }
}

pub fn run(dirs: &[PathBuf], args: MockArgs) -> Result<Outcome> {
    crate::memory::steady_pages();
    let contracts = setup::contracts(dirs)?;
    let mut config = MockConfig {
        seed: args.seed,
        fault_rate: args.fault_rate,
        latency_ms: args.latency_ms,
        stream_piece_chars: args.stream_piece_chars,
        stream_interval_ms: args.stream_interval_ms,
        stream_chunk_bytes: args.stream_chunk_bytes,
        safety: args.safety.into(),
        contracts,
        ..MockConfig::default()
    };
    if !args.faults.is_empty() {
        config.faults = args
            .faults
            .iter()
            .map(|name| name.parse::<Fault>())
            .collect::<Result<_, _>>()?;
    }
    if let Some(path) = &args.script {
        config.script = Some(Script::load(path)?);
    }
    config.require_api_key = args.require_api_key;
    config.validate()?;
    let address = SocketAddr::new(args.host, args.port);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(address).await.with_context(|| format!("cannot listen on {address}"))?;
        let bound = listener.local_addr()?;
        eprintln!("bridle mock-llm listening on http://{bound}");
        eprintln!("  OpenAI:    POST http://{bound}/v1/chat/completions   (base URL http://{bound}/v1)");
        eprintln!("  Anthropic: POST http://{bound}/v1/messages");
        eprintln!("  Azure:     POST http://{bound}/openai/deployments/DEPLOYMENT/chat/completions?api-version=…   (base URL http://{bound})");
        eprintln!("  Gemini:    POST http://{bound}/v1beta/models/MODEL:generateContent   (base URL http://{bound}/v1beta)");
        eprintln!("  request log: GET http://{bound}/_mock/requests");
        tokio::select! {
            served = bridle_mock::serve(listener, config) => served.context("the mock server stopped")?,
            _ = tokio::signal::ctrl_c() => eprintln!("bridle mock-llm: stopping"),
        }
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(Outcome::Met)
}
