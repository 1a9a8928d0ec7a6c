//! [`PiiGuard`]: the built-in guard for personal data.

use std::fmt;
use std::fmt::Write as _;
use std::ops::Range;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use super::check::{Check, DeltaFilter, Guard, Stage};
use super::scan::{self, Found, Hints};
use crate::message::ToolCall;

/// A kind of personal data [`PiiGuard`] finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Pii {
    /// Email addresses.
    Email,
    /// Card numbers: 13 to 19 digits (spaced or hyphenated) that pass the Luhn check.
    Card,
    /// IPv4 and IPv6 addresses.
    Ip,
    /// `http://`, `https://` and `www.` addresses.
    Url,
    /// Phone numbers: 10 to 15 digits written with a leading `+` or separators.
    Phone,
}

impl Pii {
    fn name(self) -> &'static str {
        match self {
            Pii::Email => "email",
            Pii::Card => "card",
            Pii::Ip => "ip",
            Pii::Url => "url",
            Pii::Phone => "phone",
        }
    }
}

/// What [`PiiGuard`] does with what it finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Block the turn ([`Check::Block`]), naming the kind, never the value.
    Block,
    /// Replace it with `[REDACTED_EMAIL]` (the kind's name in capitals).
    Redact,
    /// Replace its letters and digits with `*`, keeping the last four (an email keeps
    /// its first letter and its domain: `j***@example.com`).
    Mask,
    /// Replace it with `<email:0123456789abcdef>`: the kind and the SipHash-2-4 digest
    /// of the value under the guard's 128-bit key ([`PiiGuard::key`]), in hex. The same
    /// value under the same key gives the same digest on every machine and version,
    /// so hashed values can still be matched; without the key they cannot be
    /// computed from a guess.
    Hash,
}

/// A detector of the user's: what it finds in one segment of text.
type Detect = Arc<dyn Fn(&str) -> Vec<Range<usize>> + Send + Sync>;

#[derive(Clone)]
enum Detector {
    Builtin(Pii),
    Custom { name: Arc<str>, detect: Detect },
}

impl Detector {
    fn name(&self) -> &str {
        match self {
            Detector::Builtin(pii) => pii.name(),
            Detector::Custom { name, .. } => name,
        }
    }
}

/// The built-in guard for personal data: finds email addresses, card numbers (Luhn
/// checked), IP addresses, URLs, phone numbers and the patterns you add, and blocks,
/// redacts, masks or hashes each kind as you choose. Hand-written scanners, no regex:
/// a text with nothing that could be personal data costs one pass over its bytes.
///
/// It checks the prompt, tool results, the reply and the string arguments of tool
/// calls ([`PiiGuard::stages`] narrows it), and filters streamed replies holding back
/// only the unfinished last word (a spaced card or phone number counts as one), so a
/// value split across deltas is still caught and the caller never sees it.
///
/// ```
/// use brute::middleware::Guardrail;
/// use brute::middleware::guard::{Action, Pii, PiiGuard};
/// use brute::{Message, brute_agent};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let pii = PiiGuard::new()
///     .detect(Pii::Email, Action::Redact)
///     .detect(Pii::Card, Action::Mask)
///     .custom("employee_id", Action::Hash, |text| {
///         text.find("EMP-").map(|at| at..text.len()).into_iter().collect()
///     })
///     .key(*b"0123456789abcdef");
/// let agent = brute_agent! {
///     use Guardrail { guard: pii };
///     run |_env| async { Ok(Message::assistant("Mail ann@example.com, card 4111 1111 1111 1111.")) };
/// };
/// let outcome = agent.start("Who is EMP-1234?").await?;
/// assert_eq!(outcome.text(), Some("Mail [REDACTED_EMAIL], card **** **** **** 1111."));
/// assert!(outcome.env.messages[0].content.starts_with("Who is <employee_id:"));
/// # Ok::<(), brute::Error>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct PiiGuard {
    // Shared: the delta filter of every streamed reply holds a clone.
    detectors: Arc<Vec<(Detector, Action)>>,
    stages: Arc<Vec<Stage>>,
    key: [u8; 16],
    /// The last reply a delta filter of this guard saw whole, and what it made of it:
    /// the reply's check takes it rather than scan the same text again.
    memo: Arc<Mutex<Option<(String, Scanned)>>>,
}

