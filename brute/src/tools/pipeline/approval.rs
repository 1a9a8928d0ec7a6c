//! Per-call policy of `DefaultToolPipeline`: approval (decided by type: the default
//! [`AllowAll`] is zero-sized and compiles to nothing) and per-tool timeouts.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::message::ToolCall;

/// Timeouts of single tools, overriding the pipeline's `timeout`.
///
/// ```
/// use std::time::Duration;
/// let timeouts = brute::tools::Timeouts::from([("shell", Duration::from_secs(600))]);
/// assert_eq!(timeouts.get("shell"), Some(Duration::from_secs(600)));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Timeouts(HashMap<String, Duration>);

impl Timeouts {
    /// The timeout of the tool `name`, if one is set.
    pub fn get(&self, name: &str) -> Option<Duration> {
        self.0.get(name).copied()
    }

    /// Whether no tool has a timeout of its own.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<const N: usize> From<[(&str, Duration); N]> for Timeouts {
    fn from(pairs: [(&str, Duration); N]) -> Self {
        Timeouts(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
}

impl From<HashMap<String, Duration>> for Timeouts {
    fn from(map: HashMap<String, Duration>) -> Self {
        Timeouts(map)
    }
}

/// What the approval policy decides about one call.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Run it as it is.
    Allow,
    /// Do not run it; the model gets an error result with this reason.
    Deny(String),
    /// Run it with these arguments instead.
    Rewrite(Value),
    /// Ask a person: the call is stored in the session as pending, the turn ends paused
    /// ([`ExitReason::AwaitingApproval`](crate::ExitReason::AwaitingApproval)) and
    /// [`Agent::decide`](crate::Agent::decide) resumes it, in this process or another
    /// (see [`brute::stream`](crate::stream)). The other calls of the same reply run
    /// at once.
    Ask,
}

/// What the `approval` option of `DefaultToolPipeline` takes: a policy that decides,
/// before each call runs, what happens to it.
///
/// The pipeline is generic over it, so a stack pays for exactly the policy it names:
/// with the default, [`AllowAll`], the decision is a constant and the code that asks,
/// denies, rewrites or pauses is not in the compiled stack at all. [`Approval`] is the
/// policy given by a function; a type of your own may implement this trait too.
pub trait ApprovalPolicy: Send + Sync {
    /// Whether [`decide`](ApprovalPolicy::decide) may answer [`Decision::Ask`]: when
    /// `false`, the pause for a person's approval is left out of the compiled pipeline,
    /// and an `Ask` all the same is a denial (the call gets an error result; no call
    /// is left without one).
    const MAY_ASK: bool = true;

    /// The decision for `call`.
    fn decide(&self, call: &ToolCall) -> Decision;
}

/// The default approval policy: every call runs as the model made it. Zero-sized: a
/// pipeline with it has no approval code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllowAll;

impl ApprovalPolicy for AllowAll {
    const MAY_ASK: bool = false;

    #[inline(always)]
    fn decide(&self, _call: &ToolCall) -> Decision {
        Decision::Allow
    }
}

impl ApprovalPolicy for Approval {
    #[inline]
    fn decide(&self, call: &ToolCall) -> Decision {
        Approval::decide(self, call)
    }
}

/// The approval policy given by a function: decides, before each call runs, to allow it, deny it with a
/// reason, rewrite its arguments, or ask a person (which pauses the turn). The default
/// allows everything.
///
/// ```
/// use brute::tools::{Approval, Decision};
///
/// let policy = Approval::new(|call| match call.name.as_str() {
///     "shell" => Decision::Deny("shell is disabled here".into()),
///     _ => Decision::Allow,
/// });
/// # let _ = policy;
/// ```
#[derive(Clone, Default)]
pub struct Approval(Option<Arc<PolicyFn>>);

type PolicyFn = dyn Fn(&ToolCall) -> Decision + Send + Sync;

impl Approval {
    /// A policy deciding with `f`.
    pub fn new(f: impl Fn(&ToolCall) -> Decision + Send + Sync + 'static) -> Self {
        Approval(Some(Arc::new(f)))
    }

    /// A policy denying the named tools and allowing the others.
    pub fn deny(tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let denied: Vec<String> = tools.into_iter().map(Into::into).collect();
        Approval::new(move |call| {
            if denied.contains(&call.name) {
                Decision::Deny(format!(
                    "the tool `{}` is not allowed by the approval policy",
                    call.name
                ))
            } else {
                Decision::Allow
            }
        })
    }

    /// A policy asking a person about the named tools and allowing the others.
    ///
    /// ```
    /// use brute::ToolCall;
    /// use brute::tools::{Approval, Decision};
    ///
    /// let policy = Approval::ask(["shell", "write"]);
    /// let call = ToolCall::new("c1", "shell", serde_json::json!({"command": "ls"}));
    /// assert_eq!(policy.decide(&call), Decision::Ask);
    /// ```
    pub fn ask(tools: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let asked: Vec<String> = tools.into_iter().map(Into::into).collect();
        Approval::new(move |call| {
            if asked.contains(&call.name) {
                Decision::Ask
            } else {
                Decision::Allow
            }
        })
    }

    /// The decision for `call`.
    pub fn decide(&self, call: &ToolCall) -> Decision {
        match &self.0 {
            Some(f) => f(call),
            None => Decision::Allow,
        }
    }
}

impl fmt::Debug for Approval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Approval(policy)"
        } else {
            "Approval(allow all)"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_give_each_named_tool_its_limit_from_either_form() {
        let short = Duration::from_millis(5);
        let long = Duration::from_secs(60);
        let from_pairs = Timeouts::from([("shell", long), ("fetch", short)]);
        let from_map = Timeouts::from(HashMap::from([("shell".to_string(), long)]));
        for timeouts in [&from_pairs, &from_map] {
            assert!(!timeouts.is_empty());
            assert_eq!(timeouts.get("shell"), Some(long));
            assert_eq!(timeouts.get("read"), None);
        }
        assert_eq!(from_pairs.get("fetch"), Some(short));
        assert!(Timeouts::default().is_empty());
    }

    #[test]
    fn an_approval_says_in_debug_whether_it_holds_a_policy() {
        assert_eq!(format!("{:?}", Approval::default()), "Approval(allow all)");
        assert_eq!(
            format!("{:?}", Approval::deny(["shell"])),
            "Approval(policy)"
        );
    }
}
