//! `private_key_jwt` client authentication (RFC 7523, MCP's SEP-1046): the client
//! proves who it is with a short-lived JWT signed by its private key, and gets a
//! token by the client credentials grant.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, RsaKeyPair};
use serde_json::{Value, json};

/// How long a client assertion is valid: it is made for one token request.
const ASSERTION_LIFETIME: Duration = Duration::from_secs(60);

/// How long one token request may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The private key of a `private_key_jwt` client, ready to sign. Its `Debug` shows
/// the algorithm only.
#[derive(Clone)]
pub(super) struct SigningKey {
    key: Arc<Key>,
}

enum Key {
    Ecdsa(EcdsaKeyPair, &'static str),
    Rsa(RsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Reads a PKCS#8 private key (`-----BEGIN PRIVATE KEY-----`): an EC key on P-256
    /// (signs ES256) or P-384 (ES384), an RSA key (RS256) or an Ed25519 key (EdDSA).
    pub(super) fn from_pem(pem: &str) -> Result<Self, String> {
        const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
        const END: &str = "-----END PRIVATE KEY-----";
        let body = pem
            .split_once(BEGIN)
            .and_then(|(_, rest)| rest.split_once(END))
            .map(|(body, _)| body);
        let Some(body) = body else {
            let hint = if pem.contains("-----BEGIN EC PRIVATE KEY-----")
                || pem.contains("-----BEGIN RSA PRIVATE KEY-----")
            {
                " (this one is in the older SEC1 or PKCS#1 form: convert it with `openssl pkcs8 -topk8 -nocrypt`)"
            } else {
                ""
            };
            return Err(format!(
                "the key is not a PEM PKCS#8 private key (`{BEGIN}`){hint}"
            ));
        };
        let text: String = body.split_whitespace().collect();
        let der = STANDARD
            .decode(text)
            .map_err(|_| "the PEM private key is not valid base64".to_string())?;
        let random = SystemRandom::new();
        let key = if let Ok(key) =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der, &random)
        {
            Key::Ecdsa(key, "ES256")
        } else if let Ok(key) =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P384_SHA384_FIXED_SIGNING, &der, &random)
        {
            Key::Ecdsa(key, "ES384")
        } else if let Ok(key) = RsaKeyPair::from_pkcs8(&der) {
            Key::Rsa(key)
        } else if let Ok(key) = Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der) {
            Key::Ed25519(key)
        } else {
            return Err(
                "the private key is not an EC key on P-256 or P-384, an RSA key of 2048 bits or more, or an Ed25519 key"
                    .to_string(),
            );
        };
        Ok(Self { key: Arc::new(key) })
    }

    /// The JWS algorithm this key signs with.
    pub(super) fn algorithm(&self) -> &'static str {
        match &*self.key {
            Key::Ecdsa(_, algorithm) => algorithm,
            Key::Rsa(_) => "RS256",
            Key::Ed25519(_) => "EdDSA",
        }
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, String> {
        let random = SystemRandom::new();
        let failed = |_| "signing the client assertion failed".to_string();
        match &*self.key {
            Key::Ecdsa(key, _) => Ok(key
                .sign(&random, message)
                .map_err(failed)?
                .as_ref()
                .to_vec()),
            Key::Rsa(key) => {
                let mut signature = vec![0; key.public().modulus_len()];
                key.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &random,
                    message,
                    &mut signature,
                )
                .map_err(failed)?;
                Ok(signature)
            }
            Key::Ed25519(key) => Ok(key.sign(message).as_ref().to_vec()),
        }
    }

    /// A client assertion: a JWT naming `client_id` as issuer and subject, for the
    /// authorization server `audience` (its issuer), valid for a minute, with a
    /// fresh `jti`.
    pub(super) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, String> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_err(|_| "the system clock is before 1970".to_string())?
            .as_secs();
        let mut jti = [0u8; 16];
        SystemRandom::new()
            .fill(&mut jti)
            .map_err(|_| "no random bytes for the assertion's `jti`".to_string())?;
        let jti: String = jti.iter().map(|b| format!("{b:02x}")).collect();
        let header = json!({"alg": self.algorithm(), "typ": "JWT"});
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + ASSERTION_LIFETIME.as_secs(),
            "jti": jti,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self.sign(signing_input.as_bytes())?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        ))
    }
}

