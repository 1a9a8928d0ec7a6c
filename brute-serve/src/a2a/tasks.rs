//! A2A tasks on brute sessions: a task is one turn of a session. Its id is
//! `{session}:{n}`, `n` the index of the user message that opened the turn, and its
//! context id is the session. Its state is read from the session's history, so any
//! server on the store answers for it: a final answer is `COMPLETED`, a call waiting
//! for approval `INPUT_REQUIRED`. Only what the history cannot show (a turn running,
//! failed or canceled on this server) comes from the small in-process [`Registry`].

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use brute::stream::{Verdict, pending_approvals};
use brute::{Role, ToolCall};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::error::A2aError;
use super::wire::{self, Artifact, Part, Task, TaskState, TaskStatus};

/// A task id, taken apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TaskRef {
    /// The session of the turn (the task's context id).
    pub(crate) session: String,
    /// The index of the turn's user message in the session's history.
    pub(crate) turn: usize,
}

impl TaskRef {
    /// The task of `id`; a task not found when `id` is no task id of this server.
    pub(crate) fn parse(id: &str) -> Result<TaskRef, A2aError> {
        let not_found = || A2aError::TaskNotFound(crate::session_id::shown(id));
        let (session, turn) = id.rsplit_once(':').ok_or_else(not_found)?;
        let turn = turn.parse().map_err(|_| not_found())?;
        crate::session_id::check(session).map_err(|_| not_found())?;
        Ok(TaskRef {
            session: session.to_owned(),
            turn,
        })
    }

    /// The task id on the wire.
    pub(crate) fn id(&self) -> String {
        format!("{}:{}", self.session, self.turn)
    }
}

/// What this server alone knows of a task.
#[derive(Clone, Debug)]
pub(crate) enum Live {
    /// Its turn runs here: `stop` stops it, `done` is cancelled once it ended.
    Running {
        /// Stops the turn.
        stop: CancellationToken,
        /// Cancelled when the turn has ended (and the registry knows how).
        done: CancellationToken,
    },
    /// Its turn ended here without an answer in the history: failed or canceled, with
    /// the parts of its status message.
    Ended(TaskState, Vec<Part>),
}

/// The tasks whose turns run on this server, and the last ones that failed or were
/// canceled here (at most [`Registry::KEEP`] of those).
#[derive(Debug, Default)]
pub(crate) struct Registry {
    inner: Mutex<(HashMap<String, Live>, VecDeque<String>)>,
}

impl Registry {
    /// How many ended tasks are remembered.
    const KEEP: usize = 1024;

    fn with<T>(&self, f: impl FnOnce(&mut (HashMap<String, Live>, VecDeque<String>)) -> T) -> T {
        let mut guard = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut guard)
    }

    /// The turn of `id` starts here.
    pub(crate) fn running(&self, id: &str, stop: CancellationToken, done: CancellationToken) {
        self.with(|(map, _)| map.insert(id.to_owned(), Live::Running { stop, done }));
    }

    /// The turn of `id` ended; `ended` when the history will not show why.
    pub(crate) fn finished(&self, id: &str, ended: Option<(TaskState, Vec<Part>)>) {
        self.with(|(map, order)| {
            map.remove(id);
            if let Some((state, message)) = ended {
                map.insert(id.to_owned(), Live::Ended(state, message));
                order.push_back(id.to_owned());
                while order.len() > Self::KEEP {
                    if let Some(old) = order.pop_front()
                        && matches!(map.get(&old), Some(Live::Ended(..)))
                    {
                        map.remove(&old);
                    }
                }
            }
        });
    }

    /// Forgets `id` (a turn that never started).
    pub(crate) fn forget(&self, id: &str) {
        self.with(|(map, _)| map.remove(id));
    }

    /// What this server knows of `id`.
    pub(crate) fn get(&self, id: &str) -> Option<Live> {
        self.with(|(map, _)| map.get(id).cloned())
    }
}

