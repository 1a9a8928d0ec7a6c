//! Errors of connecting to an MCP server and of serving one.

use std::io;

/// Why an MCP server's tools could not be reached, or why serving failed. Every
/// message names the server (as it was named to [`McpTools`](crate::McpTools)) or the
/// address.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server's process could not be started.
    #[error("MCP server `{server}`: cannot start `{command}`: {source}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The program that was run.
        command: String,
        /// The cause.
        source: io::Error,
    },
    /// The MCP handshake (`initialize`) failed.
    #[error(
        "MCP server `{server}`: the handshake failed: {}",
        handshake_problem(source)
    )]
    Initialize {
        /// The server's name.
        server: String,
        /// The cause, as rmcp reports it.
        source: Box<rmcp::service::ClientInitializeError>,
    },
    /// Listing the server's tools failed.
    #[error("MCP server `{server}`: cannot list its tools: {source}")]
    List {
        /// The server's name.
        server: String,
        /// The cause, as rmcp reports it.
        source: rmcp::ServiceError,
    },
    /// A tool's input schema is not a JSON object, or two tools share a name.
    #[error("MCP server `{server}`: tool `{tool}`: {problem}")]
    BadTool {
        /// The server's name.
        server: String,
        /// The tool's name.
        tool: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An HTTP server could not be reached: refused, unknown, or its certificate not
    /// trusted.
    #[error("MCP server `{server}`: cannot reach {url}: {problem}")]
    Unreachable {
        /// The server's name.
        server: String,
        /// Its URL.
        url: String,
        /// Why, with every cause (`invalid peer certificate: UnknownIssuer`).
        problem: String,
    },
    /// An HTTP server answered the handshake with 401 and a `WWW-Authenticate`
    /// challenge, and no [`OAuth`](crate::OAuth) was configured
    /// ([`HttpServer::oauth`](crate::HttpServer::oauth)). A server that takes a token
    /// issued another way works with [`HttpServer::bearer`](crate::HttpServer::bearer).
    #[error(
        "MCP server `{server}`: 401 from {url}: this server needs OAuth (it asked: {challenge}); configure it with HttpServer::oauth, or give a token obtained another way with HttpServer::bearer"
    )]
    AuthRequired {
        /// The server's name.
        server: String,
        /// Its URL.
        url: String,
        /// The `WWW-Authenticate` challenge it sent.
        challenge: String,
    },
    /// Getting an OAuth token for a server that asked for one (401, or 403 for more
    /// scopes) failed: discovery, registration, the authorization step or the token
    /// request.
    #[error("MCP server `{server}`: {url} asked for OAuth, and it failed: {problem}")]
    OAuth {
        /// The server's name.
        server: String,
        /// Its URL.
        url: String,
        /// What failed, as the authorization server or rmcp said it.
        problem: String,
    },
    /// An HTTP server refused a request with 401, or with 403 asking for more scopes:
    /// after the handshake without [`OAuth`](crate::OAuth), or with OAuth when the
    /// token got anew for the request was refused too (a request is sent again once,
    /// and the client stops authorizing after three such refusals in a row).
    #[error(
        "MCP server `{server}`: {status} from {url}: {}",
        refused_problem(*authorized, challenge)
    )]
    Refused {
        /// The server's name.
        server: String,
        /// Its URL.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The `WWW-Authenticate` challenge it sent.
        challenge: String,
        /// Whether the client had authorized anew for this request (or had given up
        /// authorizing), with [`HttpServer::oauth`](crate::HttpServer::oauth).
        authorized: bool,
    },
    /// The private key given to [`OAuth::private_key_jwt`](crate::OAuth::private_key_jwt)
    /// cannot sign client assertions. The key itself is never shown.
    #[error("OAuth client `{client_id}`: the private key for private_key_jwt: {problem}")]
    BadKey {
        /// The client's id.
        client_id: String,
        /// What is wrong with the key.
        problem: String,
    },
    /// An HTTP server's options are unusable: a header, a root certificate, the client.
    #[error("MCP server at {url}: {problem}")]
    Http {
        /// The server's URL.
        url: String,
        /// What is wrong.
        problem: String,
    },
    /// Serving failed: the handshake with a client over stdio, or the listener.
    #[error("serving MCP over {transport}: {problem}")]
    Serve {
        /// `stdio` or the listening address.
        transport: String,
        /// What failed.
        problem: String,
    },
}

/// Why a refused request was not answered, in words.
fn refused_problem(authorized: bool, challenge: &str) -> String {
    if authorized {
        format!(
            "the server refused the client's token, also after it authorized anew (it asked: {challenge}); a refused request is sent again once with a new token, and after three such refusals in a row the client stops authorizing"
        )
    } else {
        format!(
            "the server refused the request (it asked: {challenge}); configure HttpServer::oauth to let the client authorize, or give a token with the scopes it needs with HttpServer::bearer"
        )
    }
}

/// What went wrong in a handshake, in words: rmcp's own message for a transport error
/// starts with the transport's Rust type, which says nothing to a reader.
fn handshake_problem(error: &rmcp::service::ClientInitializeError) -> String {
    match error {
        rmcp::service::ClientInitializeError::TransportError { error, context } => {
            format!("{} (when {context})", error.error)
        }
        other => other.to_string(),
    }
}
