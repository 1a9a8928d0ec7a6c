//! Guides: how to do the common things, each with examples that are compiled and run
//! as doc tests. Start with [`getting_started`].
//!
//! Built with the features `tools`, `openai` and `anthropic`, which the examples use.

#[doc = include_str!("../guides/getting_started.md")]
pub mod getting_started {}

#[doc = include_str!("../guides/writing_middleware.md")]
pub mod writing_middleware {}

#[doc = include_str!("../guides/writing_tools.md")]
pub mod writing_tools {}

#[doc = include_str!("../guides/providers.md")]
pub mod providers {}

#[doc = include_str!("../guides/sessions_and_compaction.md")]
pub mod sessions_and_compaction {}

#[doc = include_str!("../guides/testing.md")]
pub mod testing {}
