// Drives brute-serve's AG-UI endpoint with the official client, @ag-ui/client's
// HttpAgent: `node run.cjs URL TOKEN THREAD INPUT...` runs one run per INPUT on one
// thread (the agent keeps the messages between runs, as a front end does) and prints
// one JSON line per run: the events it received, the messages it added, or the error
// the client raised (its schema and sequence checks included).
//
// Front-end tools: AGUI_TOOLS (a JSON array of AG-UI tools) is offered in every run.
// An INPUT `@answer:TEXT` adds a `tool` message answering, with TEXT, each call of
// such a tool that has no result yet (as a front end does once it ran them);
// `@replay` adds a copy of the last `tool` message again (a second answer to its call).
// Any other INPUT is a user message.
// CommonJS, so that NODE_PATH (the test sets it to .ci/npm/node_modules) finds it.
const { HttpAgent } = require("@ag-ui/client");

const [url, token, threadId, ...inputs] = process.argv.slice(2);
const tools = JSON.parse(process.env.AGUI_TOOLS || "[]");
const frontEnd = new Set(tools.map((tool) => tool.name));
const agent = new HttpAgent({
  url,
  threadId,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
});

/// The calls of front-end tools in the agent's messages that have no result yet.
function unanswered() {
  const answered = new Set(
    agent.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId),
  );
  return agent.messages
    .filter((m) => m.role === "assistant" && m.toolCalls)
    .flatMap((m) => m.toolCalls)
    .filter((call) => frontEnd.has(call.function.name) && !answered.has(call.id));
}

async function main() {
let n = 0;
for (const input of inputs) {
  n += 1;
  if (input.startsWith("@answer:")) {
    for (const call of unanswered()) {
      agent.addMessage({
        id: `result-${n}-${call.id}`,
        role: "tool",
        toolCallId: call.id,
        content: input.slice("@answer:".length),
      });
    }
  } else if (input === "@replay") {
    const last = agent.messages.filter((m) => m.role === "tool").pop();
    agent.addMessage({ ...last, id: `replay-${n}` });
  } else {
    agent.addMessage({ id: `user-${n}`, role: "user", content: input });
  }
  const events = [];
  try {
    const { newMessages } = await agent.runAgent(
      { runId: `run-${n}`, tools },
      { onEvent: ({ event }) => { events.push(event); } },
    );
    console.log(JSON.stringify({ events, newMessages }));
  } catch (error) {
    console.log(JSON.stringify({ events, error: String(error && error.message || error) }));
  }
}
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