impl Default for PiiGuard {
    fn default() -> Self {
        PiiGuard {
            detectors: Arc::default(),
            stages: Arc::new(Stage::ALL.to_vec()),
            key: [0; 16],
            memo: Arc::default(),
        }
    }
}

impl fmt::Debug for PiiGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PiiGuard")
            .field(
                "detectors",
                &self
                    .detectors
                    .iter()
                    .map(|(d, a)| (d.name(), a))
                    .collect::<Vec<_>>(),
            )
            .field("stages", &self.stages)
            .finish_non_exhaustive()
    }
}

/// What a scan made of a text.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Scanned {
    /// Nothing found.
    Clean,
    /// Found and replaced.
    Rewritten(String),
    /// Found something to block: the detector's name.
    Blocked(String),
}

impl PiiGuard {
    /// A guard that finds nothing yet: add kinds with [`PiiGuard::detect`]. It watches
    /// every [`Stage`], and hashes under the all-zero key until [`PiiGuard::key`] sets one.
    pub fn new() -> Self {
        Self::default()
    }

    /// Finds `pii` and does `action` with it. A kind added twice keeps the first action.
    pub fn detect(mut self, pii: Pii, action: Action) -> Self {
        Arc::make_mut(&mut self.detectors).push((Detector::Builtin(pii), action));
        self
    }

    /// Finds what `detect` returns (byte ranges in the text it is given, one segment
    /// of text without whitespace except spaces between digit groups) and does
    /// `action` with it, naming it `name` (`[REDACTED_NAME]`, `<name:..>`, the block
    /// reason). Ranges that overlap an earlier kind's, or do not fall on character
    /// boundaries, are ignored.
    pub fn custom(
        mut self,
        name: impl Into<Arc<str>>,
        action: Action,
        detect: impl Fn(&str) -> Vec<Range<usize>> + Send + Sync + 'static,
    ) -> Self {
        let detector = Detector::Custom {
            name: name.into(),
            detect: Arc::new(detect),
        };
        Arc::make_mut(&mut self.detectors).push((detector, action));
        self
    }

    /// The stages it checks (every one by default).
    pub fn stages(mut self, stages: impl IntoIterator<Item = Stage>) -> Self {
        self.stages = Arc::new(stages.into_iter().collect());
        self
    }

    /// The 128-bit key of [`Action::Hash`]. Keep it secret and the same across
    /// processes to keep digests comparable.
    pub fn key(mut self, key: [u8; 16]) -> Self {
        self.key = key;
        self
    }

    fn watches(&self, stage: Stage) -> bool {
        self.stages.contains(&stage)
    }

    /// Finds the matches of every detector in one segment; earlier detectors win
    /// overlaps, except that a URL is found before what it contains.
    fn find(&self, segment: &str, found: &mut Found, scratch: &mut Vec<Range<usize>>) {
        found.clear();
        let b = segment.as_bytes();
        let hints = Hints::of(b);
        let custom = self
            .detectors
            .iter()
            .any(|(d, _)| matches!(d, Detector::Custom { .. }));
        if hints.none() && !custom {
            return;
        }
        let url_first = self
            .detectors
            .iter()
            .position(|(d, _)| matches!(d, Detector::Builtin(Pii::Url)));
        let order = url_first
            .into_iter()
            .chain((0..self.detectors.len()).filter(|&i| Some(i) != url_first));
        for index in order {
            scratch.clear();
            match &self.detectors[index].0 {
                Detector::Builtin(pii) => match pii {
                    Pii::Email if hints.at => scan::emails(b, scratch),
                    Pii::Url if hints.colon || hints.dot => scan::urls(b, scratch),
                    Pii::Ip => {
                        if hints.digit && hints.dot {
                            scan::ipv4s(b, scratch);
                        }
                        if hints.colon {
                            scan::ipv6s(b, scratch);
                        }
                    }
                    Pii::Card if hints.digit => scan::cards(b, scratch),
                    Pii::Phone if hints.digit => scan::phones(b, scratch),
                    _ => {}
                },
                Detector::Custom { detect, .. } => scratch.extend(detect(segment)),
            }
            for range in scratch.drain(..) {
                let fits = range.start < range.end
                    && segment.is_char_boundary(range.start)
                    && segment.get(range.clone()).is_some();
                let free = found
                    .iter()
                    .all(|(r, _)| range.end <= r.start || r.end <= range.start);
                if fits && free {
                    found.push((range, index));
                }
            }
        }
        found.sort_by_key(|(r, _)| r.start);
    }

