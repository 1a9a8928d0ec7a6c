//! How the client reaches an MCP server over streamable HTTP or HTTPS: the URL, a
//! bearer token, extra headers, and root certificates to trust beside the system's.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use reqwest::redirect::{Attempt, Policy};
use rmcp::service::ClientInitializeError;
use rmcp::transport::auth::AuthError;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, StreamableHttpClientTransportConfig,
};

use super::oauth::{Clients, OAuth};
use crate::error::McpError;

/// Most redirects one request follows.
const MAX_REDIRECTS: usize = 10;

/// An MCP server reached over streamable HTTP, for [`McpTools::http_with`](crate::McpTools::http_with).
///
/// `https://` URLs are verified against the system's root certificates (and those in
/// `SSL_CERT_FILE` / `SSL_CERT_DIR`), plus any given with
/// [`root_certificate_pem`](Self::root_certificate_pem), for a server with a private CA.
///
/// ```no_run
/// use brute_mcp::{HttpServer, McpTools};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let server = HttpServer::new("https://mcp.internal.example/mcp")
///     .bearer(std::env::var("MCP_TOKEN")?)
///     .header("x-team", "search")?
///     .root_certificate_pem(&std::fs::read("internal-ca.pem")?)?;
/// let tools = McpTools::http_with("internal", server).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct HttpServer {
    url: Arc<str>,
    bearer: Option<String>,
    headers: HashMap<HeaderName, HeaderValue>,
    roots: Vec<reqwest::Certificate>,
    oauth: Option<OAuth>,
}

impl HttpServer {
    /// The server at `url` (`https://host/mcp`), with no token and no extra header.
    pub fn new(url: impl Into<Arc<str>>) -> Self {
        HttpServer {
            url: url.into(),
            bearer: None,
            headers: HashMap::new(),
            roots: Vec::new(),
            oauth: None,
        }
    }

    /// Sends `Authorization: Bearer <token>` with every request.
    pub fn bearer(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }

