//! Network policy: what `fetch` may reach, and the table of special-purpose
//! addresses it refuses.
//!
//! The table follows the IANA IPv4 and IPv6 Special-Purpose Address Registries
//! (RFC 6890 and its updates). An address is refused when it is in a range that is not
//! globally reachable; ranges the registry marks globally reachable but that no web
//! server uses (anycast service addresses, ORCHID, AMT inside `2001::/23`) are refused
//! too. For IPv6, only global unicast (`2000::/3`) is allowed at all, and the IPv4
//! address embedded in IPv4-mapped, NAT64 (`64:ff9b::/96`), 6to4 (`2002::/16`) and
//! Teredo (`2001::/32`: server and client) addresses is unwrapped and checked against
//! the IPv4 table.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

/// What `fetch` may reach and how much it reads.
#[derive(Clone, Debug)]
pub struct NetworkPolicy {
    /// Whether private, loopback, link-local and other special-purpose addresses may
    /// be fetched. Off by default.
    pub allow_private: bool,
    /// Response bodies are cut at this many bytes (default 1 MiB).
    pub max_bytes: usize,
    /// Redirects followed at most (default 5).
    pub max_redirects: usize,
    /// Timeout of the whole request (default 30 s).
    pub timeout: Duration,
    /// Timeout of connecting (default 10 s).
    pub connect_timeout: Duration,
}

impl Default for NetworkPolicy {
    fn default() -> Self {
        NetworkPolicy {
            allow_private: false,
            max_bytes: 1024 * 1024,
            max_redirects: 5,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
        }
    }
}

impl NetworkPolicy {
    /// The default policy, allowing private and loopback addresses (for tests and
    /// local services).
    pub fn allow_private() -> Self {
        NetworkPolicy {
            allow_private: true,
            ..Self::default()
        }
    }

    /// Sets the body size cap.
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Why `ip` may not be fetched under this policy (the name of its special-purpose
    /// range), or `None` when it may.
    ///
    /// ```
    /// use brute::tools::NetworkPolicy;
    ///
    /// let policy = NetworkPolicy::default();
    /// assert_eq!(policy.refuses("1.1.1.1".parse()?), None);
    /// assert_eq!(policy.refuses("64:ff9b::a9fe:a9fe".parse()?), Some("link-local (NAT64)"));
    /// assert_eq!(NetworkPolicy::allow_private().refuses("127.0.0.1".parse()?), None);
    /// # Ok::<(), std::net::AddrParseError>(())
    /// ```
    pub fn refuses(&self, ip: IpAddr) -> Option<&'static str> {
        if self.allow_private {
            None
        } else {
            special_purpose(ip)
        }
    }
}

/// The special-purpose range `ip` is in, or `None` for a public unicast address.
pub(crate) fn special_purpose(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

/// IPv4 ranges that are refused: `(network, prefix length, name)`.
const V4: &[([u8; 4], u8, &str)] = &[
    ([0, 0, 0, 0], 8, "\"this network\""),
    ([10, 0, 0, 0], 8, "private-use"),
    (
        [100, 64, 0, 0],
        10,
        "shared address space (carrier-grade NAT)",
    ),
    ([127, 0, 0, 0], 8, "loopback"),
    ([169, 254, 0, 0], 16, "link-local"),
    ([172, 16, 0, 0], 12, "private-use"),
    ([192, 0, 0, 0], 24, "IETF protocol assignments"),
    ([192, 0, 2, 0], 24, "documentation (TEST-NET-1)"),
    ([192, 88, 99, 0], 24, "6to4 relay anycast (deprecated)"),
    ([192, 168, 0, 0], 16, "private-use"),
    ([198, 18, 0, 0], 15, "benchmarking"),
    ([198, 51, 100, 0], 24, "documentation (TEST-NET-2)"),
    ([203, 0, 113, 0], 24, "documentation (TEST-NET-3)"),
    ([224, 0, 0, 0], 4, "multicast"),
    ([255, 255, 255, 255], 32, "limited broadcast"),
    ([240, 0, 0, 0], 4, "reserved"),
];

/// IPv6 ranges that are refused outright: `(network, prefix length, name)`. Checked
/// after the ranges that embed an IPv4 address.
const V6: &[(u128, u8, &str)] = &[
    (0, 128, "unspecified"),
    (1, 128, "loopback"),
    (0, 96, "IPv4-compatible (deprecated)"),
    (0x0064_ff9b_0001 << 80, 48, "local-use NAT64"),
    (0x0100 << 112, 64, "discard-only"),
    (0x0100_0000_0000_0001 << 64, 64, "dummy prefix"),
    (0x2001_0db8 << 96, 32, "documentation"),
    (0x2001_0002 << 96, 48, "benchmarking"),
    (0x2001 << 112, 23, "IETF protocol assignments"),
    (0x3fff << 112, 20, "documentation"),
    (0x5f00 << 112, 16, "segment routing (SRv6) SIDs"),
    (0xfc00 << 112, 7, "unique local"),
    (0xfe80 << 112, 10, "link-local"),
    (0xfec0 << 112, 10, "site-local (deprecated)"),
    (0xff00 << 112, 8, "multicast"),
];

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let bits = u32::from(ip);
    V4.iter()
        .find(|(net, len, _)| {
            let mask = if *len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(*len))
            };
            bits & mask == u32::from_be_bytes(*net) & mask
        })
        .map(|(_, _, name)| *name)
}

