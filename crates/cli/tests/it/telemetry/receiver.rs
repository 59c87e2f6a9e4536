//! A test OTLP receiver: the collector's own protobuf types (`opentelemetry-proto`), served
//! over real loopback HTTP (`POST /v1/traces`, protobuf bodies, axum) or gRPC (the generated
//! `TraceService`, tonic). It keeps every span it receives, flattened with its resource's
//! `service.name`.

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message as _;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Bool(bool),
    Other(String),
}

/// One span as received.
#[derive(Debug, Clone)]
pub struct Got {
    pub service: String,
    pub name: String,
    pub kind: i32,
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: String,
    pub attrs: BTreeMap<String, Attr>,
}

impl Got {
    pub fn str(&self, key: &str) -> &str {
        match self.attrs.get(key) {
            Some(Attr::Str(s)) => s,
            other => panic!("{}: {key} is not a string: {other:?}", self.name),
        }
    }

    pub fn int(&self, key: &str) -> i64 {
        match self.attrs.get(key) {
            Some(Attr::Int(i)) => *i,
            other => panic!("{}: {key} is not an integer: {other:?}", self.name),
        }
    }
}

/// The spans received so far.
#[derive(Debug, Clone, Default)]
pub struct Spans(Arc<Mutex<Vec<Got>>>);

impl Spans {
    pub fn all(&self) -> Vec<Got> {
        self.0.lock().unwrap().clone()
    }

    fn keep(&self, request: ExportTraceServiceRequest) {
        let mut kept = self.0.lock().unwrap();
        for resource_spans in request.resource_spans {
            let service = resource_spans
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|kv| kv.key == "service.name")
                .map(|kv| attr(kv.clone()).1)
                .map(|v| match v {
                    Attr::Str(s) => s,
                    other => format!("{other:?}"),
                })
                .unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    kept.push(Got {
                        service: service.clone(),
                        name: span.name,
                        kind: span.kind,
                        trace_id: hex::encode(&span.trace_id),
                        span_id: hex::encode(&span.span_id),
                        parent_span_id: hex::encode(&span.parent_span_id),
                        attrs: span.attributes.into_iter().map(attr).collect(),
                    });
                }
            }
        }
    }
}

fn attr(kv: KeyValue) -> (String, Attr) {
    let value = match kv.value.and_then(|v| v.value) {
        Some(Any::StringValue(s)) => Attr::Str(s),
        Some(Any::IntValue(i)) => Attr::Int(i),
        Some(Any::BoolValue(b)) => Attr::Bool(b),
        other => Attr::Other(format!("{other:?}")),
    };
    (kv.key, value)
}

/// Serves OTLP/HTTP on a free loopback port: its base URL, and the spans it receives.
pub async fn http() -> (String, Spans) {
    let spans = Spans::default();
    let kept = spans.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                match ExportTraceServiceRequest::decode(body) {
                    Ok(request) => {
                        kept.keep(request);
                        let answer = ExportTraceServiceResponse::default().encode_to_vec();
                        (
                            axum::http::StatusCode::OK,
                            [("content-type", "application/x-protobuf")],
                            answer,
                        )
                    }
                    Err(_) => (
                        axum::http::StatusCode::BAD_REQUEST,
                        [("content-type", "text/plain")],
                        b"not an ExportTraceServiceRequest".to_vec(),
                    ),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, spans)
}

struct Grpc(Spans);

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.keep(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// Serves OTLP/gRPC on a free loopback port: its URL, and the spans it receives.
pub async fn grpc() -> (String, Spans) {
    let spans = Spans::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let service = TraceServiceServer::new(Grpc(spans.clone()));
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(incoming)
            .await
    });
    (url, spans)
}