    /// Gets a token with `oauth` when the server asks for one with 401 and a
    /// `WWW-Authenticate` challenge, or for more scopes with 403, at the handshake or
    /// on any later request, then sends that request again (once). Without this, such
    /// a handshake gives [`McpError::AuthRequired`], and a later refusal
    /// [`McpError::Refused`].
    pub fn oauth(mut self, oauth: OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Sends the header `name: value` with every request. Fails when either is not a
    /// valid HTTP header name or value.
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, McpError> {
        let invalid = |problem: String| McpError::Http {
            url: self.url.to_string(),
            problem,
        };
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(format!("`{name}` is not a valid header name")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| invalid(format!("the value of header `{name}` is not valid in HTTP")))?;
        self.headers.insert(header, value);
        Ok(self)
    }

    /// Trusts the certificates in `pem` (one or more, PEM-encoded) as roots, beside
    /// the system's. Fails when `pem` holds no certificate.
    pub fn root_certificate_pem(mut self, pem: &[u8]) -> Result<Self, McpError> {
        let certificates = reqwest::Certificate::from_pem_bundle(pem)
            .ok()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| McpError::Http {
                url: self.url.to_string(),
                problem: "the root certificate is not PEM (`-----BEGIN CERTIFICATE-----`)"
                    .to_string(),
            })?;
        self.roots.extend(certificates);
        Ok(self)
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What the rmcp transport is made of: reqwest clients with these roots (one
    /// following same-origin redirects, one following none), the transport's
    /// configuration with these headers, and the OAuth settings. The first client
    /// is used again to find out why a handshake failed ([`why_unreachable`]); both
    /// serve OAuth.
    pub(super) fn parts(
        self,
    ) -> Result<(Clients, StreamableHttpClientTransportConfig, Option<OAuth>), McpError> {
        crate::tls::ensure_crypto_provider();
        let build = |policy: Policy| {
            reqwest::Client::builder()
                // As rmcp's own client: a half-read response left in the pool stalls
                // the next request on Linux's delayed ACK.
                .pool_max_idle_per_host(0)
                .redirect(policy)
                .tls_certs_merge(self.roots.clone())
                .build()
                .map_err(|e| McpError::Http {
                    url: self.url.to_string(),
                    problem: format!("cannot build the HTTP client: {e}"),
                })
        };
        let client = Clients {
            follow: build(Policy::custom(same_origin))?,
            direct: build(Policy::none())?,
        };
        let mut config =
            StreamableHttpClientTransportConfig::with_uri(self.url).custom_headers(self.headers);
        if let Some(token) = self.bearer {
            config = config.auth_header(token);
        }
        Ok((client, config, self.oauth))
    }
}

/// Why a request to an HTTP server was refused, found in an error from rmcp (which
/// reports it several errors deep, below its transport's type).
pub(super) enum Refusal {
    /// The server answered 401 or 403 with this `WWW-Authenticate` challenge.
    Challenged {
        /// 401 or 403.
        status: u16,
        /// The challenge.
        challenge: String,
    },
    /// Getting a token failed, for this reason.
    OAuth(String),
}

impl Refusal {
    /// Finds why `error` is an auth refusal, if it is one.
    pub(super) fn of(error: &(dyn std::error::Error + 'static)) -> Option<Refusal> {
        // A failed handshake does not name its transport error as its source.
        let start: &(dyn std::error::Error + 'static) =
            match error.downcast_ref::<ClientInitializeError>() {
                Some(ClientInitializeError::TransportError { error, .. }) => error,
                _ => error,
            };
        let mut cause = Some(start);
        while let Some(current) = cause {
            // `StreamableHttpError::AuthRequired` and the others have these as their
            // source, so the walk finds them.
            if let Some(auth) = current.downcast_ref::<AuthRequiredError>() {
                return Some(Refusal::Challenged {
                    status: 401,
                    challenge: auth.www_authenticate_header.clone(),
                });
            }
            if let Some(scope) = current.downcast_ref::<InsufficientScopeError>() {
                return Some(Refusal::Challenged {
                    status: 403,
                    challenge: scope.www_authenticate_header.clone(),
                });
            }
            if let Some(auth) = current.downcast_ref::<AuthError>() {
                return Some(Refusal::OAuth(match auth {
                    AuthError::AuthorizationFailed(problem) => problem.clone(),
                    other => other.to_string(),
                }));
            }
            cause = current.source();
        }
        None
    }

    /// The error of `server` at `endpoint` for this refusal; `handshake` says it
    /// refused the handshake (where a 401 without OAuth is [`McpError::AuthRequired`]).
    pub(super) fn error(self, server: &str, endpoint: &Endpoint, handshake: bool) -> McpError {
        let server = server.to_string();
        let url = endpoint.url.to_string();
        match self {
            Refusal::OAuth(problem) => McpError::OAuth {
                server,
                url,
                problem,
            },
            Refusal::Challenged {
                status: 401,
                challenge,
            } if handshake && !endpoint.oauth => McpError::AuthRequired {
                server,
                url,
                challenge,
            },
            Refusal::Challenged { status, challenge } => McpError::Refused {
                server,
                url,
                status,
                challenge,
                authorized: endpoint.oauth,
            },
        }
    }
}

/// Where an HTTP connection goes, and whether it authorizes with OAuth: what the
/// error of a refused request names.
#[derive(Debug)]
pub(crate) struct Endpoint {
    /// The server's URL.
    pub(crate) url: Arc<str>,
    /// Whether [`HttpServer::oauth`] was configured.
    pub(crate) oauth: bool,
}

/// Why `url` cannot be reached at all, with every cause, or `None` when it answers.
///
/// rmcp reports a failed handshake as "error sending request" without the cause (an
/// untrusted certificate, a refused connection): one plain request with the same
/// client, made only after a failure, finds it.
pub(super) async fn why_unreachable(client: &reqwest::Client, url: &str) -> Option<String> {
    let request = client.get(url).timeout(Duration::from_secs(10)).send();
    let error = request.await.err()?;
    let mut problem = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        problem.push_str(": ");
        problem.push_str(&cause.to_string());
        source = cause.source();
    }
    Some(problem)
}

/// Follows a redirect only to the same origin, keeping the method (307 and 308),
/// at most [`MAX_REDIRECTS`] times: a 301 to 303 would turn the JSON-RPC POST into a
/// GET without its message, and another origin would get the token and headers.
fn same_origin(attempt: Attempt<'_>) -> reqwest::redirect::Action {
    let keeps_method = matches!(attempt.status().as_u16(), 307 | 308);
    let same = attempt
        .previous()
        .first()
        .is_some_and(|first| first.origin() == attempt.url().origin());
    if keeps_method && same && attempt.previous().len() <= MAX_REDIRECTS {
        attempt.follow()
    } else {
        attempt.stop()
    }
}
