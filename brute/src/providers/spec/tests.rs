//! The spec table's tests: parsing, display, keys and the environment.

#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;

#[cfg(all(feature = "openai", feature = "anthropic"))]
fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: std::collections::HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

#[test]
fn parses_every_form() {
    let cases = [
        (
            "openai:gpt-4o-mini",
            ModelSpec::OpenAi {
                model: "gpt-4o-mini".into(),
            },
        ),
        (
            " anthropic:claude-sonnet-4-5 ",
            ModelSpec::Anthropic {
                model: "claude-sonnet-4-5".into(),
            },
        ),
        (
            "ollama:qwen3:4b",
            ModelSpec::Ollama {
                model: "qwen3:4b".into(),
            },
        ),
        ("OpenAI:o3", ModelSpec::OpenAi { model: "o3".into() }),
        (
            "openai-responses:gpt-5",
            ModelSpec::Responses {
                model: "gpt-5".into(),
            },
        ),
        (
            "Responses:gpt-5-mini",
            ModelSpec::Responses {
                model: "gpt-5-mini".into(),
            },
        ),
        (
            "gemini:gemini-2.5-flash",
            ModelSpec::Gemini {
                model: "gemini-2.5-flash".into(),
            },
        ),
        (
            "http://127.0.0.1:8000/v1/#served",
            ModelSpec::Compatible {
                base_url: "http://127.0.0.1:8000/v1".into(),
                model: "served".into(),
            },
        ),
        (
            "https://openrouter.ai/api/v1",
            ModelSpec::Compatible {
                base_url: "https://openrouter.ai/api/v1".into(),
                model: "default".into(),
            },
        ),
        ("scripted", ModelSpec::Scripted),
    ];
    for (spec, expected) in cases {
        assert_eq!(ModelSpec::parse(spec).expect(spec), expected, "{spec}");
    }
}

#[test]
fn display_round_trips() {
    for spec in [
        "openai:gpt-4o",
        "anthropic:claude-x",
        "ollama:qwen3:4b",
        "responses:gpt-5",
        "gemini:gemini-2.5-pro",
        "http://h:1/v1#m",
        "scripted",
    ] {
        let parsed = ModelSpec::parse(spec).expect(spec);
        assert_eq!(ModelSpec::parse(&parsed.to_string()).expect(spec), parsed);
    }
}

#[test]
fn bad_specs_say_what_is_wrong() {
    let unknown = ModelSpec::parse("mistral:large").unwrap_err().to_string();
    assert!(
        unknown.contains("`mistral:large`") && unknown.contains("unknown provider `mistral`"),
        "{unknown}"
    );
    let bare = ModelSpec::parse("gpt-4o").unwrap_err().to_string();
    assert!(bare.contains("unknown provider `gpt-4o`"), "{bare}");
    let empty = ModelSpec::parse("openai:").unwrap_err().to_string();
    assert!(empty.contains("no model name after `openai:`"), "{empty}");
}

#[cfg(all(feature = "openai", feature = "anthropic"))]
#[test]
fn keys_come_from_their_variables() {
    let none = vars(&[]);
    let missing = build(
        "openai:gpt-4o",
        &ModelSpec::parse("openai:gpt-4o").unwrap(),
        &none,
    )
    .unwrap_err()
    .to_string();
    assert!(missing.contains("`OPENAI_API_KEY`"), "{missing}");
    let missing = build(
        "anthropic:c",
        &ModelSpec::parse("anthropic:c").unwrap(),
        &none,
    )
    .unwrap_err()
    .to_string();
    assert!(missing.contains("`ANTHROPIC_API_KEY`"), "{missing}");
    // Ollama needs no key.
    let ollama = build(
        "ollama:qwen3:4b",
        &ModelSpec::parse("ollama:qwen3:4b").unwrap(),
        &none,
    )
    .expect("ollama");
    assert_eq!(ollama.name(), "qwen3:4b");
    let AnyModel::OpenAi(ollama) = ollama else {
        panic!("ollama is OpenAI-compatible")
    };
    assert_eq!(ollama.url(), "http://localhost:11434/v1/chat/completions");
    // A compatible server never gets OpenAI's key.
    let with_openai_key = vars(&[("OPENAI_API_KEY", "sk-openai")]);
    let spec = "http://127.0.0.1:9/v1#m";
    let compatible =
        build(spec, &ModelSpec::parse(spec).unwrap(), &with_openai_key).expect("compatible");
    assert!(
        format!("{compatible:?}").contains("key: None"),
        "{compatible:?}"
    );
}

