//! The agent card: `GET /.well-known/agent-card.json` for the default agent and
//! `GET /a2a/{agent}/.well-known/agent-card.json` for each agent, naming the JSON-RPC
//! endpoint of that agent on the host the client called.

use axum::http::HeaderMap;
use serde_json::{Value, json};

/// The card of `agent`, served at `base` (`http://host`): its JSON-RPC interface at
/// `{base}/a2a{agent_path}` and its REST one at `{base}/a2a-rest{agent_path}`
/// (`agent_path` empty for the default agent, `/{agent}` for the others), streaming on, no push notifications, and bearer auth when the
/// server requires it.
pub(crate) fn card(agent: &str, base: &str, agent_path: &str, bearer: bool) -> Value {
    let mut card = json!({
        "name": agent,
        "description": format!("The brute agent `{agent}`, served by brute-serve."),
        "supportedInterfaces": [{
            "url": format!("{base}/a2a{agent_path}"),
            "protocolBinding": "JSONRPC",
            "protocolVersion": super::wire::VERSION,
        }, {
            "url": format!("{base}/a2a-rest{agent_path}"),
            "protocolBinding": "HTTP+JSON",
            "protocolVersion": super::wire::VERSION,
        }],
        "provider": {"organization": "brute-serve", "url": base},
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {"streaming": true, "pushNotifications": false, "extendedAgentCard": false},
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": agent,
            "name": agent,
            "description": format!("Talk to `{agent}`: each message is a turn of its conversation (the context); a tool call that needs approval asks for input."),
            "tags": ["brute", "agent"],
        }],
    });
    if bearer {
        card["securitySchemes"] =
            json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}});
        card["securityRequirements"] = json!([{"schemes": {"bearer": {}}}]);
    }
    card
}

/// `http://host[:port]` of the request (`https` behind a proxy that says so with
/// `X-Forwarded-Proto`); `http://localhost` when it names no host.
pub(crate) fn base(headers: &HeaderMap) -> String {
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get(axum::http::header::HOST))
        .and_then(|v| v.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-.:[]".contains(c))
        })
        .unwrap_or("localhost");
    let scheme = match headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
    {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_card_names_the_endpoint_on_the_host_called_and_its_auth() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "host",
            "127.0.0.1:9".parse().unwrap_or_else(|_| unreachable!()),
        );
        let base = base(&headers);
        let shown = card("echo", &base, "", true);
        assert_eq!(
            shown["supportedInterfaces"][0]["url"],
            "http://127.0.0.1:9/a2a"
        );
        assert_eq!(shown["supportedInterfaces"][0]["protocolVersion"], "1.0");
        assert_eq!(
            shown["supportedInterfaces"][1]["url"],
            "http://127.0.0.1:9/a2a-rest"
        );
        assert_eq!(
            shown["securityRequirements"][0]["schemes"]["bearer"],
            json!({})
        );
        assert!(
            card("echo", &base, "", false)
                .get("securitySchemes")
                .is_none()
        );
        headers.insert("host", "evil/x".parse().unwrap_or_else(|_| unreachable!()));
        assert_eq!(super::base(&headers), "http://localhost");
    }
}
