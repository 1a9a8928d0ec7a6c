//! A small W3C WebDriver client over HTTP (the commands the browser test needs), and
//! chromedriver with headless Debian chromium, started on 127.0.0.1 for one test.
//! The test FAILS when chromium or chromedriver is missing (`cargo xtask test` installs them).

#![allow(clippy::unwrap_used)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// chromedriver on a free port of 127.0.0.1, killed when dropped.
pub(crate) struct Driver {
    child: Child,
    base: String,
}

impl Driver {
    /// Starts chromedriver and waits until it is ready.
    pub(crate) async fn start() -> Driver {
        for binary in ["chromium", "chromedriver"] {
            let found = Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {binary}"))
                .output()
                .unwrap();
            assert!(
                found.status.success(),
                "`{binary}` is missing: the browser test needs Debian's chromium and chromium-driver: run `cargo xtask test`, which installs them"
            );
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let driver = Driver {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        let client = crate::support::client();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Ok(r) = client.get(format!("{}/status", driver.base)).send().await {
                let status: Value =
                    serde_json::from_str(&r.text().await.unwrap()).unwrap_or_default();
                if status["value"]["ready"] == true {
                    return driver;
                }
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not become ready in 120 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A headless chromium session.
    pub(crate) async fn browser(&self) -> Browser {
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"],
            },
        }}});
        let client = crate::support::client();
        let response = send(
            &client,
            reqwest::Method::POST,
            format!("{}/session", self.base),
            Some(capabilities),
        )
        .await;
        let id = response["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {response}"))
            .to_owned();
        Browser {
            client,
            url: format!("{}/session/{id}", self.base),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One browser session.
pub(crate) struct Browser {
    client: reqwest::Client,
    url: String,
}

async fn send(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    body: Option<Value>,
) -> Value {
    let mut request = client.request(method.clone(), &url);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let text = request.send().await.unwrap().text().await.unwrap();
    let value: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method} {url}: {e}: {text}"));
    assert!(
        value["value"]["error"].is_null(),
        "{method} {url}: {}",
        value["value"]
    );
    value["value"].clone()
}

impl Browser {
    async fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        send(&self.client, method, format!("{}{path}", self.url), body).await
    }

    /// Opens `url`.
    pub(crate) async fn goto(&self, url: &str) {
        self.command(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await;
    }

    /// The element matching the CSS `selector`.
    pub(crate) async fn find(&self, selector: &str) -> String {
        let found = self
            .command(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": selector})),
            )
            .await;
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {selector}: {found}"))
            .to_owned()
    }

    /// Types `text` into the element matching `selector` (as keystrokes).
    pub(crate) async fn type_into(&self, selector: &str, text: &str) {
        let element = self.find(selector).await;
        self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            Some(json!({ "text": text })),
        )
        .await;
    }

    /// Clicks the element matching `selector`.
    pub(crate) async fn click(&self, selector: &str) {
        let element = self.find(selector).await;
        self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .await;
    }

    /// Runs `script` (a function body) in the page; its return value.
    pub(crate) async fn eval(&self, script: &str) -> Value {
        self.command(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({ "script": script, "args": [] })),
        )
        .await
    }

    /// Waits up to 120 s (a generous limit: a loaded machine renders slowly) for `script` to return something other than `null`/`false`;
    /// that value. `what` names the wait in a failure.
    pub(crate) async fn wait_for(&self, what: &str, script: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let value = self.eval(script).await;
            if !value.is_null() && value != Value::Bool(false) {
                return value;
            }
            if Instant::now() > deadline {
                let page = self.eval("return document.body.innerText").await;
                panic!(
                    "timed out waiting for {what}; the page shows:\n{}",
                    page.as_str().unwrap_or_default()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Ends the session (closes the browser).
    pub(crate) async fn close(self) {
        self.command(reqwest::Method::DELETE, "", None).await;
    }
}
