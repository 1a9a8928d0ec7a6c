//! Cross-app access (enterprise-managed authorization, MCP's SEP-990): the user's ID
//! token from the enterprise identity provider is exchanged there for an identity
//! assertion grant (ID-JAG, RFC 8693 token exchange), which the MCP server's
//! authorization server takes for an access token (RFC 7523 JWT bearer grant). No
//! person is involved once the ID token is given. On rmcp's `enterprise` module.

use std::time::Duration;

use oauth2::ClientSecret;
use rmcp::transport::auth::enterprise::{
    EmaAuthorizationServer, EmaClientAuthentication, EmaError, EmaExchangeRequest, EmaExchangeStage,
};
use rmcp::transport::auth::{
    AuthorizationMetadata, OAuthHttpClient, OAuthHttpClientFuture, OAuthHttpRequest,
};

use super::jwt::Bearer;

/// The enterprise identity provider of [`OAuth::cross_app_access`](crate::OAuth::cross_app_access):
/// its issuer and token endpoint, and the client registered there. Its `Debug`
/// never shows the secret.
#[derive(Clone)]
pub struct IdentityProvider {
    issuer: String,
    token_endpoint: String,
    client_id: String,
    secret: Option<String>,
}

impl std::fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl IdentityProvider {
    /// The identity provider whose issuer is `issuer` (exactly as in its metadata and
    /// its ID tokens), with its token endpoint and the id of the client registered
    /// there, a public client until [`secret`](Self::secret) is given.
    pub fn new(
        issuer: impl Into<String>,
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
    ) -> Self {
        IdentityProvider {
            issuer: issuer.into(),
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            secret: None,
        }
    }

    /// The client's secret at the identity provider (sent with HTTP Basic).
    pub fn secret(mut self, secret: impl Into<String>) -> Self {
        self.secret = Some(secret.into());
        self
    }
}

/// The user's ID token, the identity provider, and the client registered at the MCP
/// server's authorization server.
#[derive(Clone)]
pub(super) struct CrossApp {
    pub(super) idp: IdentityProvider,
    pub(super) id_token: String,
}

/// How the client authenticates at the MCP server's authorization server: HTTP Basic
/// unless the server's metadata offers only `client_secret_post`.
fn resource_authentication(
    metadata: &AuthorizationMetadata,
    secret: String,
) -> EmaClientAuthentication {
    let methods = metadata
        .additional_fields
        .get("token_endpoint_auth_methods_supported")
        .and_then(|m| m.as_array());
    let offers = |name: &str| methods.is_some_and(|m| m.iter().any(|v| v.as_str() == Some(name)));
    if offers("client_secret_post") && !offers("client_secret_basic") {
        EmaClientAuthentication::ClientSecretPost(ClientSecret::new(secret))
    } else {
        EmaClientAuthentication::ClientSecretBasic(ClientSecret::new(secret))
    }
}

impl CrossApp {
    /// Both exchanges, for the MCP server `resource` whose authorization server has
    /// `metadata`, as the client `client_id` (with `secret`) registered there.
    pub(super) async fn exchange(
        &self,
        http: &reqwest::Client,
        metadata: &AuthorizationMetadata,
        resource: &str,
        (client_id, secret): (String, String),
        scopes: &[String],
    ) -> Result<Bearer, String> {
        let issuer = metadata.issuer.clone().ok_or_else(|| {
            "the MCP server's authorization server names no issuer, which the identity assertion must name as its audience".to_string()
        })?;
        let mut idp = EmaAuthorizationServer::new(
            self.idp.issuer.clone(),
            self.idp.token_endpoint.clone(),
            self.idp.client_id.clone(),
        );
        if let Some(secret) = &self.idp.secret {
            idp = idp.with_client_authentication(EmaClientAuthentication::ClientSecretBasic(
                ClientSecret::new(secret.clone()),
            ));
        }
        let authorization_server =
            EmaAuthorizationServer::new(issuer, metadata.token_endpoint.clone(), client_id)
                .with_client_authentication(resource_authentication(metadata, secret));
        let mut unique: Vec<&String> = Vec::new();
        for scope in scopes {
            if !unique.contains(&scope) {
                unique.push(scope);
            }
        }
        let http = Http(http.clone());
        let token = EmaExchangeRequest::new_with_id_token(
            idp,
            authorization_server,
            resource,
            &self.id_token,
        )
        .with_scopes(unique.into_iter().cloned())
        .exchange(&http, &http)
        .await
        .map_err(|e| format!("cross-app access failed: {}", in_words(e)))?;
        Ok(Bearer::new(
            token.access_token.secret().to_string(),
            token.expires_in,
        ))
    }
}

/// What went wrong in an exchange, naming the server in words (rmcp's own message
/// names the stage by its Rust variant).
fn in_words(error: EmaError) -> String {
    let server = |stage: EmaExchangeStage| match stage {
        EmaExchangeStage::IdentityProvider => "the identity provider",
        EmaExchangeStage::ResourceAuthorizationServer => "the MCP server's authorization server",
        _ => "an authorization server",
    };
    match error {
        EmaError::InvalidRequest(problem) => problem.to_string(),
        EmaError::InvalidResponse { stage, message } => {
            format!(
                "{} answered with an unusable token: {message}",
                server(stage)
            )
        }
        EmaError::RequestFailed(stage) => format!("the request to {} failed", server(stage)),
        EmaError::InvalidGrant(stage) => {
            format!("{} refused the grant (invalid_grant)", server(stage))
        }
        EmaError::InsufficientUserAuthentication(stage) => format!(
            "{} asks the user to authenticate again (insufficient_user_authentication): give a fresh ID token",
            server(stage)
        ),
        EmaError::OAuthRejected {
            stage,
            status,
            code,
        } => {
            format!("{} answered {status}: {code}", server(stage))
        }
        other => other.to_string(),
    }
}

/// rmcp's OAuth HTTP requests on brute-mcp's reqwest client (its root certificates),
/// which follows no redirect: rmcp asks for none in these exchanges.
struct Http(reqwest::Client);

/// How long one exchange request may take when rmcp suggests no limit.
const TIMEOUT: Duration = Duration::from_secs(30);

impl OAuthHttpClient for Http {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let timeout = request.timeout.unwrap_or(TIMEOUT);
            let (parts, body) = request.request.into_parts();
            let response = self
                .0
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .timeout(timeout)
                .send()
                .await?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.bytes().await?.to_vec();
            let mut answer = http::Response::new(body);
            *answer.status_mut() = status;
            *answer.headers_mut() = headers;
            Ok(answer)
        })
    }
}
