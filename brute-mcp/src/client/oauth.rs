//! OAuth 2.1 for an MCP server that answers the handshake with 401, on rmcp's
//! authorization manager: discovery from the `WWW-Authenticate` challenge (protected
//! resource metadata, then the authorization server's), a client registered
//! beforehand or dynamically, and a token by client credentials or by the
//! authorization code flow with PKCE.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    ClientCredentialsConfig,
};

/// What the authorization code flow does with the authorization URL: show it to a
/// person, or follow it as a script, and return the URL the authorization server
/// redirected to (with `code` and `state`).
type Authorize = Arc<
    dyn Fn(String) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send>> + Send + Sync,
>;

/// How a client without a token gets one from an MCP server's authorization server,
/// for [`HttpServer::oauth`](crate::HttpServer::oauth). Used only when the server
/// answers 401; the token then goes with every request, refreshed when it expires.
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
    AuthorizationCode {
        redirect_uri: String,
        authorize: Authorize,
    },
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let grant = match self.grant {
            Grant::ClientCredentials => "client_credentials",
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

    /// Gets a token for the MCP server at `url`, which answered with `challenge`:
    /// the authorization manager that holds it (and refreshes it).
    pub(super) async fn authorize(
        &self,
        url: &str,
        challenge: &str,
        http: reqwest::Client,
    ) -> Result<AuthorizationManager, String> {
        let said = |error: AuthError| error.to_string();
        let mut manager = AuthorizationManager::new(url).await.map_err(said)?;
        manager.with_client(http).map_err(said)?;
        let resolution = manager
            .resolve_metadata_from_challenge(Some(challenge))
            .await
            .map_err(said)?;
        manager.set_metadata(resolution.metadata);
        match &self.grant {
            Grant::ClientCredentials => {
                let Some((client_id, Some(client_secret))) = self.client.clone() else {
                    return Err("the client credentials grant needs a client id and secret".into());
                };
                let scopes = if self.scopes.is_empty() {
                    manager.select_scopes(Some(challenge), &[])
                } else {
                    self.scopes.clone()
                };
                let config = ClientCredentialsConfig::ClientSecret {
                    client_id,
                    client_secret,
                    scopes,
                    resource: Some(url.to_string()),
                };
                manager
                    .configure_client_credentials(&config)
                    .map_err(said)?;
                manager
                    .exchange_client_credentials(&config)
                    .await
                    .map_err(said)?;
                Ok(manager)
            }
            Grant::AuthorizationCode {
                redirect_uri,
                authorize,
            } => {
                let mut request = AuthorizationRequest::new(redirect_uri.clone())
                    .with_challenge(challenge)
                    .with_client_name("brute-mcp");
                if !self.scopes.is_empty() {
                    request = request.with_scopes(self.scopes.iter().cloned());
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
                Ok(session.auth_manager)
            }
        }
    }
}
