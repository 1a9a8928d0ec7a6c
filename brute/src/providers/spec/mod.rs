//! A model from one string: `openai:gpt-4o-mini`, `anthropic:claude-sonnet-4-5`,
//! `responses:gpt-5`, `gemini:gemini-2.5-flash`, `ollama:qwen3:4b`, or the API root of any OpenAI-compatible server
//! (`http://localhost:8000/v1#my-model`), and the same string read from `BRUTE_MODEL`.
//!
//! The table of specs is on [`from_spec`]; the environment's part on [`from_env`].
//!
//! A key is never part of a spec: specs are printed and logged, keys are not. A
//! compatible server gets `BRUTE_API_KEY`, never `OPENAI_API_KEY`, so that OpenAI's key
//! is not sent to another host by accident.

use std::fmt;

use crate::env::Env;
use crate::error::Error;
use crate::model::{Completion, Model};
use crate::scripted::ScriptedModel;

#[cfg(feature = "anthropic")]
use super::Anthropic;
#[cfg(any(
    feature = "openai",
    feature = "anthropic",
    feature = "responses",
    feature = "gemini"
))]
use super::ApiKey;
#[cfg(feature = "gemini")]
use super::Gemini;
#[cfg(feature = "openai")]
use super::OpenAi;
#[cfg(feature = "responses")]
use super::Responses;

/// The variable [`from_env`] reads a spec from.
pub const MODEL_VAR: &str = "BRUTE_MODEL";
/// The key [`from_spec`] gives an OpenAI-compatible server named by its address.
pub const API_KEY_VAR: &str = "BRUTE_API_KEY";
/// The model [`from_env`] picks when only `OPENAI_API_KEY` is set.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
/// The model [`from_env`] picks when only `ANTHROPIC_API_KEY` is set.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The model [`from_env`] picks when only `GEMINI_API_KEY` is set.
pub const DEFAULT_GEMINI_MODEL: &str = "gemini-2.5-flash";

/// A model spec, parsed: which provider and which model, before any key is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelSpec {
    /// `openai:NAME`.
    OpenAi {
        /// The model's name (`gpt-4o-mini`).
        model: String,
    },
    /// `anthropic:NAME`.
    Anthropic {
        /// The model's name (`claude-sonnet-4-5`).
        model: String,
    },
    /// `responses:NAME` or `openai-responses:NAME`: OpenAI's Responses API.
    Responses {
        /// The model's name (`gpt-5`).
        model: String,
    },
    /// `gemini:NAME`: Google's Gemini API.
    Gemini {
        /// The model's name (`gemini-2.5-flash`).
        model: String,
    },
    /// `ollama:NAME` (the name may hold colons: `qwen3:4b`).
    Ollama {
        /// The model's name.
        model: String,
    },
    /// `http(s)://ROOT#NAME`: an OpenAI-compatible server.
    Compatible {
        /// The API root, the part before `/chat/completions`.
        base_url: String,
        /// The model's name, after `#` (`default` when there is none: servers with
        /// one model, like llama.cpp's, ignore it).
        model: String,
    },
    /// `scripted`: no real model.
    Scripted,
}

/// Why a spec does not give a model. Each message quotes the spec.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The spec names no provider brute knows.
    #[error(
        "model spec `{spec}`: unknown provider `{provider}`; expected `openai:NAME`, `anthropic:NAME`, `responses:NAME`, `gemini:NAME`, `ollama:NAME`, an `http(s)://` API root (`http://host:8000/v1#NAME`) or `scripted`"
    )]
    UnknownProvider {
        /// The spec as given.
        spec: String,
        /// What stood before the first `:`.
        provider: String,
    },
    /// The spec has a provider but no model name (`openai:`).
    #[error("model spec `{spec}`: no model name after `{provider}:` (e.g. `{provider}:{example}`)")]
    MissingModel {
        /// The spec as given.
        spec: String,
        /// The provider it names.
        provider: &'static str,
        /// A model name that would do.
        example: &'static str,
    },
    /// The provider needs a key and its variable is unset or empty.
    #[error("model spec `{spec}`: the environment variable `{var}` holding the API key is not set")]
    MissingKey {
        /// The spec as given.
        spec: String,
        /// The variable that should hold the key.
        var: &'static str,
    },
    /// The spec names a provider whose cargo feature of `brute` is off.
    #[error("model spec `{spec}`: brute was built without the `{feature}` feature")]
    FeatureDisabled {
        /// The spec as given.
        spec: String,
        /// The feature to enable.
        feature: &'static str,
    },
}