#[cfg(all(feature = "openai", feature = "anthropic"))]
#[test]
fn from_env_picks_the_spec_then_a_key_then_nothing() {
    assert!(from_vars(&vars(&[])).expect("no vars").is_none());
    assert!(
        from_vars(&vars(&[
            ("BRUTE_MODEL", "scripted"),
            ("OPENAI_API_KEY", "k")
        ]))
        .expect("scripted")
        .is_none()
    );
    let openai = from_vars(&vars(&[("OPENAI_API_KEY", "k")]))
        .expect("openai")
        .expect("some");
    assert_eq!(openai.name(), DEFAULT_OPENAI_MODEL);
    let anthropic = from_vars(&vars(&[("ANTHROPIC_API_KEY", "k")]))
        .expect("anthropic")
        .expect("some");
    assert!(matches!(anthropic, AnyModel::Anthropic(_)));
    assert_eq!(anthropic.name(), DEFAULT_ANTHROPIC_MODEL);
    let chosen = from_vars(&vars(&[
        ("BRUTE_MODEL", "ollama:llama3.2"),
        ("OPENAI_API_KEY", "k"),
    ]))
    .expect("ollama")
    .expect("some");
    assert_eq!(chosen.name(), "llama3.2");
    let base = from_vars(&vars(&[
        ("BRUTE_MODEL", "openai:gpt-4.1"),
        ("OPENAI_API_KEY", "k"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
    ]))
    .expect("openai")
    .expect("some");
    let AnyModel::OpenAi(base) = base else {
        panic!("openai")
    };
    assert_eq!(base.url(), "http://127.0.0.1:1/v1/chat/completions");
    let err = from_vars(&vars(&[("BRUTE_MODEL", "openai:gpt-4.1")]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("OPENAI_API_KEY"), "{err}");
}

#[cfg(all(feature = "responses", feature = "gemini"))]
#[test]
fn the_responses_and_gemini_specs_read_their_keys_and_addresses() {
    let only = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    };
    let spec = "responses:gpt-5";
    let parsed = ModelSpec::parse(spec).unwrap();
    let missing = build(spec, &parsed, &only(&[])).unwrap_err().to_string();
    assert!(missing.contains("`OPENAI_API_KEY`"), "{missing}");
    let responses = build(
        spec,
        &parsed,
        &only(&[
            ("OPENAI_API_KEY", "sk-1"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1/"),
        ]),
    )
    .unwrap();
    let AnyModel::Responses(responses) = responses else {
        panic!("a Responses model")
    };
    assert_eq!(responses.url(), "http://127.0.0.1:1/v1/responses");
    assert_eq!(responses.secrets(), ["sk-1"]);

    let spec = "gemini:gemini-2.5-flash";
    let parsed = ModelSpec::parse(spec).unwrap();
    let missing = build(spec, &parsed, &only(&[])).unwrap_err().to_string();
    assert!(missing.contains("`GEMINI_API_KEY`"), "{missing}");
    let google = build(spec, &parsed, &only(&[("GOOGLE_API_KEY", "g-1")])).unwrap();
    assert_eq!(google.secrets(), ["g-1"]);
    let both = only(&[("GOOGLE_API_KEY", "g-1"), ("GEMINI_API_KEY", "m-1")]);
    let gemini = build(spec, &parsed, &both).unwrap();
    assert_eq!(gemini.secrets(), ["m-1"], "GEMINI_API_KEY comes first");
    let AnyModel::Gemini(gemini) = gemini else {
        panic!("a Gemini model")
    };
    assert_eq!(
        gemini.url(),
        "https://generativelanguage.googleapis.com/v1beta/models"
    );
    let picked = from_vars(&only(&[("GEMINI_API_KEY", "m-1")]))
        .unwrap()
        .unwrap();
    assert_eq!(picked.name(), DEFAULT_GEMINI_MODEL);
}
