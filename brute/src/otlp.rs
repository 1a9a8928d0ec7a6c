//! Traces over OTLP: brute's spans sent to an OpenTelemetry collector, Langfuse or any
//! backend that reads OTLP/HTTP (protobuf), in three lines (feature `otlp`).
//!
//! ```no_run
//! # fn main() -> Result<(), brute::otlp::OtlpError> {
//! let _traces = brute::otlp::Otlp::new("http://localhost:4318", "my-agent")
//!     .basic_auth("pk-lf-...", "sk-lf-...") // Langfuse; leave out for a collector
//!     .install()?;
//! // ... run agents; dropping `_traces` sends what is left.
//! # Ok(())
//! # }
//! ```
//!
//! Every span brute opens then reaches the backend with its OpenTelemetry GenAI
//! attributes: `invoke_agent` for a turn, `chat {model}` for each model call
//! (`gen_ai.request.model`, `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`),
//! `execute_tool` for each tool call (`gen_ai.tool.name`, `gen_ai.tool.call.id`), and the
//! `brute.*` spans of the layers between them, each the child of the layer above it.
//! A failed model call or turn has the status `ERROR` with the error's message and an
//! `error.type`; a tool call whose result is an error has the status `ERROR` and
//! `error.type = "tool_error"` (its text stays out: it may quote the tool's input).
//! Message content stays out unless the agent captures it
//! ([`capture_content`](crate::Agent::capture_content)).
//!
//! Spans are batched and sent from the OpenTelemetry SDK's own thread with a blocking
//! HTTP client (brute's TLS setup: rustls, `ring`, the platform's trust store), so the
//! export needs no async runtime and never runs on the agent's. The application's own
//! spans at `INFO` and above are exported too; the exporter's HTTP stack
//! (`reqwest`, `hyper`, `h2`, `rustls`, `opentelemetry*`) is left out, so that an export
//! never traces itself. [`Otlp::layer`] gives the layer alone, to compose with a
//! subscriber of the application's own.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use opentelemetry::InstrumentationScope;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;

/// The path OTLP/HTTP receivers take traces on, below the endpoint's base URL.
const TRACES_PATH: &str = "/v1/traces";

/// How long one export may take when [`Otlp::timeout`] is not set: the OTLP default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The crates whose spans and events are never exported: the exporter's own HTTP stack
/// and the OpenTelemetry SDK. An export that traced its own request would feed itself.
const QUIET_TARGETS: &[&str] = &[
    "opentelemetry",
    "opentelemetry_sdk",
    "opentelemetry_otlp",
    "opentelemetry_http",
    "reqwest",
    "hyper",
    "hyper_util",
    "h2",
    "rustls",
    "tower",
];

/// Where and how to send traces over OTLP/HTTP: the endpoint, the service name the
/// backend groups them under, and headers (an API key, Langfuse's basic auth).
///
/// [`install`](Self::install) makes it the process's tracing subscriber;
/// [`layer`](Self::layer) gives it as a layer for a subscriber of your own. Both return
/// an [`OtlpGuard`] that sends the spans still buffered when it is dropped.
#[derive(Clone)]
pub struct Otlp {
    endpoint: String,
    service_name: String,
    /// Name to value, in name order (a header given twice keeps the last value).
    headers: BTreeMap<String, String>,
    timeout: Duration,
}

