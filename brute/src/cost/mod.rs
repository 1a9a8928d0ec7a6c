//! Money: what model calls cost, in exact decimal arithmetic.
//!
//! - [`Cost`]: an amount of US dollars, counted in whole pico-dollars (10⁻¹² USD) in
//!   a `u64`, so sums never drift the way `f64` sums do; it shows as `$0.0123`.
//! - [`Price`]: what one model charges per million tokens, for each kind of token
//!   [`Usage`] counts (input, output, cached input, cache write).
//! - [`Prices`]: a table of prices by model name, shipped with the providers' published
//!   prices ([`Prices::published`]) and overridable ([`Prices::with`]). A model the
//!   table does not know has no cost (`None`), never a made-up zero.
//! - [`Spend`]: tokens and money summed over calls, what a session store keeps as the
//!   session's running total.
//!
//! The terminal of every agent prices each call by its model's
//! [`name`](crate::Model::name) with the [`Prices`] in the env's extensions, or with
//! [`Prices::published`] when there are none; [`Agent::prices`](crate::Agent::prices)
//! puts a table of your own in every turn's env.
//!
//! ```
//! use brute::Usage;
//! use brute::cost::{Cost, Price, Prices};
//!
//! let usage = Usage::new(12_000, 800).with_cached(10_000);
//! // gpt-4o-mini: $0.15 input, $0.075 cached input, $0.60 output per million tokens.
//! assert_eq!(usage.cost("gpt-4o-mini").map(|c| c.to_string()).as_deref(), Some("$0.0015"));
//! assert_eq!(usage.cost("gpt-4o-mini"), Some(Cost::from_micros(1_530)));
//! assert_eq!(usage.cost("my-local-model"), None);
//!
//! let mine = Price::per_million("0.50".parse()?, "1.50".parse()?);
//! let prices = Prices::published().with("my-local-model", mine);
//! assert_eq!(prices.cost("my-local-model", &usage), Some(Cost::from_micros(7_200)));
//! # Ok::<(), brute::cost::CostError>(())
//! ```
//!
//! The bottom floor of the core: it names only [`usage`](crate::Usage).

use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Add, AddAssign};
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::usage::Usage;

/// Pico-dollars in one dollar.
const PER_DOLLAR: u64 = 1_000_000_000_000;
/// Pico-dollars in one micro-dollar.
const PER_MICRO: u64 = 1_000_000;

/// An amount of US dollars, exact to the pico-dollar (10⁻¹² USD): the cost of a model
/// call, a turn or a session. Sums saturate at about 18 million dollars rather than
/// wrap.
///
/// It shows with four decimals (`$0.0123`, rounded half up) unless a precision is
/// given (`{:.6}` shows `$0.012345`); it parses from a decimal number of dollars with
/// up to twelve decimals, with or without the `$`.
///
/// ```
/// use brute::cost::Cost;
///
/// let cost: Cost = "$0.0123".parse()?;
/// assert_eq!(cost, Cost::from_micros(12_300));
/// assert_eq!(cost.to_string(), "$0.0123");
/// assert_eq!(format!("{:.6}", Cost::from_picos(12_345_678)), "$0.000012");
/// assert_eq!((cost + cost).to_string(), "$0.0246");
/// # Ok::<(), brute::cost::CostError>(())
/// ```
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Cost(u64);

impl Cost {
    /// Nothing.
    pub const ZERO: Cost = Cost(0);

    /// `picos` pico-dollars (10⁻¹² USD).
    pub const fn from_picos(picos: u64) -> Cost {
        Cost(picos)
    }

    /// `micros` micro-dollars (10⁻⁶ USD).
    pub const fn from_micros(micros: u64) -> Cost {
        Cost(micros.saturating_mul(PER_MICRO))
    }

    /// `cents` hundredths of a dollar.
    pub const fn from_cents(cents: u64) -> Cost {
        Cost(cents.saturating_mul(PER_DOLLAR / 100))
    }

    /// The amount in pico-dollars.
    pub const fn picos(self) -> u64 {
        self.0
    }

    /// The amount in micro-dollars, rounded down.
    pub const fn micros(self) -> u64 {
        self.0 / PER_MICRO
    }

    /// The sum, saturating.
    pub const fn saturating_add(self, other: Cost) -> Cost {
        Cost(self.0.saturating_add(other.0))
    }
}

impl Add for Cost {
    type Output = Cost;
    fn add(self, other: Cost) -> Cost {
        self.saturating_add(other)
    }
}

