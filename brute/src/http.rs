//! The shared HTTP client: reqwest over rustls with the `ring` crypto provider and the
//! platform's certificate verifier. Providers and the `fetch` tool build their clients
//! from [`client_builder`] so that every HTTP call of brute has the same TLS setup.

use std::sync::Arc;

use rustls_platform_verifier::BuilderVerifierExt;

/// A `reqwest` client builder with brute's TLS configuration and user agent.
///
/// The TLS configuration uses rustls with the `ring` provider (never aws-lc-rs) and
/// the operating system's trust store through `rustls-platform-verifier`. It is built
/// for each builder (no process-wide cache: a client is built once per model, and once
/// per `fetch` call). If the platform verifier cannot be set up, `ring` is installed as
/// the process-wide default provider instead (unless the application installed one),
/// and reqwest's own verifier is used with it.
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    let builder =
        reqwest::Client::builder().user_agent(concat!("brute/", env!("CARGO_PKG_VERSION")));
    match tls_config() {
        Some(config) => builder.tls_backend_preconfigured(config),
        None => {
            // Fails harmlessly when the application already installed a provider.
            let _ = rustls::crypto::ring::default_provider().install_default();
            builder
        }
    }
}

/// The rustls configuration, or `None` when the platform verifier cannot be set up.
/// Also the OTLP exporter's (`otlp`), whose blocking client has no `client_builder`.
pub(crate) fn tls_config() -> Option<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_platform_verifier())
        .map(|builder| builder.with_no_client_auth())
        .ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn builds_a_client_with_ring() {
        let client = super::client_builder().build();
        assert!(client.is_ok(), "{client:?}");
        assert!(super::tls_config().is_some());
    }
}