fn in_v6(bits: u128, net: u128, len: u8) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(len))
    };
    bits & mask == net & mask
}

/// The IPv4 address in the low 32 bits.
fn low_v4(bits: u128) -> Ipv4Addr {
    Ipv4Addr::from((bits & 0xffff_ffff) as u32)
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    // Ranges that carry an IPv4 address: the embedded address decides.
    let embedded: Option<(Vec<Ipv4Addr>, &'static str)> = if in_v6(bits, 0xffff << 32, 96) {
        Some((vec![low_v4(bits)], "IPv4-mapped"))
    } else if in_v6(bits, 0x0064_ff9b << 96, 96) {
        Some((vec![low_v4(bits)], "NAT64"))
    } else if in_v6(bits, 0x2002 << 112, 16) {
        Some((vec![low_v4(bits >> 80)], "6to4"))
    } else if in_v6(bits, 0x2001_0000 << 96, 32) {
        // Teredo: the server in bits 32..64, the client inverted in the low 32 bits.
        let server = low_v4(bits >> 64);
        let client = low_v4(!bits);
        Some((vec![server, client], "Teredo"))
    } else {
        None
    };
    if let Some((inner, via)) = embedded {
        return inner.into_iter().find_map(special_v4).map(|name| {
            // The names are few: give each wrapped form its own static text.
            wrapped(name, via)
        });
    }
    if let Some((_, _, name)) = V6.iter().find(|(net, len, _)| in_v6(bits, *net, *len)) {
        return Some(name);
    }
    if !in_v6(bits, 0x2000 << 112, 3) {
        return Some("not global unicast (outside 2000::/3)");
    }
    None
}

