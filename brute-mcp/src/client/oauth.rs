//! OAuth 2.1 for an MCP server that answers 401 (or 403 asking for more scopes), on
//! rmcp's authorization manager: discovery from the `WWW-Authenticate` challenge
//! (protected resource metadata, then the authorization server's, then a 2025-03-26
//! server's own metadata), a client registered beforehand or dynamically, and a
//! token by client credentials (a secret or `private_key_jwt`), by cross-app access
//! or by the authorization code flow with PKCE.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    ClientCredentialsConfig, WWWAuthenticateParams,
};

use super::enterprise::{CrossApp, IdentityProvider};
use super::jwt::{self, Bearer, SigningKey};
use super::legacy;
use crate::error::McpError;

/// What the authorization code flow does with the authorization URL: show it to a
/// person, or follow it as a script, and return the URL the authorization server
/// redirected to (with `code` and `state`).
type Authorize = Arc<
    dyn Fn(String) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>> + Send + Sync,
>;

/// How a client without a token gets one from an MCP server's authorization server,
/// for [`HttpServer::oauth`](crate::HttpServer::oauth). Used when the server answers
/// 401 (or 403 asking for more scopes), at the handshake or on any later request:
/// the client authorizes and sends the request again, once. The token then goes with
/// every request, refreshed when it expires.
///
/// ```no_run
/// use brute_mcp::{HttpServer, McpTools, OAuth};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // A service account: the client credentials grant.
/// let oauth = OAuth::client_credentials("reports-bot", std::env::var("CLIENT_SECRET")?);
/// let server = HttpServer::new("https://mcp.example.com/mcp").oauth(oauth);
/// let tools = McpTools::http_with("reports", server).await?;
///
/// // A person: the authorization code flow; `authorize` shows the URL and returns
/// // the address the browser was redirected to.
/// let oauth = OAuth::authorization_code("http://127.0.0.1:8765/callback", |url| async move {
///     println!("open {url}");
///     wait_for_the_redirect().await
/// });
/// # Ok(()) }
/// # async fn wait_for_the_redirect() -> Result<String, String> { Err("no browser here".into()) }
/// ```
#[derive(Clone)]
pub struct OAuth {
    grant: Grant,
    client: Option<(String, Option<String>)>,
    metadata_url: Option<String>,
    scopes: Vec<String>,
}

#[derive(Clone)]
enum Grant {
    ClientCredentials,
    PrivateKeyJwt(SigningKey),
    CrossApp(Box<CrossApp>),
    AuthorizationCode {
        redirect_uri: String,
        authorize: Authorize,
    },
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let grant = match self.grant {
            Grant::ClientCredentials => "client_credentials",
            Grant::PrivateKeyJwt(_) => "client_credentials (private_key_jwt)",
            Grant::CrossApp(_) => "cross-app access",
            Grant::AuthorizationCode { .. } => "authorization_code",
        };
        f.debug_struct("OAuth")
            .field("grant", &grant)
            .field("client_id", &self.client.as_ref().map(|(id, _)| id))
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// The client credentials grant, for a client registered beforehand with this id
    /// and secret (a service, no person involved).
    pub fn client_credentials(client_id: impl Into<String>, secret: impl Into<String>) -> Self {
        Self {
            grant: Grant::ClientCredentials,
            client: Some((client_id.into(), Some(secret.into()))),
            metadata_url: None,
            scopes: Vec::new(),
        }
    }

    /// The client credentials grant for a client registered beforehand with this id
    /// and a public key, which proves itself with a JWT signed by `private_key_pem`
    /// (`private_key_jwt`, RFC 7523): a PKCS#8 PEM key (`-----BEGIN PRIVATE
    /// KEY-----`), EC on P-256 (signs ES256) or P-384 (ES384), RSA (RS256) or
    /// Ed25519 (EdDSA). Fails when the key cannot be read; the error never shows it.
    pub fn private_key_jwt(
        client_id: impl Into<String>,
        private_key_pem: &str,
    ) -> Result<Self, McpError> {
        let client_id = client_id.into();
        let key = SigningKey::from_pem(private_key_pem).map_err(|problem| McpError::BadKey {
            client_id: client_id.clone(),
            problem,
        })?;
        Ok(Self {
            grant: Grant::PrivateKeyJwt(key),
            client: Some((client_id, None)),
            metadata_url: None,
            scopes: Vec::new(),
        })
    }