    /// Scans `text`: the first value to block, or the text with every value replaced.
    pub(super) fn scan(&self, text: &str) -> Scanned {
        let custom = self
            .detectors
            .iter()
            .any(|(d, _)| matches!(d, Detector::Custom { .. }));
        if !custom && Hints::of(text.as_bytes()).none() {
            // No digit, `@`, `:` or `.`: nothing a built-in detector finds.
            return Scanned::Clean;
        }
        let mut out: Option<String> = None;
        let mut copied = 0;
        let mut found = Found::new();
        let mut scratch = Vec::new();
        let mut blocked = None;
        scan::segments(text, |start, end| {
            if blocked.is_some() {
                return;
            }
            let segment = &text[start..end];
            self.find(segment, &mut found, &mut scratch);
            for (range, index) in found.drain(..) {
                let (detector, action) = &self.detectors[index];
                if *action == Action::Block {
                    blocked = Some(detector.name().to_string());
                    return;
                }
                let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
                out.push_str(&text[copied..start + range.start]);
                self.replace(detector.name(), *action, &segment[range.clone()], out);
                copied = start + range.end;
            }
        });
        if let Some(name) = blocked {
            return Scanned::Blocked(name);
        }
        match out {
            None => Scanned::Clean,
            Some(mut out) => {
                out.push_str(&text[copied..]);
                Scanned::Rewritten(out)
            }
        }
    }

    fn replace(&self, name: &str, action: Action, value: &str, out: &mut String) {
        match action {
            Action::Block | Action::Redact => {
                out.push_str("[REDACTED_");
                out.extend(name.chars().map(|c| c.to_ascii_uppercase()));
                out.push(']');
            }
            Action::Hash => {
                let digest = scan::siphash24(self.key, value.as_bytes());
                let _ = write!(out, "<{name}:{digest:016x}>");
            }
            Action::Mask => {
                let keep_from = match value.find('@') {
                    Some(at) if name == "email" => {
                        let first = value.chars().next().map_or(0, char::len_utf8);
                        out.push_str(&value[..first]);
                        out.extend(value[first..at].chars().map(|_| '*'));
                        out.push_str(&value[at..]);
                        return;
                    }
                    _ => {
                        let alnum = value.chars().filter(char::is_ascii_alphanumeric).count();
                        alnum.saturating_sub(4)
                    }
                };
                let mut seen = 0;
                for c in value.chars() {
                    if c.is_ascii_alphanumeric() {
                        seen += 1;
                        out.push(if seen <= keep_from { '*' } else { c });
                    } else {
                        out.push(c);
                    }
                }
            }
        }
    }

    fn check_text(&self, text: &str, stage: Stage) -> Check {
        if !self.watches(stage) {
            return Check::Pass;
        }
        let streamed = (stage == Stage::Output)
            .then(|| {
                let mut memo = self.memo.lock().unwrap_or_else(PoisonError::into_inner);
                memo.take_if(|(seen, _)| seen == text)
                    .map(|(_, scanned)| scanned)
            })
            .flatten();
        match streamed.unwrap_or_else(|| self.scan(text)) {
            Scanned::Clean => Check::Pass,
            Scanned::Rewritten(text) => Check::Rewrite(text),
            Scanned::Blocked(name) => Check::Block(block_reason(&name, stage)),
        }
    }

    /// Scans every string in `value`; `Err` names the kind to block.
    fn scan_value(&self, value: &mut Value) -> Result<bool, String> {
        match value {
            Value::String(text) => match self.scan(text) {
                Scanned::Clean => Ok(false),
                Scanned::Rewritten(new) => {
                    *text = new;
                    Ok(true)
                }
                Scanned::Blocked(name) => Err(name),
            },
            Value::Array(items) => items
                .iter_mut()
                .try_fold(false, |changed, item| Ok(self.scan_value(item)? || changed)),
            Value::Object(map) => map
                .values_mut()
                .try_fold(false, |changed, item| Ok(self.scan_value(item)? || changed)),
            _ => Ok(false),
        }
    }
}