/// `name (via)` as a static string, for the few combinations there are.
fn wrapped(name: &'static str, via: &'static str) -> &'static str {
    macro_rules! table {
        ($($name:literal),*) => {
            match (name, via) {
                $(
                    ($name, "IPv4-mapped") => concat!($name, " (IPv4-mapped)"),
                    ($name, "NAT64") => concat!($name, " (NAT64)"),
                    ($name, "6to4") => concat!($name, " (6to4)"),
                    ($name, "Teredo") => concat!($name, " (Teredo)"),
                )*
                _ => "special-purpose (embedded IPv4)",
            }
        };
    }
    table!(
        "\"this network\"",
        "private-use",
        "shared address space (carrier-grade NAT)",
        "loopback",
        "link-local",
        "IETF protocol assignments",
        "documentation (TEST-NET-1)",
        "6to4 relay anycast (deprecated)",
        "benchmarking",
        "documentation (TEST-NET-2)",
        "documentation (TEST-NET-3)",
        "multicast",
        "reserved",
        "limited broadcast"
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn refused(text: &str) -> Option<&'static str> {
        special_purpose(text.parse().unwrap())
    }

    #[test]
    fn every_table_entry_is_refused_at_both_ends_and_its_neighbours_pass() {
        for (net, len, name) in V4 {
            let first = u32::from_be_bytes(*net);
            let last = first | (u32::MAX.checked_shr(u32::from(*len)).unwrap_or(0));
            assert_eq!(special_v4(first.into()), Some(*name), "{net:?}/{len}");
            // The last address of a range may be in a narrower one listed first.
            assert!(special_v4(last.into()).is_some(), "{net:?}/{len}");
        }
        for (net, len, name) in V6 {
            let last = net | u128::MAX.checked_shr(u32::from(*len)).unwrap_or(0);
            assert!(special_v6((*net).into()).is_some(), "{name}");
            assert!(special_v6(last.into()).is_some(), "{name}");
        }
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "192.0.3.1",
            "198.20.0.1",
        ] {
            assert_eq!(refused(public), None, "{public}");
        }
        for public in ["2606:4700::1111", "2a00:1450::1", "2001:4860:4860::8888"] {
            assert_eq!(refused(public), None, "{public}");
        }
    }

    #[test]
    fn embedded_ipv4_addresses_are_unwrapped() {
        // NAT64 of the metadata address and of loopback; of a public address: allowed.
        assert_eq!(
            refused("64:ff9b::169.254.169.254"),
            Some("link-local (NAT64)")
        );
        assert_eq!(refused("64:ff9b::127.0.0.1"), Some("loopback (NAT64)"));
        assert_eq!(refused("64:ff9b::"), Some("\"this network\" (NAT64)"));
        assert_eq!(refused("64:ff9b::1.1.1.1"), None);
        assert_eq!(refused("64:ff9b:1::1.1.1.1"), Some("local-use NAT64"));
        assert_eq!(refused("::ffff:127.0.0.1"), Some("loopback (IPv4-mapped)"));
        assert_eq!(
            refused("::ffff:10.0.0.1"),
            Some("private-use (IPv4-mapped)")
        );
        assert_eq!(refused("::ffff:1.1.1.1"), None);
        assert_eq!(refused("::127.0.0.1"), Some("IPv4-compatible (deprecated)"));
        assert_eq!(refused("::1.1.1.1"), Some("IPv4-compatible (deprecated)"));
        // 6to4: 2002:AABB:CCDD:: carries AA.BB.CC.DD.
        assert_eq!(refused("2002:7f00:1::"), Some("loopback (6to4)"));
        assert_eq!(refused("2002:a9fe:a9fe::1"), Some("link-local (6to4)"));
        assert_eq!(refused("2002:0101:0101::1"), None);
        // Teredo: server 65.54.227.120, client 192.168.1.1 inverted (3f57:fefe).
        assert_eq!(
            refused("2001:0:4136:e378:8000:63bf:3f57:fefe"),
            Some("private-use (Teredo)")
        );
        assert_eq!(refused("2001:0:7f00:1::"), Some("loopback (Teredo)"));
        assert_eq!(refused("2001:0:4136:e378:8000:63bf:fefe:fefe"), None);
    }

    #[test]
    fn the_rest_of_the_ipv6_space_is_refused_by_name() {
        assert_eq!(refused("::"), Some("unspecified"));
        assert_eq!(refused("::1"), Some("loopback"));
        assert_eq!(refused("fe80::1"), Some("link-local"));
        assert_eq!(refused("fd00::1"), Some("unique local"));
        assert_eq!(refused("fec0::1"), Some("site-local (deprecated)"));
        assert_eq!(refused("ff02::1"), Some("multicast"));
        assert_eq!(refused("2001:db8::1"), Some("documentation"));
        assert_eq!(refused("3fff::1"), Some("documentation"));
        assert_eq!(refused("2001:2::1"), Some("benchmarking"));
        assert_eq!(refused("2001:10::1"), Some("IETF protocol assignments"));
        assert_eq!(refused("100::1"), Some("discard-only"));
        assert_eq!(refused("5f00::1"), Some("segment routing (SRv6) SIDs"));
        assert_eq!(
            refused("4000::1"),
            Some("not global unicast (outside 2000::/3)")
        );
        assert_eq!(refused("1.0.0.0"), None);
        assert_eq!(refused("255.255.255.255"), Some("limited broadcast"));
        assert_eq!(
            refused("100.127.255.255"),
            Some("shared address space (carrier-grade NAT)")
        );
        assert_eq!(refused("100.128.0.0"), None);
    }
}