    /// Cross-app access (enterprise-managed authorization): the user's `id_token`
    /// from the enterprise identity provider `idp` is exchanged there for an
    /// identity assertion grant, which the MCP server's authorization server (where
    /// this client is registered as `client_id` with `secret`) takes for an access
    /// token. No person is involved; when the ID token expires, give a new one.
    pub fn cross_app_access(
        idp: IdentityProvider,
        id_token: impl Into<String>,
        client_id: impl Into<String>,
        secret: impl Into<String>,
    ) -> Self {
        Self {
            grant: Grant::CrossApp(Box::new(CrossApp {
                idp,
                id_token: id_token.into(),
            })),
            client: Some((client_id.into(), Some(secret.into()))),
            metadata_url: None,
            scopes: Vec::new(),
        }
    }

    /// The authorization code flow with PKCE: the client registers itself
    /// dynamically (unless [`registered`](Self::registered)), and `authorize` gets the
    /// authorization URL and returns the URL the authorization server redirected to,
    /// on `redirect_uri`. An error from `authorize` ends the attempt with that message.
    pub fn authorization_code<F, Fut>(redirect_uri: impl Into<String>, authorize: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        let authorize: Authorize = Arc::new(move |url| Box::pin(authorize(url)));
        Self {
            grant: Grant::AuthorizationCode {
                redirect_uri: redirect_uri.into(),
                authorize,
            },
            client: None,
            metadata_url: None,
            scopes: Vec::new(),
        }
    }

    /// Uses a client registered beforehand (its id, and its secret for a confidential
    /// client) instead of registering one.
    pub fn registered(mut self, client_id: impl Into<String>, secret: Option<String>) -> Self {
        self.client = Some((client_id.into(), secret));
        self
    }

    /// Names the client by the `https://` URL of its client ID metadata document
    /// (published by you) where the authorization server supports that; otherwise the
    /// client registers dynamically as before.
    pub fn metadata_document(mut self, url: impl Into<String>) -> Self {
        self.metadata_url = Some(url.into());
        self
    }