/// The reason of a block: the kind, never the value.
fn block_reason(name: &str, stage: Stage) -> String {
    let what = match name {
        "email" => "an email address".to_string(),
        "card" => "a card number".to_string(),
        "ip" => "an IP address".to_string(),
        "url" => "a URL".to_string(),
        "phone" => "a phone number".to_string(),
        other => format!("a value of kind `{other}`"),
    };
    let place = match stage {
        Stage::Input => "the prompt",
        Stage::ToolResult => "a tool result",
        Stage::Output => "the reply",
        Stage::ToolCall => "a tool call",
    };
    format!("{place} contains {what}")
}

impl Guard for PiiGuard {
    async fn check(&self, text: &str, stage: Stage) -> Check {
        self.check_text(text, stage)
    }

    async fn check_call(&self, call: &ToolCall) -> Check<Value> {
        if !self.watches(Stage::ToolCall) {
            return Check::Pass;
        }
        let mut arguments = call.arguments.clone();
        match self.scan_value(&mut arguments) {
            Ok(false) => Check::Pass,
            Ok(true) => Check::Rewrite(arguments),
            Err(name) => Check::Block(block_reason(&name, Stage::ToolCall)),
        }
    }

    fn deltas(&self) -> Option<Box<dyn DeltaFilter>> {
        Some(Box::new(PiiDeltas {
            guard: self.clone(),
            pending: String::new(),
            blocked: false,
            watching: self.watches(Stage::Output),
            input: String::new(),
            output: String::new(),
            found: None,
        }))
    }
}

/// The streamed filter of [`PiiGuard`]: holds back the last, unfinished segment and
/// releases every finished one scanned, as the whole reply is scanned.
struct PiiDeltas {
    guard: PiiGuard,
    pending: String,
    blocked: bool,
    watching: bool,
    /// The reply so far, what was shown of it, and the kind that blocked it.
    input: String,
    output: String,
    found: Option<String>,
}

impl PiiDeltas {
    /// Scans finished text and appends it to `out` as the whole reply's scan will show
    /// it; `false` once it holds something to block (nothing more is shown).
    fn release(
        guard: &PiiGuard,
        text: &str,
        out: &mut String,
        output: &mut String,
        found: &mut Option<String>,
    ) -> bool {
        let start = out.len();
        match guard.scan(text) {
            Scanned::Clean => out.push_str(text),
            Scanned::Rewritten(text) => out.push_str(&text),
            Scanned::Blocked(name) => {
                *found = Some(name);
                return false;
            }
        }
        output.push_str(&out[start..]);
        true
    }
}

impl DeltaFilter for PiiDeltas {
    fn push(&mut self, delta: &str, out: &mut String) {
        if !self.watching {
            out.push_str(delta);
            return;
        }
        if self.blocked {
            return;
        }
        self.input.push_str(delta);
        // What is pending is an unfinished segment: the text before it was released.
        if self.pending.is_empty() {
            let upto = scan::finished(delta);
            if upto > 0
                && !Self::release(
                    &self.guard,
                    &delta[..upto],
                    out,
                    &mut self.output,
                    &mut self.found,
                )
            {
                self.blocked = true;
                return;
            }
            self.pending.push_str(&delta[upto..]);
            return;
        }
        self.pending.push_str(delta);
        let upto = scan::finished(&self.pending);
        if upto > 0 {
            if !Self::release(
                &self.guard,
                &self.pending[..upto],
                out,
                &mut self.output,
                &mut self.found,
            ) {
                self.blocked = true;
                self.pending.clear();
                return;
            }
            self.pending.drain(..upto);
        }
    }

    fn finish(&mut self, out: &mut String) {
        if self.watching && !self.blocked {
            Self::release(
                &self.guard,
                &self.pending,
                out,
                &mut self.output,
                &mut self.found,
            );
        }
        if self.watching {
            let scanned = match self.found.take() {
                Some(name) => Scanned::Blocked(name),
                None if self.output == self.input => Scanned::Clean,
                None => Scanned::Rewritten(std::mem::take(&mut self.output)),
            };
            let input = std::mem::take(&mut self.input);
            *self
                .guard
                .memo
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some((input, scanned));
        }
        self.output.clear();
        self.pending.clear();
        self.blocked = false;
    }
}