/// What the client is told when it canceled the task.
pub(crate) const CANCELED: &str = "canceled by the client";

/// The reason given to the model for a call that `CancelTask` denied: a task whose
/// turn ends with such a result was canceled.
pub(crate) const CANCEL_DENIAL: &str = "the client canceled the task (A2A CancelTask)";

/// An agent message of task `task`.
pub(crate) fn agent_message(task: &TaskRef, suffix: &str, parts: Vec<Part>) -> wire::Message {
    wire::Message {
        message_id: format!("{}:{suffix}", task.id()),
        context_id: Some(task.session.clone()),
        task_id: Some(task.id()),
        role: wire::ROLE_AGENT.to_owned(),
        parts,
        metadata: None,
    }
}

/// The agent's question when calls wait for approval: what each call would do, and
/// how to answer (the next message on the task).
pub(crate) fn approval_message(task: &TaskRef, calls: &[&ToolCall]) -> wire::Message {
    let mut lines = Vec::new();
    for call in calls {
        lines.push(format!(
            "Approve the call `{}` of tool `{}` with arguments {}?",
            call.id, call.name, call.arguments
        ));
    }
    lines.push(
        "Answer `approve`, or `deny` (any other text denies the call and tells the agent why)."
            .to_owned(),
    );
    let pending: Vec<Value> = calls
        .iter()
        .map(|call| json!({"callId": call.id, "name": call.name, "arguments": call.arguments}))
        .collect();
    agent_message(
        task,
        "approval",
        vec![
            Part::text(lines.join("\n")),
            Part::data(json!({ "pending": pending })),
        ],
    )
}

/// The answer artifact of a task.
pub(crate) fn answer(task: &TaskRef, text: &str) -> Artifact {
    Artifact {
        artifact_id: format!("{}:answer", task.id()),
        name: Some("answer".to_owned()),
        parts: vec![Part::text(text)],
    }
}

/// The task `task` as the session's history `messages` and this server's `live`
/// knowledge show it, with at most `history_length` messages of its history.
pub(crate) fn view(
    task: &TaskRef,
    messages: &[brute::Message],
    live: Option<Live>,
    history_length: Option<usize>,
) -> Result<Task, A2aError> {
    let text =
        |suffix: &str, text: String| Some(agent_message(task, suffix, vec![Part::text(text)]));
    if messages.get(task.turn).map(|m| m.role) != Some(Role::User) {
        // A turn that failed before anything answered its prompt takes the prompt
        // back out of the session: only this server's registry remembers it.
        return match live {
            Some(Live::Ended(state, why)) => Ok(Task {
                id: task.id(),
                context_id: task.session.clone(),
                status: TaskStatus {
                    state,
                    message: Some(agent_message(task, "status", why)),
                },
                artifacts: Vec::new(),
                history: Vec::new(),
            }),
            _ => Err(A2aError::TaskNotFound(task.id())),
        };
    }
    let end = messages
        .iter()
        .enumerate()
        .skip(task.turn + 1)
        .find(|(_, m)| m.role == Role::User)
        .map_or(messages.len(), |(i, _)| i);
    let turn = &messages[task.turn..end];
    let last = end == messages.len();
    let answer_text = turn
        .last()
        .filter(|m| m.role == Role::Assistant && m.tool_calls.is_empty())
        .map(|m| m.content.clone());
    let pending = if last {
        pending_approvals(messages)
    } else {
        Vec::new()
    };
    let mut artifacts = Vec::new();
    let (state, message) = if let Some(done) = answer_text {
        artifacts.push(answer(task, &done));
        (TaskState::Completed, text("status", done))
    } else if let Some(Live::Running { .. }) = live {
        (TaskState::Working, None)
    } else if !pending.is_empty() {
        (
            TaskState::InputRequired,
            Some(approval_message(task, &pending)),
        )
    } else if let Some(Live::Ended(state, why)) = live {
        (state, Some(agent_message(task, "status", why)))
    } else if turn
        .last()
        .is_some_and(|m| m.role == Role::Tool && m.content.contains(CANCEL_DENIAL))
    {
        // `CancelTask` denied the calls that waited: canceled, on any server.
        (TaskState::Canceled, text("status", CANCELED.to_owned()))
    } else if !last {
        (
            TaskState::Canceled,
            text(
                "status",
                "a later message on this context started a new task before this one had an answer"
                    .to_owned(),
            ),
        )
    } else {
        (
            TaskState::Failed,
            text(
                "status",
                "the turn stored no answer: it failed, was stopped, or still runs on another server"
                    .to_owned(),
            ),
        )
    };
    let mut history: Vec<wire::Message> = turn
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m.role, Role::User | Role::Assistant) && !m.content.is_empty())
        .map(|(i, m)| wire::Message {
            role: if m.role == Role::User {
                wire::ROLE_USER
            } else {
                wire::ROLE_AGENT
            }
            .to_owned(),
            ..agent_message(
                task,
                &(task.turn + i).to_string(),
                vec![Part::text(&m.content)],
            )
        })
        .collect();
    if let Some(keep) = history_length {
        let cut = history.len().saturating_sub(keep);
        history.drain(..cut);
    }
    Ok(Task {
        id: task.id(),
        context_id: task.session.clone(),
        status: TaskStatus { state, message },
        artifacts,
        history,
    })
}

