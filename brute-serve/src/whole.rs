//! Whole numbers on the wire, as JSON Schema's `integer` has them and the OpenAPI
//! description states them: `20` and `20.0` (a number whose fraction is zero) alike,
//! from 0 to [`MAX`]; a fraction, a negative number, one past [`MAX`] or a string is
//! refused, naming the range. Every integer a request carries (a fork's `at`, a
//! rewind's `to`, retention's `max_age_secs`, `max_sessions` and `prune_to`, A2A's
//! `historyLength` in a body or a query) is read here, and its schema says
//! `minimum: 0, maximum: 9007199254740991`, so that the server takes exactly what the
//! description allows.

use std::fmt;

use serde::Deserializer;
use serde::de::{self, Visitor};

/// The largest whole number a request may carry: 2^53 - 1, the largest integer a
/// JSON number (an IEEE double) holds exactly in every client.
pub(crate) const MAX: u64 = 9_007_199_254_740_991;

/// A whole number of a JSON body (`deserialize_with`).
pub(crate) fn number<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    let n = deserializer.deserialize_any(Whole { strings: false })?;
    T::try_from(n).map_err(|_| de::Error::custom(out_of_range(&n)))
}

/// An optional whole number of a JSON body: `null` is none (`deserialize_with`, with
/// `#[serde(default)]` for an absent field).
pub(crate) fn optional<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    let n = deserializer.deserialize_option(Optional { strings: false })?;
    n.map(|n| T::try_from(n).map_err(|_| de::Error::custom(out_of_range(&n))))
        .transpose()
}

/// An optional whole number of a query string (`?historyLength=2` or `2.0`).
pub(crate) fn optional_query<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: TryFrom<u64>,
{
    let n = deserializer.deserialize_option(Optional { strings: true })?;
    n.map(|n| T::try_from(n).map_err(|_| de::Error::custom(out_of_range(&n))))
        .transpose()
}

fn out_of_range(shown: &dyn fmt::Display) -> String {
    format!("invalid number {shown}: expected a whole number from 0 to {MAX}")
}

/// Reads a whole number from a JSON number (or, in a query, its text).
struct Whole {
    strings: bool,
}

impl Whole {
    fn checked<E: de::Error>(n: u64) -> Result<u64, E> {
        if n <= MAX {
            Ok(n)
        } else {
            Err(E::custom(out_of_range(&n)))
        }
    }
}

impl<'de> Visitor<'de> for Whole {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a whole number from 0 to {MAX}")
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<u64, E> {
        Self::checked(n)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<u64, E> {
        u64::try_from(n)
            .map_err(|_| E::custom(out_of_range(&n)))
            .and_then(Self::checked)
    }

    fn visit_u128<E: de::Error>(self, n: u128) -> Result<u64, E> {
        u64::try_from(n)
            .map_err(|_| E::custom(out_of_range(&n)))
            .and_then(Self::checked)
    }

    fn visit_i128<E: de::Error>(self, n: i128) -> Result<u64, E> {
        u64::try_from(n)
            .map_err(|_| E::custom(out_of_range(&n)))
            .and_then(Self::checked)
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<u64, E> {
        // Every whole double up to MAX is exact, and MAX itself is one.
        if f.fract() == 0.0 && (0.0..=MAX as f64).contains(&f) {
            Ok(f as u64)
        } else {
            Err(E::custom(out_of_range(&f)))
        }
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<u64, E> {
        if !self.strings {
            return Err(E::invalid_type(de::Unexpected::Str(text), &self));
        }
        if let Ok(n) = text.parse::<u64>() {
            return Self::checked(n);
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => self.visit_f64(f),
            _ => Err(E::custom(out_of_range(&format_args!("`{text}`")))),
        }
    }
}

/// [`Whole`], or none for `null`.
struct Optional {
    strings: bool,
}

impl<'de> Visitor<'de> for Optional {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a whole number from 0 to {MAX}, or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer
            .deserialize_any(Whole {
                strings: self.strings,
            })
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Body {
        #[serde(deserialize_with = "super::number")]
        at: usize,
        #[serde(default, deserialize_with = "super::optional")]
        secs: Option<u64>,
    }

    fn body(json: &str) -> Result<Body, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn whole_numbers_are_taken_as_integers_or_whole_floats_up_to_max() {
        let ok = body(r#"{"at": 2.0, "secs": 100000.0}"#).expect("taken");
        assert_eq!((ok.at, ok.secs), (2, Some(100_000)));
        let ok = body(r#"{"at": 9007199254740991, "secs": null}"#).expect("taken");
        assert_eq!((ok.at, ok.secs), (9_007_199_254_740_991, None));
        assert_eq!(body(r#"{"at": 0}"#).expect("taken").secs, None);
        assert_eq!(body(r#"{"at": 1e3}"#).expect("taken").at, 1000);
    }

    #[test]
    fn fractions_negatives_strings_and_numbers_past_max_are_refused_naming_the_range() {
        for bad in [
            r#"{"at": 2.5}"#,
            r#"{"at": -1}"#,
            r#"{"at": -0.5}"#,
            r#"{"at": 9007199254740992}"#,
            r#"{"at": 123456789012345678901234567890}"#,
            r#"{"at": 1e300}"#,
            r#"{"at": 0, "secs": 18446744073709551615}"#,
        ] {
            let error = body(bad).expect_err("refused");
            assert!(
                error.contains("from 0 to 9007199254740991"),
                "{bad}: {error}"
            );
        }
        let error = body(r#"{"at": "2"}"#).expect_err("refused");
        assert!(error.contains("invalid type: string"), "{error}");
    }
}