/// Header values stay out of debug output: they are usually credentials.
impl fmt::Debug for Otlp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Otlp")
            .field("endpoint", &self.endpoint)
            .field("service_name", &self.service_name)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Otlp {
    /// Traces for `service_name` (the resource's `service.name`), sent to the OTLP/HTTP
    /// receiver at `endpoint`: its base URL, as in `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// (`http://localhost:4318` for a local collector,
    /// `https://cloud.langfuse.com/api/public/otel` for Langfuse), to which
    /// `/v1/traces` is appended; a URL that already ends in `/v1/traces` is used as is.
    pub fn new(endpoint: impl Into<String>, service_name: impl Into<String>) -> Self {
        Otlp {
            endpoint: endpoint.into(),
            service_name: service_name.into(),
            headers: BTreeMap::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Sends `name: value` with every export (an API key, a tenant). Checked by
    /// [`install`](Self::install) and [`layer`](Self::layer), which name a header that
    /// is not valid HTTP (never its value).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Sends `Authorization: Basic base64(user:password)`: for Langfuse, the project's
    /// public key as `user` and its secret key as `password`.
    pub fn basic_auth(self, user: &str, password: &str) -> Self {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        self.header("Authorization", format!("Basic {token}"))
    }

    /// How long one export may take before it is given up (10 seconds by default).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Makes the export the process's tracing subscriber (`tracing`'s global default),
    /// with brute's spans at every level and other crates' at `INFO` and above. Keep
    /// the guard for as long as spans should be sent; dropping it sends the rest.
    ///
    /// Fails when the endpoint or a header is not valid, when the HTTP client cannot be
    /// built, or when the process already has a global subscriber (then use
    /// [`layer`](Self::layer) in it).
    pub fn install(self) -> Result<OtlpGuard, OtlpError> {
        let (layer, guard) = self.layer()?;
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|_| OtlpError::AlreadyInstalled)?;
        Ok(guard)
    }

    /// The export as a `tracing-subscriber` layer, filtered as [`install`](Self::install)
    /// filters, for a subscriber that also logs or filters in its own way:
    /// `tracing_subscriber::registry().with(layer).with(fmt_layer).init()`.
    pub fn layer<S>(self) -> Result<(impl Layer<S> + Send + Sync + 'static, OtlpGuard), OtlpError>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        let provider = self.provider()?;
        let scope = InstrumentationScope::builder("brute")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        let layer = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer_with_scope(scope))
            .with_filter(exported());
        Ok((layer, OtlpGuard { provider }))
    }

    /// The SDK's tracer provider with a batch exporter to the endpoint. Everything that
    /// can be wrong with the configuration is checked before the HTTP client is built.
    fn provider(self) -> Result<SdkTracerProvider, OtlpError> {
        let url = traces_url(&self.endpoint)?;
        for (name, value) in &self.headers {
            let valid = reqwest::header::HeaderName::try_from(name.as_str()).is_ok()
                && reqwest::header::HeaderValue::try_from(value.as_str()).is_ok();
            if !valid {
                return Err(OtlpError::InvalidHeader { name: name.clone() });
            }
        }
        let client = blocking_client(self.timeout)?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url)
            .with_timeout(self.timeout)
            .with_headers(self.headers.into_iter().collect())
            .build()
            .map_err(|error| OtlpError::Exporter(error.to_string()))?;
        let resource = Resource::builder()
            .with_service_name(self.service_name)
            .build();
        Ok(SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build())
    }
}

/// What is exported: brute's spans and events at every level (content events are
/// `DEBUG`), other crates' at `INFO` and above, the exporter's own stack never.
fn exported() -> Targets {
    let targets = Targets::new()
        .with_default(LevelFilter::INFO)
        .with_target("brute", LevelFilter::TRACE);
    QUIET_TARGETS.iter().fold(targets, |targets, target| {
        targets.with_target(*target, LevelFilter::OFF)
    })
}

/// The traces URL for an endpoint given as a base URL (or already as the traces URL).
fn traces_url(endpoint: &str) -> Result<String, OtlpError> {
    let invalid = |reason: String| OtlpError::InvalidEndpoint {
        endpoint: endpoint.to_string(),
        reason,
    };
    let url = reqwest::Url::parse(endpoint).map_err(|error| invalid(error.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(format!(
            "the scheme is `{}`; OTLP/HTTP takes `http` or `https`",
            url.scheme()
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid("it names no host".to_string()));
    }
    if url.query().is_some() {
        return Err(invalid(
            "it has a query; give the base URL the receiver takes `/v1/traces` under".to_string(),
        ));
    }
    let base = endpoint.trim_end_matches('/');
    Ok(if base.ends_with(TRACES_PATH) {
        base.to_string()
    } else {
        format!("{base}{TRACES_PATH}")
    })
}

/// The exporter's HTTP client: blocking (the SDK exports from a thread of its own, with
/// no async runtime), with brute's TLS setup. Built on a thread of its own, as the
/// blocking client may not be built inside an async runtime's thread.
fn blocking_client(timeout: Duration) -> Result<reqwest::blocking::Client, OtlpError> {
    let build = move || {
        let builder = reqwest::blocking::Client::builder()
            .user_agent(concat!("brute/", env!("CARGO_PKG_VERSION")))
            .timeout(timeout);
        let builder = match crate::http::tls_config() {
            Some(config) => builder.tls_backend_preconfigured(config),
            None => {
                // As the shared client does: fails harmlessly when the application
                // already installed a provider.
                let _ = rustls::crypto::ring::default_provider().install_default();
                builder
            }
        };
        builder.build()
    };
    std::thread::Builder::new()
        .name("brute-otlp-client".to_string())
        .spawn(build)
        .map_err(|error| OtlpError::Client(error.to_string()))?
        .join()
        .map_err(|_| OtlpError::Client("building it panicked".to_string()))?
        .map_err(|error| OtlpError::Client(error.to_string()))
}

/// Keeps the export running; dropping it sends the spans still buffered and stops it
/// (waiting at most the export timeout for the receiver).
#[must_use = "dropping the guard stops the export: keep it for as long as spans should be sent"]
pub struct OtlpGuard {
    provider: SdkTracerProvider,
}

impl fmt::Debug for OtlpGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OtlpGuard").finish_non_exhaustive()
    }
}

