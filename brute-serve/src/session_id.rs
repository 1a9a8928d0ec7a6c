//! The rule for session ids in a URL: checked before any store sees the id, so a bad
//! one is a 400 that states the rule rather than a store's failure. (It imports
//! nothing of the crate: `error` uses it to show ids.)

/// The longest session id, in bytes (a file name of a directory store must fit).
pub(crate) const MAX_LEN: usize = 128;

/// The rule, as the error of a bad id states it.
pub(crate) const RULE: &str = "a session id is 1 to 128 bytes, does not start with `.`, and has no `/`, `\\` or control character";

/// The rule as a JSON Schema `pattern` (with `minLength` 1 and `maxLength` 128): what
/// the description promises of the `{id}` of the session routes. `maxLength` counts
/// characters where [`MAX_LEN`] counts bytes: an id of characters beyond ASCII can
/// break the rule with fewer than 128 of them.
#[cfg(test)]
pub(crate) const PATTERN: &str = r"^[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*$";

/// The `{id}` of the session routes, as the OpenAPI description states it.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // Only its description is read: the handlers take `Path<String>`.
pub(crate) struct SessionPath {
    /// The session: 1 to 128 bytes of UTF-8, not starting with `.`, without `/`, `\`
    /// or a control character.
    #[param(
        min_length = 1,
        max_length = 128,
        pattern = r"^[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*$"
    )]
    id: String,
}

/// Why `id` breaks [`RULE`], the rule included: the message of the handlers' 400.
pub(crate) fn check(id: &str) -> Result<(), String> {
    let reason = if id.is_empty() {
        "it is empty"
    } else if id.len() > MAX_LEN {
        "it is too long"
    } else if id.starts_with('.') {
        "it starts with `.`"
    } else if id.contains(['/', '\\']) {
        "it contains a path separator"
    } else if id.chars().any(char::is_control) {
        "it contains a control character"
    } else {
        return Ok(());
    };
    Err(format!("session id `{}`: {reason}; {RULE}", shown(id)))
}

/// `id` as an error message shows it: control characters escaped, cut after 40
/// characters.
pub(crate) fn shown(id: &str) -> String {
    let mut out: String = id.chars().take(40).flat_map(char::escape_default).collect();
    if id.chars().nth(40).is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_name_a_path_or_hide_a_file_are_refused() {
        for bad in [
            "",
            "..",
            "../x",
            ".hidden",
            "a\\b",
            "a\0b",
            "a/b",
            &"x".repeat(129),
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
        for good in [
            "alice",
            "web-1a2b",
            "a.b",
            "chatcmpl-1-2-3",
            "Ünïcode id",
            &"x".repeat(128),
        ] {
            assert!(check(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn a_long_id_is_cut_in_messages() {
        let message = check(&"x".repeat(300)).expect_err("300 bytes is too long");
        assert!(message.len() < 300, "{message}");
        assert!(message.contains("1 to 128 bytes"), "{message}");
    }
}
