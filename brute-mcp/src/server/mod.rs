//! brute as an MCP server: an agent, or a tool set, served to any MCP client.

mod agent;
mod content;
mod files;
mod serve;
mod tools;

pub use agent::AgentServer;
pub use content::ContentServer;
pub use serve::{serve_http, serve_stdio};
pub use tools::ToolSetServer;