/// The text a new turn starts from: the text parts, and data parts as JSON. File parts
/// (`raw`, `url`) are refused: brute's input is text.
pub(crate) fn input(message: &wire::Message) -> Result<String, A2aError> {
    if message.parts.is_empty() {
        return Err(A2aError::InvalidParams(
            "params.message.parts: the message has no parts".to_owned(),
        ));
    }
    let mut texts = Vec::new();
    for (i, part) in message.parts.iter().enumerate() {
        if let Some(text) = &part.text {
            texts.push(text.clone());
        } else if let Some(data) = &part.data {
            texts.push(data.to_string());
        } else {
            return Err(A2aError::ContentType(format!(
                "params.message.parts[{i}]: only text and data parts are accepted (this agent takes no files)"
            )));
        }
    }
    Ok(texts.join("\n"))
}

/// The decision that `message`, sent on a task waiting for approval of `pending`,
/// makes: a data part `{"decision": "approve" | "deny" | "edit", "callId"?, ..}` (brute's
/// `Verdict`), or text: `approve` / `yes` approves, `deny` / `no` denies, anything else
/// denies with the text as the reason. Without a `callId` it decides the first call.
pub(crate) fn decision(
    message: &wire::Message,
    pending: &[&ToolCall],
) -> Result<(String, Verdict), A2aError> {
    let first = pending
        .first()
        .map(|call| call.id.clone())
        .ok_or_else(|| A2aError::Internal("no call waits for approval".to_owned()))?;
    let data = message.parts.iter().find_map(|part| {
        part.data
            .as_ref()
            .filter(|d| d.get("decision").is_some())
            .cloned()
    });
    let (call_id, verdict) = match data {
        Some(data) => {
            let call_id = data
                .get("callId")
                .or_else(|| data.get("call_id"))
                .and_then(Value::as_str)
                .map_or(first, str::to_owned);
            let verdict: Verdict = serde_json::from_value(data).map_err(|e| {
                A2aError::InvalidParams(format!("params.message: the decision part: {e}"))
            })?;
            (call_id, verdict)
        }
        None => {
            let text = input(message)?;
            let verdict = match text.trim().to_lowercase().as_str() {
                "approve" | "approved" | "yes" | "y" | "ok" => Verdict::Approve,
                "deny" | "denied" | "no" | "n" => Verdict::Deny { reason: None },
                _ => Verdict::Deny {
                    reason: Some(text.trim().to_owned()),
                },
            };
            (first, verdict)
        }
    };
    if !pending.iter().any(|call| call.id == call_id) {
        let waiting: Vec<&str> = pending.iter().map(|c| c.id.as_str()).collect();
        return Err(A2aError::InvalidParams(format!(
            "params.message: call `{call_id}` does not wait for approval (waiting: {})",
            waiting.join(", ")
        )));
    }
    Ok((call_id, verdict))
}

