//! The PII scanner: hand-written detectors over the segments of a text, and the keyed
//! digest of the hash action.
//!
//! A text is cut into segments at whitespace. A match never crosses a segment's end,
//! so scanning a text and scanning its pieces cut at segment ends give the same result:
//! what lets the streamed filter release every finished segment at once. A space
//! between digit groups (`4111 1111`, `+1 555 0100`, `(555) 0100`) does not end a
//! segment, so spaced card and phone numbers are found whole.

use std::net::Ipv6Addr;
use std::ops::Range;

/// What the detectors of one guard found in one segment: `(range, detector)`, ranges
/// in segment coordinates, no two overlapping, sorted by start.
pub(super) type Found = Vec<(Range<usize>, usize)>;

/// Whether the byte at `i`, an ASCII whitespace, ends a segment. `None` when that is
/// not known yet: a space after a digit group, at the end of the text so far.
#[inline]
pub(super) fn ends_segment(b: &[u8], i: usize) -> Option<bool> {
    if b[i] != b' ' || i == 0 || !(b[i - 1].is_ascii_digit() || b[i - 1] == b')') {
        return Some(true);
    }
    let next = *b.get(i + 1)?;
    Some(!(next.is_ascii_digit() || next == b'('))
}

/// The end of the last segment of `text` that is known to be finished: every byte
/// before it may be scanned and released, as it will be scanned in the whole text.
pub(super) fn finished(text: &str) -> usize {
    let b = text.as_bytes();
    let mut i = b.len();
    while i > 0 {
        i -= 1;
        if b[i].is_ascii_whitespace() && ends_segment(b, i) == Some(true) {
            return i + 1;
        }
    }
    0
}

/// Calls `each(start, end)` for every segment of `text` (byte ranges between the
/// whitespace that ends segments; the whitespace belongs to none).
#[inline]
pub(super) fn segments(text: &str, mut each: impl FnMut(usize, usize)) {
    let b = text.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() && ends_segment(b, i) != Some(false) {
            if i > start {
                each(start, i);
            }
            start = i + 1;
        }
        i += 1;
    }
    if b.len() > start {
        each(start, b.len());
    }
}

/// What a segment holds, to skip detectors that cannot match it.
#[derive(Clone, Copy, Default)]
pub(super) struct Hints {
    pub(super) digit: bool,
    pub(super) at: bool,
    pub(super) colon: bool,
    pub(super) dot: bool,
}

impl Hints {
    #[inline]
    pub(super) fn of(b: &[u8]) -> Hints {
        let mut hints = Hints::default();
        for &c in b {
            match c {
                b'0'..=b'9' => hints.digit = true,
                b'@' => hints.at = true,
                b':' => hints.colon = true,
                b'.' => hints.dot = true,
                _ => {}
            }
        }
        hints
    }

    /// Whether no built-in detector can match.
    #[inline]
    pub(super) fn none(self) -> bool {
        !(self.digit || self.at || self.colon || self.dot)
    }
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Email addresses: `local@domain.tld`.
pub(super) fn emails(b: &[u8], out: &mut Vec<Range<usize>>) {
    let local = |c: u8| c.is_ascii_alphanumeric() || b"._%+-".contains(&c);
    let domain = |c: u8| c.is_ascii_alphanumeric() || c == b'.' || c == b'-';
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'@' {
            i += 1;
            continue;
        }
        let mut start = i;
        while start > 0 && local(b[start - 1]) {
            start -= 1;
        }
        while start < i && b[start] == b'.' {
            start += 1;
        }
        let mut end = i + 1;
        while end < b.len() && domain(b[end]) {
            end += 1;
        }
        while end > i + 1 && matches!(b[end - 1], b'.' | b'-') {
            end -= 1;
        }
        let host = &b[i + 1..end];
        let tld = host.rsplit(|&c| c == b'.').next().unwrap_or_default();
        if start < i
            && host.first().is_some_and(u8::is_ascii_alphanumeric)
            && host.contains(&b'.')
            && tld.len() >= 2
            && tld.iter().all(u8::is_ascii_alphabetic)
        {
            out.push(start..end);
            i = end;
        } else {
            i += 1;
        }
    }
}