impl ModelSpec {
    /// Parses a spec (surrounding white space ignored). Reads no environment.
    ///
    /// ```
    /// use brute::providers::ModelSpec;
    ///
    /// assert_eq!(
    ///     ModelSpec::parse("ollama:qwen3:4b")?,
    ///     ModelSpec::Ollama { model: "qwen3:4b".into() }
    /// );
    /// assert_eq!(
    ///     ModelSpec::parse("http://localhost:8000/v1#qwen")?,
    ///     ModelSpec::Compatible { base_url: "http://localhost:8000/v1".into(), model: "qwen".into() }
    /// );
    /// assert!(ModelSpec::parse("gpt-4o").is_err());
    /// # Ok::<(), brute::providers::SpecError>(())
    /// ```
    pub fn parse(spec: &str) -> Result<ModelSpec, SpecError> {
        let text = spec.trim();
        if text.eq_ignore_ascii_case("scripted") {
            return Ok(ModelSpec::Scripted);
        }
        if text.starts_with("http://") || text.starts_with("https://") {
            let (base, model) = match text.split_once('#') {
                Some((base, model)) if !model.trim().is_empty() => (base, model.trim()),
                Some((base, _)) => (base, "default"),
                None => (text, "default"),
            };
            return Ok(ModelSpec::Compatible {
                base_url: base.trim_end_matches('/').to_owned(),
                model: model.to_owned(),
            });
        }
        let (provider, model) = text.split_once(':').unwrap_or((text, ""));
        let model = model.trim();
        let (name, example): (&'static str, &'static str) =
            match provider.trim().to_ascii_lowercase().as_str() {
                "openai" => ("openai", DEFAULT_OPENAI_MODEL),
                "anthropic" => ("anthropic", DEFAULT_ANTHROPIC_MODEL),
                "responses" | "openai-responses" => ("responses", "gpt-5"),
                "gemini" => ("gemini", DEFAULT_GEMINI_MODEL),
                "ollama" => ("ollama", "qwen3:4b"),
                _ => {
                    return Err(SpecError::UnknownProvider {
                        spec: spec.to_owned(),
                        provider: provider.to_owned(),
                    });
                }
            };
        if model.is_empty() {
            return Err(SpecError::MissingModel {
                spec: spec.to_owned(),
                provider: name,
                example,
            });
        }
        let model = model.to_owned();
        Ok(match name {
            "openai" => ModelSpec::OpenAi { model },
            "anthropic" => ModelSpec::Anthropic { model },
            "responses" => ModelSpec::Responses { model },
            "gemini" => ModelSpec::Gemini { model },
            _ => ModelSpec::Ollama { model },
        })
    }
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelSpec::OpenAi { model } => write!(f, "openai:{model}"),
            ModelSpec::Anthropic { model } => write!(f, "anthropic:{model}"),
            ModelSpec::Responses { model } => write!(f, "responses:{model}"),
            ModelSpec::Gemini { model } => write!(f, "gemini:{model}"),
            ModelSpec::Ollama { model } => write!(f, "ollama:{model}"),
            ModelSpec::Compatible { base_url, model } => write!(f, "{base_url}#{model}"),
            ModelSpec::Scripted => f.write_str("scripted"),
        }
    }
}