/// An access token obtained outside rmcp's authorization manager, with when it
/// expires (if the server said). Its `Debug` never shows the token.
#[derive(Clone)]
pub(super) struct Bearer {
    pub(super) token: String,
    pub(super) expires: Option<Instant>,
}

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bearer")
            .field("expires", &self.expires)
            .finish_non_exhaustive()
    }
}

impl Bearer {
    /// The token, unless it has expired (or expires within a few seconds).
    pub(super) fn current(&self) -> Option<&str> {
        let fresh = self
            .expires
            .is_none_or(|at| at > Instant::now() + Duration::from_secs(5));
        fresh.then_some(self.token.as_str())
    }

    /// A token of `lifetime` (when the server gave one), received now.
    pub(super) fn new(token: String, lifetime: Option<Duration>) -> Self {
        Bearer {
            token,
            expires: lifetime.map(|lifetime| Instant::now() + lifetime),
        }
    }
}

/// The client credentials grant at `token_endpoint`, authenticated by `assertion`,
/// for `resource` (RFC 8707) and `scopes`.
pub(super) async fn client_credentials(
    http: &reqwest::Client,
    token_endpoint: &str,
    assertion: &str,
    resource: &str,
    scopes: &[String],
) -> Result<Bearer, String> {
    let mut form = vec![
        ("grant_type", "client_credentials".to_string()),
        (
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_string(),
        ),
        ("client_assertion", assertion.to_string()),
        ("resource", resource.to_string()),
    ];
    if !scopes.is_empty() {
        form.push(("scope", scopes.join(" ")));
    }
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let response = http
        .post(token_endpoint)
        .header(reqwest::header::ACCEPT, "application/json")
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .body(body)
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| format!("the token request to {token_endpoint} failed: {e}"))?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        let field = |name: &str| body[name].as_str().unwrap_or_default().to_string();
        return Err(format!(
            "the token endpoint {token_endpoint} refused the client credentials ({status}): {} {}",
            field("error"),
            field("error_description")
        )
        .trim_end()
        .to_string());
    }
    let token = body["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            format!("the token endpoint {token_endpoint} answered without an access token")
        })?;
    let lifetime = body["expires_in"].as_u64().map(Duration::from_secs);
    Ok(Bearer::new(token.to_string(), lifetime))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::KeyPair;

    #[test]
    fn a_key_that_is_not_pkcs8_is_refused_with_the_command_that_converts_it() {
        let sec1 = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n";
        let error = SigningKey::from_pem(sec1).expect_err("SEC1 is not read");
        assert!(error.contains("openssl pkcs8 -topk8"), "{error}");
        let garbage = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n";
        let error = SigningKey::from_pem(garbage).expect_err("not a key");
        assert!(error.contains("not an EC key"), "{error}");
    }

    #[test]
    fn an_ed25519_assertion_verifies_with_the_public_key_and_names_the_client() {
        let random = SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&random).expect("a key");
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(pkcs8.as_ref())
        );
        let key = SigningKey::from_pem(&pem).expect("the key reads");
        assert_eq!(key.algorithm(), "EdDSA");
        let assertion = key
            .assertion("bot", "https://as.example")
            .expect("it signs");
        let (input, signature) = assertion.rsplit_once('.').expect("three parts");
        let public = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("a key");
        signature::UnparsedPublicKey::new(&signature::ED25519, public.public_key().as_ref())
            .verify(
                input.as_bytes(),
                &URL_SAFE_NO_PAD.decode(signature).expect("base64url"),
            )
            .expect("the signature verifies");
        let claims = input.split('.').nth(1).expect("claims");
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).expect("base64url"))
                .expect("JSON");
        assert_eq!(claims["iss"], "bot");
        assert_eq!(claims["sub"], "bot");
        assert_eq!(claims["aud"], "https://as.example");
        assert!(claims["exp"].as_u64() > claims["iat"].as_u64());
    }
}
