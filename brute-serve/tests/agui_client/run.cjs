// Drives brute-serve's AG-UI endpoint with the official client, @ag-ui/client's
// HttpAgent: `node run.cjs URL TOKEN THREAD INPUT...` runs one run per INPUT on one
// thread (the agent keeps the messages between runs, as a front end does) and prints
// one JSON line per run: the events it received, the messages it added, or the error
// the client raised (its schema and sequence checks included).
// CommonJS, so that NODE_PATH (the test sets it to .ci/npm/node_modules) finds it.
const { HttpAgent } = require("@ag-ui/client");

const [url, token, threadId, ...inputs] = process.argv.slice(2);
const agent = new HttpAgent({
  url,
  threadId,
  headers: token ? { Authorization: `Bearer ${token}` } : {},
});

async function main() {
let n = 0;
for (const input of inputs) {
  n += 1;
  agent.addMessage({ id: `user-${n}`, role: "user", content: input });
  const events = [];
  try {
    const { newMessages } = await agent.runAgent(
      { runId: `run-${n}` },
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
