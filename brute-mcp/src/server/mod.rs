//! brute as an MCP server: an agent, or a tool set, served to any MCP client.

mod agent;
mod serve;
mod tools;

pub use agent::AgentServer;
pub use serve::{serve_http, serve_stdio};
pub use tools::ToolSetServer;