/// One of the models a spec can name, or a scripted one: a single type for a program
/// that lets its user choose. Implements [`Model`] by delegating to the one it holds.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AnyModel {
    /// An OpenAI-compatible server (OpenAI, Ollama, vLLM, llama.cpp, OpenRouter).
    #[cfg(feature = "openai")]
    OpenAi(OpenAi),
    /// The Anthropic Messages API.
    #[cfg(feature = "anthropic")]
    Anthropic(Anthropic),
    /// The OpenAI Responses API (OpenAI, Open Responses servers).
    #[cfg(feature = "responses")]
    Responses(Responses),
    /// Google's Gemini API.
    #[cfg(feature = "gemini")]
    Gemini(Gemini),
    /// A scripted model, for offline runs.
    Scripted(ScriptedModel),
}

impl AnyModel {
    /// Asks for streamed replies (text arrives as
    /// [`Event::ContentDelta`](crate::Event::ContentDelta)); a scripted model does not
    /// stream and ignores this.
    pub fn stream(self, stream: bool) -> Self {
        match self {
            #[cfg(feature = "openai")]
            AnyModel::OpenAi(model) => AnyModel::OpenAi(model.stream(stream)),
            #[cfg(feature = "anthropic")]
            AnyModel::Anthropic(model) => AnyModel::Anthropic(model.stream(stream)),
            #[cfg(feature = "responses")]
            AnyModel::Responses(model) => AnyModel::Responses(model.stream(stream)),
            #[cfg(feature = "gemini")]
            AnyModel::Gemini(model) => AnyModel::Gemini(model.stream(stream)),
            AnyModel::Scripted(model) => {
                let _ = stream;
                AnyModel::Scripted(model)
            }
        }
    }

    /// Whether this is the scripted fallback rather than a real model.
    pub fn is_scripted(&self) -> bool {
        matches!(self, AnyModel::Scripted(_))
    }
}

impl From<ScriptedModel> for AnyModel {
    fn from(model: ScriptedModel) -> Self {
        AnyModel::Scripted(model)
    }
}

#[diagnostic::do_not_recommend]
impl Model for AnyModel {
    async fn complete(&self, env: &Env) -> Result<Completion, Error> {
        match self {
            #[cfg(feature = "openai")]
            AnyModel::OpenAi(model) => model.complete(env).await,
            #[cfg(feature = "anthropic")]
            AnyModel::Anthropic(model) => model.complete(env).await,
            #[cfg(feature = "responses")]
            AnyModel::Responses(model) => model.complete(env).await,
            #[cfg(feature = "gemini")]
            AnyModel::Gemini(model) => model.complete(env).await,
            AnyModel::Scripted(model) => model.complete(env).await,
        }
    }

    fn name(&self) -> &str {
        match self {
            #[cfg(feature = "openai")]
            AnyModel::OpenAi(model) => model.name(),
            #[cfg(feature = "anthropic")]
            AnyModel::Anthropic(model) => model.name(),
            #[cfg(feature = "responses")]
            AnyModel::Responses(model) => model.name(),
            #[cfg(feature = "gemini")]
            AnyModel::Gemini(model) => model.name(),
            AnyModel::Scripted(model) => model.name(),
        }
    }

    fn secrets(&self) -> Vec<&str> {
        match self {
            #[cfg(feature = "openai")]
            AnyModel::OpenAi(model) => model.secrets(),
            #[cfg(feature = "anthropic")]
            AnyModel::Anthropic(model) => model.secrets(),
            #[cfg(feature = "responses")]
            AnyModel::Responses(model) => model.secrets(),
            #[cfg(feature = "gemini")]
            AnyModel::Gemini(model) => model.secrets(),
            AnyModel::Scripted(model) => model.secrets(),
        }
    }
}