    /// Asks for these scopes; by default those the server's challenge or metadata name.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Gets a token for the MCP server at `url`, which answered with `challenge` (a
    /// 401, or a 403 asking for more scopes). `previous` are the scopes asked for
    /// before, when this authorizes again: the request asks for them and those of
    /// the challenge. Returns the credential and the scopes it was asked for.
    pub(super) async fn authorize(
        &self,
        url: &str,
        challenge: &str,
        http: &Clients,
        previous: &[String],
    ) -> Result<(Credential, Vec<String>), String> {
        let said = |error: AuthError| error.to_string();
        let mut manager = AuthorizationManager::new(url).await.map_err(said)?;
        manager.with_client(http.follow.clone()).map_err(said)?;
        let metadata = match manager
            .resolve_metadata_from_challenge(Some(challenge))
            .await
        {
            Ok(resolution) => resolution.metadata,
            Err(error @ AuthError::AuthorizationServerMismatch { .. }) => {
                legacy::metadata(&http.direct, url, challenge)
                    .await?
                    .ok_or_else(|| said(error))?
            }
            Err(error) => return Err(said(error)),
        };
        manager.set_metadata(metadata.clone());
        let scopes = if previous.is_empty() {
            self.scopes.clone()
        } else {
            let base = reqwest::Url::parse(url).map_err(|e| e.to_string())?;
            let asked = WWWAuthenticateParams::parse(challenge, &base).scope;
            let mut scopes = previous.to_vec();
            for scope in asked.iter().flat_map(|s| s.split_whitespace()) {
                if !scopes.iter().any(|s| s == scope) {
                    scopes.push(scope.to_string());
                }
            }
            scopes
        };
        let selected = |manager: &AuthorizationManager| {
            if scopes.is_empty() {
                manager.select_scopes(None, &[])
            } else {
                scopes.clone()
            }
        };
        match &self.grant {
            Grant::ClientCredentials => {
                let Some((client_id, Some(client_secret))) = self.client.clone() else {
                    return Err("the client credentials grant needs a client id and secret".into());
                };
                let scopes = selected(&manager);
                let config = ClientCredentialsConfig::ClientSecret {
                    client_id,
                    client_secret,
                    scopes: scopes.clone(),
                    resource: Some(url.to_string()),
                };
                manager
                    .configure_client_credentials(&config)
                    .map_err(said)?;
                manager
                    .exchange_client_credentials(&config)
                    .await
                    .map_err(said)?;
                Ok((Credential::Manager(Box::new(manager)), scopes))
            }
            Grant::PrivateKeyJwt(key) => {
                let Some((client_id, _)) = &self.client else {
                    return Err("private_key_jwt needs a client id".into());
                };
                let audience = metadata.issuer.as_deref().ok_or_else(|| {
                    "the authorization server names no issuer, which the client assertion must name as its audience".to_string()
                })?;
                let assertion = key.assertion(client_id, audience)?;
                let scopes = selected(&manager);
                let bearer = jwt::client_credentials(
                    &http.direct,
                    &metadata.token_endpoint,
                    &assertion,
                    url,
                    &scopes,
                )
                .await?;
                Ok((Credential::Bearer(bearer), scopes))
            }
            Grant::CrossApp(cross) => {
                let Some((client_id, Some(secret))) = self.client.clone() else {
                    return Err("cross-app access needs the client's id and secret at the MCP server's authorization server".into());
                };
                let bearer = cross
                    .exchange(&http.direct, &metadata, url, (client_id, secret), &scopes)
                    .await?;
                Ok((Credential::Bearer(bearer), scopes))
            }
            Grant::AuthorizationCode {
                redirect_uri,
                authorize,
            } => {
                let mut request = AuthorizationRequest::new(redirect_uri.clone())
                    .with_challenge(challenge)
                    .with_client_name("brute-mcp");
                if !scopes.is_empty() {
                    request = request.with_scopes(scopes.iter().cloned());
                }
                if let Some(url) = &self.metadata_url {
                    request = request.with_client_metadata_url(url.clone());
                }
                if let Some((client_id, secret)) = self.client.clone() {
                    request = request.with_preregistered_client(client_id);
                    if let Some(secret) = secret {
                        request = request.with_client_secret(secret);
                    }
                }
                let session = AuthorizationSession::new(manager, request)
                    .await
                    .map_err(|(_, error)| said(error))?;
                let redirected = authorize(session.get_authorization_url().to_string())
                    .await
                    .map_err(|problem| format!("the authorization step failed: {problem}"))?;
                session
                    .handle_callback_url(&redirected)
                    .await
                    .map_err(said)?;
                let manager = session.auth_manager;
                let scopes = manager.get_current_scopes().await;
                Ok((Credential::Manager(Box::new(manager)), scopes))
            }
        }
    }
}

/// A token, and what renews it: rmcp's authorization manager (the authorization
/// code flow, the client credentials grant with a secret; it refreshes the token
/// when it expires), or a bare token (`private_key_jwt`, cross-app access), which
/// the next refusal renews by authorizing again.
pub(super) enum Credential {
    /// Held by rmcp's authorization manager.
    Manager(Box<AuthorizationManager>),
    /// A token alone.
    Bearer(Bearer),
}

impl Credential {
    /// The token to send now: `None` when there is none (it expired and cannot be
    /// refreshed), so the server's refusal asks for a new authorization.
    pub(super) async fn token(&self) -> Result<Option<String>, AuthError> {
        match self {
            Credential::Manager(manager) => match manager.get_access_token().await {
                Ok(token) => Ok(Some(token)),
                Err(AuthError::AuthorizationRequired) => Ok(None),
                Err(error) => Err(error),
            },
            Credential::Bearer(bearer) => Ok(bearer.current().map(str::to_string)),
        }
    }
}

/// The HTTP clients OAuth uses: `follow` follows same-origin redirects (rmcp's
/// discovery and token requests, as the MCP requests do), `direct` follows none
/// (token requests brute-mcp makes itself, and the legacy metadata).
#[derive(Clone, Debug)]
pub(super) struct Clients {
    pub(super) follow: reqwest::Client,
    pub(super) direct: reqwest::Client,
}