#[cfg(test)]
mod tests {
    use super::*;
    use brute::Message;

    fn task() -> TaskRef {
        TaskRef {
            session: "s".into(),
            turn: 0,
        }
    }

    #[test]
    fn a_task_id_names_its_session_and_turn() {
        let parsed = TaskRef::parse("a:b:12").ok();
        assert_eq!(
            parsed,
            Some(TaskRef {
                session: "a:b".into(),
                turn: 12
            })
        );
        assert_eq!(parsed.map(|t| t.id()), Some("a:b:12".to_owned()));
        for bad in ["nocolon", "s:x", ":1", "../x:1"] {
            assert!(
                matches!(TaskRef::parse(bad), Err(A2aError::TaskNotFound(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_state_comes_from_the_history() {
        let done = [Message::user("hi"), Message::assistant("hello")];
        let seen = view(&task(), &done, None, None).ok();
        assert_eq!(
            seen.as_ref().map(|t| t.status.state),
            Some(TaskState::Completed)
        );
        assert_eq!(seen.map(|t| t.artifacts.len()), Some(1));
        let open = [Message::user("hi")];
        let seen = view(&task(), &open, None, None).ok();
        assert_eq!(seen.map(|t| t.status.state), Some(TaskState::Failed));
        let running = Live::Running {
            stop: CancellationToken::new(),
            done: CancellationToken::new(),
        };
        let seen = view(&task(), &open, Some(running), None).ok();
        assert_eq!(seen.map(|t| t.status.state), Some(TaskState::Working));
        let later = [Message::user("hi"), Message::user("again")];
        let seen = view(&task(), &later, None, Some(0)).ok();
        assert_eq!(
            seen.as_ref().map(|t| t.status.state),
            Some(TaskState::Canceled)
        );
        assert_eq!(seen.map(|t| t.history.len()), Some(0));
        assert!(matches!(
            view(
                &TaskRef {
                    session: "s".into(),
                    turn: 1
                },
                &done,
                None,
                None
            ),
            Err(A2aError::TaskNotFound(_))
        ));
    }

    #[test]
    fn text_answers_approve_or_deny_with_a_reason() {
        let call = ToolCall::new("c1", "launch", json!({}));
        let said = |text: &str| wire::Message {
            parts: vec![Part::text(text)],
            ..wire::Message::default()
        };
        let decided = |text| decision(&said(text), &[&call]).ok().map(|(_, v)| v);
        assert_eq!(decided(" Approve "), Some(Verdict::Approve));
        assert_eq!(decided("no"), Some(Verdict::Deny { reason: None }));
        assert_eq!(
            decided("not the moon"),
            Some(Verdict::Deny {
                reason: Some("not the moon".into())
            })
        );
        let edit = wire::Message {
            parts: vec![Part::data(
                json!({"decision": "edit", "callId": "c1", "arguments": {"target": "mars"}}),
            )],
            ..wire::Message::default()
        };
        assert_eq!(
            decision(&edit, &[&call]).ok(),
            Some((
                "c1".to_owned(),
                Verdict::Edit {
                    arguments: json!({"target": "mars"})
                }
            ))
        );
        let other = wire::Message {
            parts: vec![Part::data(json!({"decision": "approve", "callId": "c9"}))],
            ..wire::Message::default()
        };
        assert!(matches!(
            decision(&other, &[&call]),
            Err(A2aError::InvalidParams(_))
        ));
    }
}