impl AddAssign for Cost {
    fn add_assign(&mut self, other: Cost) {
        *self = self.saturating_add(other);
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let places = f.precision().unwrap_or(4).min(12) as u32;
        // Rounded half up to `places` decimals, in integers.
        let unit = 10u64.pow(12 - places);
        let rounded = (self.0 / unit).saturating_add(u64::from(self.0 % unit >= unit.div_ceil(2)));
        let scale = 10u64.pow(places);
        let (dollars, fraction) = (rounded / scale, rounded % scale);
        if places == 0 {
            write!(f, "${dollars}")
        } else {
            write!(f, "${dollars}.{fraction:0width$}", width = places as usize)
        }
    }
}

/// Why a text is not an amount of dollars ([`Cost`]'s `FromStr`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CostError {
    /// The text is not a decimal number of dollars with at most twelve decimals.
    #[error(
        "`{text}` is not an amount of dollars: write a decimal number such as `0.15` or `$2.50`, with at most 12 decimals"
    )]
    NotAnAmount {
        /// The text given.
        text: String,
    },
}

impl FromStr for Cost {
    type Err = CostError;

    fn from_str(text: &str) -> Result<Cost, CostError> {
        let bad = || CostError::NotAnAmount {
            text: text.to_string(),
        };
        let digits = text.trim();
        let digits = digits.strip_prefix('$').unwrap_or(digits);
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && fraction.is_empty())
            || fraction.len() > 12
            || !all_digits(whole)
            || !all_digits(fraction)
        {
            return Err(bad());
        }
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| bad())?
        };
        let fraction: u64 = if fraction.is_empty() {
            0
        } else {
            let padded = format!("{fraction:0<12}");
            padded.parse().map_err(|_| bad())?
        };
        whole
            .checked_mul(PER_DOLLAR)
            .and_then(|picos| picos.checked_add(fraction))
            .map(Cost)
            .ok_or_else(bad)
    }
}

/// What one model charges, in dollars per million tokens of each kind [`Usage`]
/// counts. A price without a cached-input or cache-write rate charges those tokens
/// at the input rate.
///
/// ```
/// use brute::Usage;
/// use brute::cost::{Cost, Price};
///
/// let price = Price::per_million(Cost::from_micros(3_000_000), Cost::from_micros(15_000_000))
///     .with_cached_input(Cost::from_micros(300_000))
///     .with_cache_write(Cost::from_micros(3_750_000));
/// // 1000 prompt tokens: 600 read from the cache, 200 written to it, 200 neither.
/// let usage = Usage::new(1_000, 100).with_cached(600).with_cache_write(200);
/// assert_eq!(usage.cost_at(&price), Cost::from_micros(600 + 180 + 750 + 1_500));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Price {
    /// Per million prompt tokens neither read from nor written to a cache.
    pub input: Cost,
    /// Per million completion tokens (reasoning tokens among them).
    pub output: Cost,
    /// Per million prompt tokens read from the provider's cache.
    pub cached_input: Cost,
    /// Per million prompt tokens written to the provider's cache.
    pub cache_write: Cost,
}

impl Price {
    /// `input` and `output` dollars per million tokens; cached and cache-write tokens
    /// at the input rate until set.
    pub const fn per_million(input: Cost, output: Cost) -> Price {
        Price {
            input,
            output,
            cached_input: input,
            cache_write: input,
        }
    }

    /// The same price with `cost` per million tokens read from the cache.
    pub const fn with_cached_input(self, cost: Cost) -> Price {
        Price {
            cached_input: cost,
            ..self
        }
    }

    /// The same price with `cost` per million tokens written to the cache.
    pub const fn with_cache_write(self, cost: Cost) -> Price {
        Price {
            cache_write: cost,
            ..self
        }
    }
}

/// `tokens` at `per_million` dollars per million tokens, in pico-dollars (exact: a
/// rate is a whole number of pico-dollars per million tokens, so at most the last
/// pico-dollar is rounded down).
fn at(tokens: u64, per_million: Cost) -> u128 {
    u128::from(tokens) * u128::from(per_million.0) / 1_000_000
}

impl Usage {
    /// What this usage costs at `price`: the uncached prompt tokens at the input
    /// rate, the cached ones at the cached-input rate, the ones written to the cache
    /// at the cache-write rate, the completion tokens at the output rate.
    pub fn cost_at(&self, price: &Price) -> Cost {
        let uncached = self
            .input_tokens
            .saturating_sub(self.cached_tokens)
            .saturating_sub(self.cache_write_tokens);
        let picos = at(uncached, price.input)
            + at(self.cached_tokens, price.cached_input)
            + at(self.cache_write_tokens, price.cache_write)
            + at(self.output_tokens, price.output);
        Cost(u64::try_from(picos).unwrap_or(u64::MAX))
    }