/// URLs: `http://..`, `https://..` and `www...`, up to the segment's end or a space,
/// without trailing punctuation.
pub(super) fn urls(b: &[u8], out: &mut Vec<Range<usize>>) {
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let head = [&b"https://"[..], b"http://", b"www."]
            .into_iter()
            .find(|p| rest.len() > p.len() && rest[..p.len()].eq_ignore_ascii_case(p));
        let Some(head) = head.filter(|_| i == 0 || !is_word(b[i - 1])) else {
            i += 1;
            continue;
        };
        let mut end = i + head.len();
        while end < b.len() && !matches!(b[end], b' ' | b'<' | b'>' | b'"' | b'`') {
            end += 1;
        }
        while end > i + head.len() && b".,;:!?)]}'".contains(&b[end - 1]) {
            end -= 1;
        }
        if end > i + head.len() {
            out.push(i..end);
            i = end;
        } else {
            i += 1;
        }
    }
}

/// IPv4 addresses: four dotted octets, each at most 255.
pub(super) fn ipv4s(b: &[u8], out: &mut Vec<Range<usize>>) {
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.'));
        if let Some(end) = starts.then(|| ipv4_at(b, i)).flatten() {
            out.push(i..end);
            i = end;
        } else {
            i += 1;
        }
    }
}

fn ipv4_at(b: &[u8], mut i: usize) -> Option<usize> {
    for octet in 0..4 {
        if octet > 0 {
            if b.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
        let start = i;
        let mut value = 0u32;
        while i < b.len() && b[i].is_ascii_digit() && i - start < 3 {
            value = value * 10 + u32::from(b[i] - b'0');
            i += 1;
        }
        if i == start || value > 255 {
            return None;
        }
    }
    let after = |k: usize| b.get(k).copied();
    let more = after(i).is_some_and(|c| c.is_ascii_alphanumeric())
        || (after(i) == Some(b'.') && after(i + 1).is_some_and(|c| c.is_ascii_digit()));
    (!more).then_some(i)
}

/// IPv6 addresses, as the standard library reads them.
pub(super) fn ipv6s(b: &[u8], out: &mut Vec<Range<usize>>) {
    let part = |c: u8| c.is_ascii_hexdigit() || c == b':' || c == b'.';
    let mut i = 0;
    while i < b.len() {
        if !part(b[i]) || (i > 0 && (b[i - 1].is_ascii_alphanumeric() || part(b[i - 1]))) {
            i += 1;
            continue;
        }
        let mut end = i;
        while end < b.len() && part(b[end]) {
            end += 1;
        }
        let run = end;
        while end > i && b[end - 1] == b'.' {
            end -= 1;
        }
        let text = std::str::from_utf8(&b[i..end]).unwrap_or_default();
        let colons = text.bytes().filter(|&c| c == b':').count();
        let alone = b.get(run).is_none_or(|c| !c.is_ascii_alphanumeric());
        if colons >= 2
            && alone
            && text.bytes().any(|c| c.is_ascii_hexdigit())
            && text.parse::<Ipv6Addr>().is_ok()
        {
            out.push(i..end);
        }
        i = run.max(i + 1);
    }
}

/// A run of digits with single spaces or hyphens between them, from `i`: its end
/// and its digit count.
fn digit_run(b: &[u8], mut i: usize, separators: &[u8]) -> (usize, usize) {
    let mut digits = 0;
    let mut end = i;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            digits += 1;
            i += 1;
            end = i;
        } else if separators.contains(&b[i]) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
        } else {
            break;
        }
    }
    (end, digits)
}

/// Whether the digits of `b` pass the Luhn check.
pub(super) fn luhn(b: &[u8]) -> bool {
    let mut sum = 0u32;
    let mut double = false;
    for &c in b.iter().rev().filter(|c| c.is_ascii_digit()) {
        let mut d = u32::from(c - b'0');
        if double {
            d *= 2;
            if d > 9 {
                d -= 9;
            }
        }
        sum += d;
        double = !double;
    }
    sum.is_multiple_of(10)
}

/// Card numbers: 13 to 19 digits, spaced or hyphenated, that pass the Luhn check.
pub(super) fn cards(b: &[u8], out: &mut Vec<Range<usize>>) {
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() || (i > 0 && is_word(b[i - 1])) {
            i += 1;
            continue;
        }
        let (end, digits) = digit_run(b, i, b" -");
        if (13..=19).contains(&digits)
            && b.get(end).is_none_or(|c| !is_word(*c))
            && luhn(&b[i..end])
        {
            out.push(i..end);
        }
        i = end.max(i + 1);
    }
}

