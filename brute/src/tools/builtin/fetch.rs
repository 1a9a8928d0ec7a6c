//! `fetch`: HTTP GET of http/https URLs, with an address policy, a redirect limit, a
//! size cap and timeouts.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect::Policy;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};

/// Arguments of `fetch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FetchArgs {
    /// The http:// or https:// URL to GET.
    pub url: String,
}

/// `fetch`: GETs an http or https URL and returns the status, the content type and
/// the body (cut at the policy's size cap).
///
/// Refuses other schemes, and private, loopback, link-local and other non-public
/// addresses unless the [`NetworkPolicy`](crate::tools::NetworkPolicy) allows them;
/// the check applies to every address a name resolves to and to every redirect,
/// which are followed up to the policy's limit. Proxies from the environment are not
/// used, so that the check cannot be bypassed.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fetch;

/// Whether `ip` is a public unicast address.
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
                || (first & 0xffc0) == 0xfec0 // site-local
                || v6 == Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0)
                || (first == 0x2001 && v6.segments()[1] == 0x0db8)) // documentation
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240)
}

/// Checks a URL's scheme and, for an IP literal, its address.
fn check_url(url: &reqwest::Url, allow_private: bool) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https URLs can be fetched, not `{}:`",
            url.scheme()
        ));
    }
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        Some(url::Host::Domain(_)) => None,
        None => return Err("the URL has no host".to_string()),
    };
    match ip {
        Some(ip) if !allow_private && !is_public(ip) => Err(format!(
            "{ip} is a private, loopback or link-local address, which fetch refuses"
        )),
        _ => Ok(()),
    }
}

/// Resolves names and drops addresses the policy refuses.
struct GuardedResolver {
    allow_private: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = all
                .into_iter()
                .filter(|a| allow_private || is_public(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(format!(
                    "`{host}` resolves only to private, loopback or link-local addresses, which fetch refuses"
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
            problem: format!("argument `url` is not a valid URL: {e}"),
        })?;
        check_url(&url, policy.allow_private).map_err(ToolError::failed)?;
        let max_redirects = policy.max_redirects;
        let allow_private = policy.allow_private;
        let client = crate::http::client_builder()
            .no_proxy()
            .timeout(policy.timeout)
            .connect_timeout(policy.connect_timeout)
            .dns_resolver(GuardedResolver { allow_private })
            .redirect(Policy::custom(move |attempt| {
                if attempt.previous().len() > max_redirects {
                    let message = format!("more than {max_redirects} redirects");
                    return attempt.error(message);
                }
                match check_url(attempt.url(), allow_private) {
                    Ok(()) => attempt.follow(),
                    Err(message) => attempt.error(format!("redirect refused: {message}")),
                }
            }))
            .build()
            .map_err(|e| ToolError::failed(format!("cannot build the HTTP client: {e}")))?;
        let mut response = client.get(url).send().await.map_err(|e| {
            ToolError::failed(format!("fetch {} failed: {}", args.url, describe(&e)))
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
            ToolError::failed(format!("reading {} failed: {}", args.url, describe(&e)))
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
    fn address_policy() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            let ip: IpAddr = private.parse().expect("an address");
            assert!(!is_public(ip), "{private}");
        }
        for public in ["1.1.1.1", "93.184.216.34", "2606:4700::1111"] {
            let ip: IpAddr = public.parse().expect("an address");
            assert!(is_public(ip), "{public}");
        }
        let url = reqwest::Url::parse("file:///etc/passwd").expect("a url");
        assert!(check_url(&url, true).is_err());
        let url = reqwest::Url::parse("http://127.0.0.1:8080/").expect("a url");
        assert!(check_url(&url, false).is_err());
        assert!(check_url(&url, true).is_ok());
        let url = reqwest::Url::parse("http://[::1]/").expect("a url");
        assert!(check_url(&url, false).is_err());
    }
}