    /// What this usage costs on `model` at the providers' published prices
    /// ([`Prices::published`]); `None` for a model the table does not know.
    pub fn cost(&self, model: &str) -> Option<Cost> {
        published_price(model).map(|price| self.cost_at(&price))
    }
}

/// Prices by model name: the providers' published prices ([`Prices::published`]),
/// with your own added or replacing them ([`Prices::with`]), or none
/// ([`Prices::new`]). Cloning shares the table.
///
/// A name is found as written or, failing that, without a dated snapshot suffix
/// (`claude-sonnet-4-5-20250929` and `gpt-4o-mini-2024-07-18` are priced as
/// `claude-sonnet-4-5` and `gpt-4o-mini`); any other name is unknown.
///
/// ```
/// use brute::cost::{Cost, Price, Prices};
///
/// let prices = Prices::published()
///     .with("gpt-4o-mini", Price::per_million(Cost::from_cents(10), Cost::from_cents(40)));
/// assert_eq!(prices.get("gpt-4o-mini-2024-07-18").map(|p| p.input), Some(Cost::from_cents(10)));
/// assert!(prices.get("claude-sonnet-4-5").is_some());
/// assert!(Prices::new().get("claude-sonnet-4-5").is_none());
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prices(Arc<BTreeMap<String, Price>>);

/// The published price of `model` (as written, or without a dated suffix), read from
/// [`PUBLISHED_PRICES`] in place: no table is built and nothing is shared between
/// threads, so pricing a call at the published prices allocates nothing.
fn published_price(model: &str) -> Option<Price> {
    let find = |name: &str| {
        PUBLISHED_PRICES
            .iter()
            .find(|row| row.0 == name)
            .map(|&row| published_row(row))
    };
    as_named(model, find)
}

/// What `find` gives for `model` as written or, failing that, without its dated
/// snapshot suffix: the one naming rule of the published table and of [`Prices`].
fn as_named(model: &str, find: impl Fn(&str) -> Option<Price>) -> Option<Price> {
    find(model).or_else(|| find(undated(model)?))
}

/// One row of [`PUBLISHED_PRICES`] as a [`Price`].
fn published_row((_, input, output, cached, write): (&str, u64, u64, u64, u64)) -> Price {
    Price::per_million(Cost::from_micros(input), Cost::from_micros(output))
        .with_cached_input(Cost::from_micros(cached))
        .with_cache_write(Cost::from_micros(write))
}

/// The providers' published prices, in micro-dollars per million tokens: model,
/// input, output, cached input, cache write. Taken on 2026-12-01 from the providers'
/// pricing pages (OpenAI `platform.openai.com/docs/pricing`, Anthropic
/// `platform.claude.com/docs/en/about-claude/pricing`, Google
/// `ai.google.dev/gemini-api/docs/pricing`), standard tier, no batch discount.
///
/// OpenAI and Gemini charge nothing extra to write their caches: the cache-write rate
/// is the input rate. Anthropic's is its 5-minute cache write. Gemini 2.5 Pro's rate
/// is the one for prompts up to 200,000 tokens (longer prompts cost more there),
/// and Gemini's hourly cache storage is not a token price and is not counted.
const PUBLISHED_PRICES: &[(&str, u64, u64, u64, u64)] = &[
    // OpenAI
    ("gpt-4o-mini", 150_000, 600_000, 75_000, 150_000),
    ("gpt-4o", 2_500_000, 10_000_000, 1_250_000, 2_500_000),
    ("gpt-4.1", 2_000_000, 8_000_000, 500_000, 2_000_000),
    ("gpt-4.1-mini", 400_000, 1_600_000, 100_000, 400_000),
    ("gpt-5", 1_250_000, 10_000_000, 125_000, 1_250_000),
    ("gpt-5-mini", 250_000, 2_000_000, 25_000, 250_000),
    ("o3", 2_000_000, 8_000_000, 500_000, 2_000_000),
    // Anthropic
    (
        "claude-sonnet-4-5",
        3_000_000,
        15_000_000,
        300_000,
        3_750_000,
    ),
    (
        "claude-sonnet-4-0",
        3_000_000,
        15_000_000,
        300_000,
        3_750_000,
    ),
    ("claude-sonnet-4", 3_000_000, 15_000_000, 300_000, 3_750_000),
    ("claude-haiku-4-5", 1_000_000, 5_000_000, 100_000, 1_250_000),
    ("claude-opus-4-5", 5_000_000, 25_000_000, 500_000, 6_250_000),
    (
        "claude-opus-4-1",
        15_000_000,
        75_000_000,
        1_500_000,
        18_750_000,
    ),
    // Google
    ("gemini-2.5-flash", 300_000, 2_500_000, 30_000, 300_000),
    ("gemini-2.5-pro", 1_250_000, 10_000_000, 125_000, 1_250_000),
];