/// The model a spec names, with its key and address from the environment.
/// `scripted` is not a model here: it is an error ([`SpecError::UnknownProvider`]);
/// [`from_env`] turns it into `None`.
///
/// | spec | model | key | address |
/// |---|---|---|---|
/// | `openai:NAME` | [`OpenAi`] | `OPENAI_API_KEY` (required) | `OPENAI_BASE_URL`, else OpenAI |
/// | `anthropic:NAME` | [`Anthropic`] | `ANTHROPIC_API_KEY` (required) | `ANTHROPIC_BASE_URL`, else Anthropic |
/// | `responses:NAME`, `openai-responses:NAME` | [`Responses`] | `OPENAI_API_KEY` (required) | `OPENAI_BASE_URL`, else OpenAI |
/// | `gemini:NAME` | [`Gemini`] | `GEMINI_API_KEY`, else `GOOGLE_API_KEY` (required) | `GEMINI_BASE_URL`, else Google |
/// | `ollama:NAME` | [`OpenAi`] on Ollama | none | `OLLAMA_HOST`, else `localhost:11434` |
/// | `http(s)://ROOT#NAME` | [`OpenAi`] on that server | `BRUTE_API_KEY` if set | `ROOT` (the part before `/chat/completions`) |
/// | `scripted` | none: [`from_env`] answers `None` | | |
///
/// [`from_env`] reads `BRUTE_MODEL`; when it is unset it picks the first provider whose
/// key is set (`OPENAI_API_KEY`: `openai:gpt-4o-mini`, `ANTHROPIC_API_KEY`:
/// `anthropic:claude-sonnet-4-5`, `GEMINI_API_KEY`: `gemini:gemini-2.5-flash`), and answers `None` when there is none, so a program
/// can fall back to a [`ScriptedModel`](super::ScriptedModel) and say so:
///
/// ```
/// use brute::providers::{self, AnyModel, ScriptedModel};
/// use brute::Message;
///
/// # fn main() -> Result<(), brute::providers::SpecError> {
/// let model = match providers::from_env()? {
///     Some(model) => model,
///     None => {
///         println!("no BRUTE_MODEL and no API key: using a scripted model");
///         AnyModel::from(ScriptedModel::new([Message::assistant("Hello.")]))
///     }
/// };
/// println!("model: {}", brute::Model::name(&model));
/// # Ok(()) }
/// ```
///
/// A key is never part of a spec: specs are printed and logged, keys are not. A
/// compatible server gets `BRUTE_API_KEY`, never `OPENAI_API_KEY`, so that OpenAI's key
/// is not sent to another host by accident.
///
/// ```
/// let model = brute::providers::from_spec("ollama:qwen3:4b")?;
/// assert_eq!(brute::Model::name(&model), "qwen3:4b");
/// # Ok::<(), brute::providers::SpecError>(())
/// ```
pub fn from_spec(spec: &str) -> Result<AnyModel, SpecError> {
    build(spec, &ModelSpec::parse(spec)?, &process_var)
}

/// The model `BRUTE_MODEL` names; when it is unset, the first provider whose key is
/// set (`OPENAI_API_KEY`, then `ANTHROPIC_API_KEY`, then `GEMINI_API_KEY`) with its
/// default model; `None`
/// when there is none, or when `BRUTE_MODEL` is `scripted`.
pub fn from_env() -> Result<Option<AnyModel>, SpecError> {
    from_vars(&process_var)
}

fn process_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// [`from_env`] over any source of variables (the tests give a map).
fn from_vars(var: &dyn Fn(&str) -> Option<String>) -> Result<Option<AnyModel>, SpecError> {
    let spec = match var(MODEL_VAR) {
        Some(spec) => spec,
        None if var("OPENAI_API_KEY").is_some() => format!("openai:{DEFAULT_OPENAI_MODEL}"),
        None if var("ANTHROPIC_API_KEY").is_some() => {
            format!("anthropic:{DEFAULT_ANTHROPIC_MODEL}")
        }
        None if var("GEMINI_API_KEY").is_some() => format!("gemini:{DEFAULT_GEMINI_MODEL}"),
        None => return Ok(None),
    };
    match ModelSpec::parse(&spec)? {
        ModelSpec::Scripted => Ok(None),
        parsed => build(&spec, &parsed, var).map(Some),
    }
}

/// The key in `var_name`, or the error naming it.
#[cfg(any(
    feature = "openai",
    feature = "anthropic",
    feature = "responses",
    feature = "gemini"
))]
fn required_key(
    spec: &str,
    var_name: &'static str,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<ApiKey, SpecError> {
    var(var_name)
        .map(|key| ApiKey::new(key.trim()))
        .ok_or_else(|| SpecError::MissingKey {
            spec: spec.to_owned(),
            var: var_name,
        })
}

