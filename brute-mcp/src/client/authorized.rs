//! The HTTP client of an MCP connection with OAuth: every request carries the
//! current token, and a request the server refuses (401, or 403 asking for more
//! scopes) makes the client authorize, then sends that request again, once, at the
//! handshake or in the middle of the session (a step-up on `tools/call`).
//!
//! Concurrent refusals authorize once: a request refused with a token older than
//! the current one is sent again with the current one. A server that refuses even
//! fresh tokens is given up after [`MAX_REFUSED`] authorizations in a row: later
//! refusals reach the caller without a new authorization (until a request passes).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures_core::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{AuthError, WWWAuthenticateParams};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio::sync::Mutex;

use super::oauth::{Clients, Credential, OAuth};

/// Authorizations in a row whose token the server refused again, after which the
/// client stops authorizing (the MCP conformance suite allows three).
pub(crate) const MAX_REFUSED: u32 = 3;

type Failure = StreamableHttpError<reqwest::Error>;

/// A reqwest client that authorizes with [`OAuth`] when the server asks.
#[derive(Clone)]
pub(super) struct Authorized {
    http: reqwest::Client,
    authorizer: Arc<Authorizer>,
}

struct Authorizer {
    oauth: OAuth,
    url: String,
    clients: Clients,
    state: Mutex<Grant>,
    refused: AtomicU32,
}

/// The credential got so far, which one it is, and the scopes it was asked for.
#[derive(Default)]
struct Grant {
    credential: Option<Credential>,
    generation: u64,
    scopes: Vec<String>,
}

impl Authorized {
    /// The client for the MCP server at `url`, with no token until the server asks.
    pub(super) fn new(url: &str, oauth: OAuth, clients: Clients) -> Self {
        Authorized {
            http: clients.follow.clone(),
            authorizer: Arc::new(Authorizer {
                oauth,
                url: url.to_string(),
                clients,
                state: Mutex::new(Grant::default()),
                refused: AtomicU32::new(0),
            }),
        }
    }

    /// Runs `call` with the current token (or `given`, the configured bearer, while
    /// there is none); when the server refuses it, authorizes and runs it once more.
    async fn with_token<T, F, Fut>(&self, given: Option<String>, call: F) -> Result<T, Failure>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let (token, generation) = self.authorizer.token().await?;
        let first = call(token.or_else(|| given.clone())).await;
        let challenge = match &first {
            Err(refusal) => match refusal.auth_challenge() {
                Some(challenge) => challenge.to_string(),
                None => return first,
            },
            Ok(_) => {
                self.authorizer.refused.store(0, Ordering::Relaxed);
                return first;
            }
        };
        let Some(token) = self.authorizer.reauthorize(&challenge, generation).await? else {
            return first;
        };
        let second = call(Some(token)).await;
        match &second {
            Err(refusal) if refusal.auth_challenge().is_some() => {
                self.authorizer.refused.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => self.authorizer.refused.store(0, Ordering::Relaxed),
            Err(_) => {}
        }
        second
    }
}

impl Authorizer {
    /// The token to send and the generation of the credential it came from.
    async fn token(&self) -> Result<(Option<String>, u64), Failure> {
        let grant = self.state.lock().await;
        let token = match &grant.credential {
            Some(credential) => credential.token().await.map_err(Failure::Auth)?,
            None => None,
        };
        Ok((token, grant.generation))
    }

    /// A token to send again a request refused with `challenge` (its token was of
    /// `generation`): the current one when another request has authorized since,
    /// else one from a new authorization; `None` once [`MAX_REFUSED`] authorizations
    /// in a row were refused.
    async fn reauthorize(
        &self,
        challenge: &str,
        generation: u64,
    ) -> Result<Option<String>, Failure> {
        let mut grant = self.state.lock().await;
        if grant.generation != generation
            && let Some(credential) = &grant.credential
            && let Some(token) = credential.token().await.map_err(Failure::Auth)?
        {
            return Ok(Some(token));
        }
        // A token the server no longer takes (not a question of scopes): refreshed
        // silently where the grant allows it, before anyone is asked to log in.
        let base = reqwest::Url::parse(&self.url).ok();
        let scoped = base.is_some_and(|base| {
            WWWAuthenticateParams::parse(challenge, &base).is_insufficient_scope()
        });
        if !scoped
            && let Some(Credential::Manager(manager)) = &grant.credential
            && manager.refresh_token().await.is_ok()
            && let Ok(token) = manager.get_access_token().await
        {
            grant.generation += 1;
            return Ok(Some(token));
        }
        if self.refused.load(Ordering::Relaxed) >= MAX_REFUSED {
            tracing::warn!(
                url = %self.url,
                "the MCP server refused {MAX_REFUSED} fresh tokens in a row; not authorizing again"
            );
            return Ok(None);
        }
        let (credential, scopes) = self
            .oauth
            .authorize(&self.url, challenge, &self.clients, &grant.scopes)
            .await
            .map_err(|problem| Failure::Auth(AuthError::AuthorizationFailed(problem)))?;
        let token = credential.token().await.map_err(Failure::Auth)?;
        grant.credential = Some(credential);
        grant.generation += 1;
        grant.scopes = scopes;
        Ok(token)
    }
}

impl StreamableHttpClient for Authorized {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.with_token(auth_header, |token| {
            self.http.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.with_token(auth_header, |token| {
            self.http.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        self.with_token(auth_header, |token| {
            self.http.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        // Ending the session is not worth a new authorization (a login, for the
        // authorization code flow): it goes with the current token, once.
        let (token, _) = self.authorizer.token().await?;
        self.http
            .delete_session(uri, session_id, token.or(auth_header), custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.with_token(auth_header, |token| {
            self.http.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        self.with_token(auth_header, |token| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
