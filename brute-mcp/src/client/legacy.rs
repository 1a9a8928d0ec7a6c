//! Authorization server metadata for an MCP server of the 2025-03-26 revision, which
//! publishes no protected resource metadata and serves its authorization server's
//! metadata at `/.well-known/oauth-authorization-server` on its own origin.
//!
//! RFC 8414 makes the issuer of metadata found at that address the origin itself;
//! such servers often name another issuer on the same origin (`http://host/oauth`),
//! and rmcp refuses the mismatch. The 2025-03-26 revision defines the authorization
//! server by the MCP server's origin, not by an issuer, so this fallback accepts
//! the document when (and only when) the server has no protected resource metadata
//! at all, and the issuer and every endpoint it names are on the MCP server's own
//! origin: a document cannot send the client, its secret or its code elsewhere.
//! Every other discovery path keeps rmcp's issuer check.

use std::time::Duration;

use reqwest::{StatusCode, Url};
use rmcp::transport::auth::{AuthorizationMetadata, WWWAuthenticateParams};

/// How long one metadata request may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The metadata of a 2025-03-26 server at `url` that answered with `challenge`, or
/// `None` when the fallback does not apply (the server has protected resource
/// metadata, or no metadata at its origin); an error says why the document found
/// there is refused.
pub(super) async fn metadata(
    http: &reqwest::Client,
    url: &str,
    challenge: &str,
) -> Result<Option<AuthorizationMetadata>, String> {
    let base = Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    if WWWAuthenticateParams::parse(challenge, &base)
        .resource_metadata_url
        .is_some()
    {
        return Ok(None);
    }
    let at = |path: &str| {
        let mut address = base.clone();
        address.set_query(None);
        address.set_fragment(None);
        address.set_path(path);
        address
    };
    let path = base.path().trim_end_matches('/');
    for resource_metadata in [
        at(&format!("/.well-known/oauth-protected-resource{path}")),
        at("/.well-known/oauth-protected-resource"),
    ] {
        if get(http, &resource_metadata).await?.is_some() {
            return Ok(None);
        }
    }
    let address = at("/.well-known/oauth-authorization-server");
    let Some(body) = get(http, &address).await? else {
        return Ok(None);
    };
    let metadata: AuthorizationMetadata = serde_json::from_slice(&body).map_err(|e| {
        format!("the metadata at {address} is not authorization server metadata: {e}")
    })?;
    let issuer = metadata
        .issuer
        .as_deref()
        .ok_or_else(|| format!("the metadata at {address} names no issuer"))?;
    let named = [
        Some(("issuer", issuer)),
        Some((
            "authorization_endpoint",
            metadata.authorization_endpoint.as_str(),
        )),
        Some(("token_endpoint", metadata.token_endpoint.as_str())),
        metadata
            .registration_endpoint
            .as_deref()
            .map(|endpoint| ("registration_endpoint", endpoint)),
    ];
    for (field, value) in named.into_iter().flatten() {
        let same_origin = Url::parse(value).is_ok_and(|v| v.origin() == base.origin());
        if !same_origin {
            return Err(format!(
                "the metadata at {address} names `{field}` {value}, which is not on the MCP server's origin; a server without protected resource metadata is trusted only for its own origin"
            ));
        }
    }
    Ok(Some(metadata))
}

/// The body of a `200` answer to a GET of `address`, `None` for any other status.
async fn get(http: &reqwest::Client, address: &Url) -> Result<Option<Vec<u8>>, String> {
    let response = http
        .get(address.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("cannot fetch {address}: {e}"))?;
    if response.status() != StatusCode::OK {
        return Ok(None);
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("cannot read {address}: {e}"))?;
    Ok(Some(body.to_vec()))
}