fn build(
    spec: &str,
    parsed: &ModelSpec,
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<AnyModel, SpecError> {
    match parsed {
        #[cfg(feature = "openai")]
        ModelSpec::OpenAi { model } => {
            let key = required_key(spec, "OPENAI_API_KEY", var)?;
            let base = var("OPENAI_BASE_URL");
            let base = base.as_deref().unwrap_or(super::openai::OPENAI_BASE_URL);
            Ok(AnyModel::OpenAi(
                OpenAi::compatible(base.trim(), model.as_str()).key(Some(key)),
            ))
        }
        #[cfg(feature = "openai")]
        ModelSpec::Ollama { model } => {
            let host = var("OLLAMA_HOST");
            Ok(AnyModel::OpenAi(OpenAi::compatible(
                super::openai::ollama_base(host.as_deref()),
                model.as_str(),
            )))
        }
        #[cfg(feature = "openai")]
        ModelSpec::Compatible { base_url, model } => {
            let key = var(API_KEY_VAR).map(|key| ApiKey::new(key.trim()));
            Ok(AnyModel::OpenAi(
                OpenAi::compatible(base_url, model.as_str()).key(key),
            ))
        }
        #[cfg(not(feature = "openai"))]
        ModelSpec::OpenAi { .. } | ModelSpec::Ollama { .. } | ModelSpec::Compatible { .. } => {
            let _ = var;
            Err(SpecError::FeatureDisabled {
                spec: spec.to_owned(),
                feature: "openai",
            })
        }
        #[cfg(feature = "anthropic")]
        ModelSpec::Anthropic { model } => {
            let key = required_key(spec, "ANTHROPIC_API_KEY", var)?;
            let base = var("ANTHROPIC_BASE_URL");
            let base = base
                .as_deref()
                .unwrap_or(super::anthropic::ANTHROPIC_BASE_URL);
            let codec = super::anthropic::Codec::new(model.as_str());
            Ok(AnyModel::Anthropic(
                Anthropic::from_wire(codec, base.trim()).key(Some(key)),
            ))
        }
        #[cfg(not(feature = "anthropic"))]
        ModelSpec::Anthropic { .. } => Err(SpecError::FeatureDisabled {
            spec: spec.to_owned(),
            feature: "anthropic",
        }),
        #[cfg(feature = "responses")]
        ModelSpec::Responses { model } => {
            let key = required_key(spec, "OPENAI_API_KEY", var)?;
            let base = var("OPENAI_BASE_URL");
            let base = base.as_deref().unwrap_or(super::openai::OPENAI_BASE_URL);
            Ok(AnyModel::Responses(
                Responses::compatible(base.trim(), model.as_str()).key(Some(key)),
            ))
        }
        #[cfg(not(feature = "responses"))]
        ModelSpec::Responses { .. } => Err(SpecError::FeatureDisabled {
            spec: spec.to_owned(),
            feature: "responses",
        }),
        #[cfg(feature = "gemini")]
        ModelSpec::Gemini { model } => {
            use super::gemini::{GEMINI_BASE_URL, GEMINI_KEY_VAR, GOOGLE_KEY_VAR};
            let key = match var(GOOGLE_KEY_VAR) {
                Some(google) if var(GEMINI_KEY_VAR).is_none() => ApiKey::new(google.trim()),
                _ => required_key(spec, GEMINI_KEY_VAR, var)?,
            };
            let base = var("GEMINI_BASE_URL");
            let base = base.as_deref().unwrap_or(GEMINI_BASE_URL);
            let codec = super::gemini::Codec::new(model.as_str());
            Ok(AnyModel::Gemini(
                Gemini::from_wire(codec, base.trim()).key(Some(key)),
            ))
        }
        #[cfg(not(feature = "gemini"))]
        ModelSpec::Gemini { .. } => Err(SpecError::FeatureDisabled {
            spec: spec.to_owned(),
            feature: "gemini",
        }),
        ModelSpec::Scripted => Err(SpecError::UnknownProvider {
            spec: spec.to_owned(),
            provider: "scripted (not a model: use a ScriptedModel)".to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests;