/// Phone numbers: 10 to 15 digits, written with a leading `+` or with separators
/// (spaces, hyphens, dots, parentheses).
pub(super) fn phones(b: &[u8], out: &mut Vec<Range<usize>>) {
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let starts = (c == b'+' || c == b'(' || c.is_ascii_digit())
            && (i == 0 || !(is_word(b[i - 1]) || b[i - 1] == b'+' || b[i - 1] == b'.'));
        if !starts {
            i += 1;
            continue;
        }
        let mut end = i + usize::from(c == b'+');
        let (mut digits, mut separated, mut last_digit) = (0, false, end);
        while end < b.len() {
            match b[end] {
                b'0'..=b'9' => {
                    digits += 1;
                    last_digit = end + 1;
                }
                b' ' | b'-' | b'.' | b'(' | b')' => separated = true,
                _ => break,
            }
            end += 1;
        }
        let end = last_digit;
        if (10..=15).contains(&digits)
            && (c == b'+' || separated)
            && b.get(end).is_none_or(|c| !is_word(*c))
        {
            out.push(i..end);
            i = end;
        } else {
            i = end.max(i + 1);
        }
    }
}

/// SipHash-2-4 of `data` under `key`: the keyed digest of the hash action. Stable
/// across versions and machines (it is written here, not taken from the standard
/// library, whose hasher may change).
pub(super) fn siphash24(key: [u8; 16], data: &[u8]) -> u64 {
    let k0 = u64::from_le_bytes(key[..8].try_into().unwrap_or_default());
    let k1 = u64::from_le_bytes(key[8..].try_into().unwrap_or_default());
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    fn round(v: &mut [u64; 4]) {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let m = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    }
    let mut last = [0u8; 8];
    let rest = chunks.remainder();
    last[..rest.len()].copy_from_slice(rest);
    last[7] = data.len() as u8;
    let m = u64::from_le_bytes(last);
    v[3] ^= m;
    round(&mut v);
    round(&mut v);
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(detect: fn(&[u8], &mut Vec<Range<usize>>), text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        detect(text.as_bytes(), &mut out);
        out.into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn siphash_matches_the_reference_vector() {
        let key: [u8; 16] = std::array::from_fn(|i| i as u8);
        let data: Vec<u8> = (0..15).collect();
        assert_eq!(siphash24(key, &data), 0xa129_ca61_49be_45e5);
        assert_eq!(siphash24(key, &[]), 0x726f_db47_dd0e_0e31);
    }

    #[test]
    fn detectors_find_what_they_name_and_leave_the_rest() {
        assert_eq!(
            found(emails, "(bob.s+x@mail.example.com)."),
            ["bob.s+x@mail.example.com"]
        );
        assert!(found(emails, "@home a@b user@localhost").is_empty());
        assert_eq!(
            found(urls, "see:https://x.io/a?b=1)."),
            ["https://x.io/a?b=1"]
        );
        assert_eq!(
            found(ipv4s, "at 10.0.0.255, not 256.1.1.1 or 1.2.3.4.5"),
            ["10.0.0.255"]
        );
        assert_eq!(found(ipv6s, "[2001:db8::1]:80"), ["2001:db8::1"]);
        assert!(found(ipv6s, "12:30 a::b::c std::fmt").is_empty());
        assert_eq!(
            found(cards, "4111 1111 1111 1111;"),
            ["4111 1111 1111 1111"]
        );
        assert!(found(cards, "4111 1111 1111 1112").is_empty());
        assert_eq!(found(phones, "call +1 555-010-0199."), ["+1 555-010-0199"]);
        assert!(found(phones, "id 5550100199 2024-01-02").is_empty());
    }

    #[test]
    fn a_space_between_digit_groups_does_not_end_a_segment() {
        let text = "pay 4111 1111 1111 1111 now";
        let mut seen = Vec::new();
        segments(text, |s, e| seen.push(&text[s..e]));
        assert_eq!(seen, ["pay", "4111 1111 1111 1111", "now"]);
        assert_eq!(finished("pay 4111 "), 4);
        assert_eq!(finished("pay 4111 x"), 9);
    }
}
