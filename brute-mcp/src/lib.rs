//! MCP (the Model Context Protocol) for brute, on the official Rust SDK, `rmcp`.
//!
//! - [`McpTools`]: the tools of an MCP server (over stdio or streamable HTTP) as a
//!   brute tool set, dispatched through the same tool pipeline as native tools.
//! - [`AgentServer`] and [`ToolSetServer`]: a brute agent (one tool that runs a turn)
//!   or a tool set as an MCP server, over stdio ([`serve_stdio`]) or streamable HTTP
//!   ([`serve_http`]); [`ContentServer`] adds the files beneath a tool root as
//!   resources, and prompts.
//!
//! See the crate's README for a guide.

mod client;
mod error;
mod server;
mod tls;

pub use client::{HttpServer, IdentityProvider, McpCall, McpTools, OAuth};
pub use error::McpError;
/// The MCP SDK this crate is built on, for its transports and models.
pub use rmcp;
pub use server::{AgentServer, ContentServer, ToolSetServer, serve_http, serve_stdio};
pub use tls::ensure_crypto_provider;