impl OtlpGuard {
    /// Sends every span that has ended so far and waits until the receiver answered:
    /// before a process exits without dropping the guard, or to see an export's error.
    pub fn flush(&self) -> Result<(), OtlpError> {
        self.provider
            .force_flush()
            .map_err(|error| OtlpError::Export(error.to_string()))
    }
}

impl Drop for OtlpGuard {
    fn drop(&mut self) {
        // Shutting down flushes first. An export that fails here has nowhere to go: the
        // guard is dropped as the program ends. `flush` reports the same failure.
        let _ = self.provider.shutdown();
    }
}

/// What can go wrong setting up or flushing the OTLP export.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// The endpoint is not an `http` or `https` base URL.
    #[error("OTLP endpoint `{endpoint}`: {reason}")]
    InvalidEndpoint {
        /// The endpoint as given to [`Otlp::new`].
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A header given to [`Otlp::header`] (or [`Otlp::basic_auth`]) is not valid HTTP.
    #[error("OTLP header `{name}`: the name or the value is not a valid HTTP header")]
    InvalidHeader {
        /// The header's name (its value is left out: it is usually a credential).
        name: String,
    },
    /// The exporter's HTTP client could not be built.
    #[error("OTLP export: the HTTP client could not be built: {0}")]
    Client(String),
    /// The OpenTelemetry exporter refused the configuration.
    #[error("OTLP export: the exporter could not be built: {0}")]
    Exporter(String),
    /// [`Otlp::install`] found a global tracing subscriber already set.
    #[error(
        "OTLP export: the process already has a global tracing subscriber; add `Otlp::layer` to it instead of calling `install`"
    )]
    AlreadyInstalled,
    /// Sending the spans failed (the receiver refused them, or could not be reached).
    #[error("OTLP export failed: {0}")]
    Export(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_path_is_appended_to_a_base_url_once() {
        let url = |endpoint: &str| traces_url(endpoint).ok();
        let collector = Some("http://localhost:4318/v1/traces".to_string());
        assert_eq!(url("http://localhost:4318"), collector);
        assert_eq!(url("http://localhost:4318/"), collector);
        assert_eq!(url("http://localhost:4318/v1/traces"), collector);
        assert_eq!(
            url("https://cloud.langfuse.com/api/public/otel"),
            Some("https://cloud.langfuse.com/api/public/otel/v1/traces".to_string())
        );
    }

    #[test]
    fn an_endpoint_that_is_not_an_http_url_is_refused_by_name() {
        for endpoint in [
            "localhost:4318",
            "grpc://collector:4317",
            "not a url",
            "http://h/?a=1",
        ] {
            let error = traces_url(endpoint).err().map(|e| e.to_string());
            assert!(
                error
                    .as_deref()
                    .is_some_and(|e| e.starts_with(&format!("OTLP endpoint `{endpoint}`: "))),
                "{endpoint}: {error:?}"
            );
        }
    }

    #[test]
    fn a_bad_header_is_named_without_its_value() {
        let error = Otlp::new("http://127.0.0.1:4318", "svc")
            .header("Authorization", "Basic secret\nvalue")
            .provider()
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("OTLP header `Authorization`: the name or the value is not a valid HTTP header")
        );
    }

    #[test]
    fn basic_auth_is_the_base64_of_user_and_password_and_debug_hides_it() {
        let otlp = Otlp::new("http://127.0.0.1:4318", "svc").basic_auth("pk-lf-1", "sk-lf-2");
        assert_eq!(
            otlp.headers.get("Authorization").map(String::as_str),
            Some("Basic cGstbGYtMTpzay1sZi0y")
        );
        assert!(!format!("{otlp:?}").contains("cGst"));
    }
}
