//! MCP (the Model Context Protocol) for brute, on the official Rust SDK, `rmcp`.
//!
//! - [`McpTools`]: the tools of an MCP server (over stdio or streamable HTTP) as a
//!   brute tool set, dispatched through the same tool pipeline as native tools.
//!
//! See the crate's README for a guide.

mod client;
mod error;

pub use client::{McpCall, McpTools};
pub use error::McpError;
/// The MCP SDK this crate is built on, for its transports and models.
pub use rmcp;
