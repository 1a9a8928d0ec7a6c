//! `fetch`: HTTP GET of http/https URLs, with an address policy, a redirect limit, a
//! size cap and timeouts.

use std::net::{IpAddr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect::Policy;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::error::quoted;
use crate::tools::{NetworkPolicy, Tool, ToolContext, ToolError, ToolOutput};

/// Arguments of `fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FetchArgs {
    /// The http:// or https:// URL to GET.
    pub url: String,
}

/// `fetch`: GETs an http or https URL and returns the status, the content type and
/// the body (cut at the policy's size cap).
///
/// Refuses other schemes, and the special-purpose addresses of the IANA registries
/// (private, loopback, link-local, documentation, NAT64, 6to4 and Teredo forms of
/// them..., see [`NetworkPolicy::refuses`]) unless the policy allows them; the check
/// applies to every address a name resolves to and to every redirect hop, which are
/// followed up to the policy's limit. Proxies from the environment are not
/// used, so that the check cannot be bypassed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fetch;

/// Checks a URL's scheme and, for an IP literal, its address.
fn check_url(url: &reqwest::Url, policy: &NetworkPolicy) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https URLs can be fetched, not `{}:`",
            quoted(url.scheme())
        ));
    }
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        Some(url::Host::Domain(_)) => None,
        None => return Err("the URL has no host".to_string()),
    };
    match ip.and_then(|ip| policy.refuses(ip).map(|range| (ip, range))) {
        Some((ip, range)) => Err(format!(
            "{ip} is a {range} address, which fetch refuses (only public addresses may be fetched)"
        )),
        None => Ok(()),
    }
}

/// Resolves names and drops addresses the policy refuses.
struct GuardedResolver {
    policy: NetworkPolicy,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let allowed: Vec<SocketAddr> = all
                .into_iter()
                .filter(|a| match policy.refuses(a.ip()) {
                    Some(range) => {
                        refused = Some((a.ip(), range));
                        false
                    }
                    None => true,
                })
                .collect();
            if allowed.is_empty() {
                let why = refused.map_or(String::new(), |(ip, range)| {
                    format!(" ({ip} is a {range} address)")
                });
                return Err(format!(
                    "`{}` resolves only to special-purpose addresses, which fetch refuses{why}",
                    quoted(&host)
                )
                .into());
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// The error with its causes, for the model.
fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl Tool for Fetch {
    type Args = FetchArgs;

    fn name(&self) -> &str {
        "fetch"
    }

    fn description(&self) -> &str {
        "GET an http(s) URL and return its status, content type and body."
    }

    async fn call(&self, args: FetchArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let policy = cx.network().clone();
        let url = reqwest::Url::parse(&args.url).map_err(|e| ToolError::InvalidArguments {
            field: "url".into(),
            problem: format!(
                "argument `url` is not a valid URL: {}",
                quoted(&e.to_string())
            ),
        })?;
        check_url(&url, &policy).map_err(ToolError::failed)?;
        let max_redirects = policy.max_redirects;
        let hop_policy = policy.clone();
        let client = crate::http::client_builder()
            .no_proxy()
            .timeout(policy.timeout)
            .connect_timeout(policy.connect_timeout)
            .dns_resolver(GuardedResolver {
                policy: policy.clone(),
            })
            .redirect(Policy::custom(move |attempt| {
                if attempt.previous().len() > max_redirects {
                    let message = format!("more than {max_redirects} redirects");
                    return attempt.error(message);
                }
                match check_url(attempt.url(), &hop_policy) {
                    Ok(()) => attempt.follow(),
                    Err(message) => attempt.error(format!("redirect refused: {message}")),
                }
            }))
            .build()
            .map_err(|e| ToolError::failed(format!("cannot build the HTTP client: {e}")))?;
        let mut response = client.get(url).send().await.map_err(|e| {
            ToolError::failed(format!(
                "fetch {} failed: {}",
                quoted(&args.url),
                describe(&e.without_url())
            ))
        })?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response.chunk().await.map_err(|e| {
            ToolError::failed(format!(
                "reading {} failed: {}",
                quoted(&args.url),
                describe(&e.without_url())
            ))
        })? {
            let room = policy.max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let mut out = format!(
            "Status: {}\nContent-Type: {content_type}\n\n{}",
            status.as_u16(),
            String::from_utf8_lossy(&body)
        );
        if truncated {
            out.push_str(&format!(
                "\n...(truncated: the body is larger than the {} byte limit)",
                policy.max_bytes
            ));
        }
        Ok(out.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_by_scheme_and_address() {
        let policy = NetworkPolicy::default();
        let open = NetworkPolicy::allow_private();
        let url = reqwest::Url::parse("file:///etc/passwd").expect("a url");
        assert!(check_url(&url, &open).is_err());
        let url = reqwest::Url::parse("http://127.0.0.1:8080/").expect("a url");
        assert!(check_url(&url, &policy).is_err());
        assert!(check_url(&url, &open).is_ok());
        for refused in [
            "http://[::1]/",
            "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",
            "http://[::127.0.0.1]/",
            "http://[2002:7f00:1::]/",
            "http://[::ffff:10.0.0.1]/",
            "http://0x7f.1/",
        ] {
            let url = reqwest::Url::parse(refused).expect("a url");
            assert!(check_url(&url, &policy).is_err(), "{refused}");
        }
        let url = reqwest::Url::parse("http://[64:ff9b::a9fe:a9fe]/").expect("a url");
        let err = check_url(&url, &policy).expect_err("refused");
        assert!(err.contains("link-local (NAT64)"), "{err}");
        let url = reqwest::Url::parse("http://1.1.1.1/").expect("a url");
        assert!(check_url(&url, &policy).is_ok());
    }
}
