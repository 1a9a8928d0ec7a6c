//! Token usage: what one model call cost, and the facts of the last call.
//!
//! The bottom floor of the core: it names no other module.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// Tokens one model call used, as the provider reported them; also the running totals
/// of a turn in [`Env::usage`](crate::Env::usage()).
///
/// ```
/// use brute::Usage;
///
/// let mut total = Usage::default();
/// total += Usage::new(10, 2);
/// total += Usage::new(12, 3).with_cached(8).with_cache_write(2);
/// assert_eq!((total.input_tokens, total.output_tokens, total.cached_tokens), (22, 5, 8));
/// assert_eq!(total.cache_write_tokens, 2);
/// ```
///
/// `input_tokens` counts every prompt token, whether it was read from the cache
/// (`cached_tokens`), written to it (`cache_write_tokens`) or neither, for both
/// providers: the uncached rest is `input_tokens - cached_tokens - cache_write_tokens`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's prompt cache (Anthropic's
    /// `cache_read_input_tokens`, OpenAI's `prompt_tokens_details.cached_tokens`).
    pub cached_tokens: u64,
    /// Prompt tokens written to the provider's prompt cache (Anthropic's
    /// `cache_creation_input_tokens`; OpenAI caches by itself and reports none, so 0
    /// there unless the server says, as OpenRouter does with `cache_write_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Usage of `input_tokens` prompt and `output_tokens` completion tokens.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        }
    }

    /// The same usage with `tokens` of the prompt read from the provider's cache.
    pub fn with_cached(self, tokens: u64) -> Self {
        Usage {
            cached_tokens: tokens,
            ..self
        }
    }

    /// The same usage with `tokens` of the prompt written to the provider's cache.
    pub fn with_cache_write(self, tokens: u64) -> Self {
        Usage {
            cache_write_tokens: tokens,
            ..self
        }
    }

    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(other.cached_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
    }
}

/// What the provider counted on the last model call of a turn: the prompt was the
/// first `prompt_messages` messages, and the call used `usage`. The terminal records it
/// in [`Env::last_call`](crate::Env::last_call) (through
/// [`Env::record_call`](crate::Env::record_call)); compaction uses it to count in the
/// provider's units rather than estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LastCall {
    /// How many messages the prompt of the call had.
    pub prompt_messages: usize,
    /// What the call used.
    pub usage: Usage,
}
