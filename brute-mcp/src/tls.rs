//! The TLS crypto provider rmcp's HTTP client needs in some builds.

/// Installs rustls' `ring` crypto provider as the process default, unless one is
/// installed already.
///
/// rmcp's streamable HTTP client is a `reqwest::Client` built by rmcp. When brute's own
/// HTTP providers are in the same build, reqwest's rustls is compiled in without a
/// provider of its own, and building that client panics without a process default.
/// [`McpTools::http`](crate::McpTools::http) calls this first; call it yourself before
/// building an rmcp HTTP client of your own in such a build.
pub fn ensure_crypto_provider() {
    // Fails harmlessly when a provider is already installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