impl Prices {
    /// A table with no prices: every model is unknown until added with
    /// [`with`](Self::with).
    pub fn new() -> Prices {
        Prices::default()
    }

    /// The providers' published prices, taken on 2026-12-01 from the OpenAI,
    /// Anthropic and Google pricing pages (standard tier, no batch discount), for the
    /// models `from_spec` names and their neighbours:
    /// `gpt-4o-mini`, `gpt-4o`, `gpt-4.1`, `gpt-4.1-mini`, `gpt-5`, `gpt-5-mini`, `o3`,
    /// `claude-sonnet-4-5`, `claude-sonnet-4`, `claude-haiku-4-5`, `claude-opus-4-5`,
    /// `claude-opus-4-1`, `gemini-2.5-flash`, `gemini-2.5-pro`. Prices change: check
    /// them against your invoices, and replace any with [`with`](Self::with).
    pub fn published() -> Prices {
        let table = PUBLISHED_PRICES
            .iter()
            .map(|&row| (row.0.to_string(), published_row(row)))
            .collect();
        Prices(Arc::new(table))
    }

    /// The same table with `model` at `price`, added or replacing its price.
    pub fn with(mut self, model: impl Into<String>, price: Price) -> Prices {
        Arc::make_mut(&mut self.0).insert(model.into(), price);
        self
    }

    /// The same table without `model`: its calls have no cost.
    pub fn without(mut self, model: &str) -> Prices {
        Arc::make_mut(&mut self.0).remove(model);
        self
    }

    /// The price of `model`: as written, or without a dated snapshot suffix
    /// (`-20250929`, `-2024-07-18`).
    pub fn get(&self, model: &str) -> Option<Price> {
        as_named(model, |name| self.0.get(name).copied())
    }

    /// What `usage` costs on `model`; `None` when the table has no price for it.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<Cost> {
        self.get(model).map(|price| usage.cost_at(&price))
    }

    /// The models priced, sorted.
    pub fn models(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

/// `model` without a trailing date (`-YYYYMMDD` or `-YYYY-MM-DD`), if it has one.
fn undated(model: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (head, last) = model.rsplit_once('-')?;
    if last.len() == 8 && digits(last) {
        return Some(head);
    }
    let (head, month) = head.rsplit_once('-')?;
    let (head, year) = head.rsplit_once('-')?;
    (year.len() == 4 && month.len() == 2 && last.len() == 2)
        .then_some(())
        .filter(|()| digits(year) && digits(month) && digits(last))
        .map(|()| head)
}

/// Tokens and money summed over model calls: a turn's ([`Env::spend`](crate::Env::spend))
/// or a session's running total, which every session store keeps with the session.
///
/// `cost` sums the calls that had a price; `unpriced_calls` counts the calls that
/// reported usage on a model without one, whose tokens are in `usage` but whose
/// money is not in `cost`. [`Spend::cost`] is `None` while there is any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Spend {
    /// The tokens of every call that reported usage.
    pub usage: Usage,
    /// The money of the calls that had a price.
    pub priced: Cost,
    /// Calls that reported usage on a model without a price.
    #[serde(default)]
    pub unpriced_calls: u64,
    /// Calls that reported usage, priced or not.
    #[serde(default)]
    pub calls: u64,
}

impl Spend {
    /// Counts one call that used `usage` and cost `cost` (`None`: its model has no
    /// price).
    pub fn add_call(&mut self, usage: Usage, cost: Option<Cost>) {
        self.usage += usage;
        self.calls = self.calls.saturating_add(1);
        match cost {
            Some(cost) => self.priced += cost,
            None => self.unpriced_calls = self.unpriced_calls.saturating_add(1),
        }
    }

    /// The money spent, when every call counted had a price.
    pub fn cost(&self) -> Option<Cost> {
        (self.unpriced_calls == 0).then_some(self.priced)
    }
}

impl AddAssign for Spend {
    fn add_assign(&mut self, other: Spend) {
        self.usage += other.usage;
        self.priced += other.priced;
        self.unpriced_calls = self.unpriced_calls.saturating_add(other.unpriced_calls);
        self.calls = self.calls.saturating_add(other.calls);
    }
}

impl Add for Spend {
    type Output = Spend;
    fn add(mut self, other: Spend) -> Spend {
        self += other;
        self
    }
}

/// What the session had spent before the turn began, as its store held it: the
/// session-log layer (`SessionLog`) leaves it in the env's extensions, so that a layer
/// (the `Budget` middleware) knows the session's total, `SessionSpend.0 +
/// env.spend()`, without asking the store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionSpend(pub Spend);

#[cfg(test)]
mod tests;
