// The official A2A JavaScript client (@a2a-js/sdk) against an Aurora agent. Run by test_a2a_js_client.py:
//   node js_client.mjs <sdk folder> <agent base URL> <bearer token> <text> [read|write]
// read: send a message, then get its task; prints one JSON line {id, sentState, gotState, answer}.
// write: send a message whose task waits for an approval; print {step: "waiting", ...} with the approval's id;
// resubscribe to the task and print {step: "subscribed", ...} once the stream is open (the test grants the
// approval then); follow the stream to its final state, get the task, and print {step: "done", ...}.
import { pathToFileURL } from "node:url";

const [sdk, base, token, text, mode = "read"] = process.argv.slice(2);
const client = await import(pathToFileURL(`${sdk}/dist/client/index.js`).href);
const core = await import(pathToFileURL(`${sdk}/dist/index.js`).href);

const withToken = (input, init = {}) => {
  const headers = new Headers(init.headers || {});
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};
const factory = new client.ClientFactory({
  transports: [new client.JsonRpcTransportFactory({ fetchImpl: withToken })],
  cardResolver: new client.DefaultAgentCardResolver({ fetchImpl: withToken }),
});
const agent = await factory.createFromUrl(`${base}/.well-known/agent-card.json`, ""); // the card under the agent
const sent = await agent.sendMessage({
  message: {
    messageId: crypto.randomUUID(), contextId: "", taskId: "", role: core.Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text } }], metadata: undefined, extensions: [], referenceTaskIds: [],
  },
  configuration: undefined, metadata: undefined, tenant: "",
});
const sentTask = sent.task ?? sent;
const taskId = sentTask.id;
const state = (t) => core.taskStateToJSON(t.status.state);
const answer = (t) => (t.artifacts || []).flatMap((a) => a.parts.map((p) => p.content?.value)).join("");
const question = (t) => (t.status.message?.parts || []).map((p) => p.content?.value).join("");
const show = (line) => console.log(JSON.stringify(line)); // a pipe's writes are synchronous: the test reads each at once

if (mode === "write") {
  show({ step: "waiting", id: taskId, sentState: state(sentTask), question: question(sentTask),
         approval: sentTask.metadata?.["aurora.approval_id"] });
  const streamed = [];
  for await (const response of agent.resubscribeTask({ id: taskId, tenant: "" })) {
    const shown = response.payload?.$case === "task" ? response.payload.value.status
      : response.payload?.$case === "statusUpdate" ? response.payload.value.status : undefined;
    if (shown === undefined) continue;
    streamed.push(core.taskStateToJSON(shown.state));
    if (streamed.length === 1) show({ step: "subscribed", state: streamed[0] });
  }
  const got = await agent.getTask({ id: taskId, tenant: "", historyLength: undefined });
  show({ step: "done", id: taskId, streamed, gotState: state(got), answer: answer(got) });
} else {
  const got = await agent.getTask({ id: taskId, tenant: "", historyLength: undefined });
  show({ id: taskId, sentState: state(sentTask), gotState: state(got), answer: answer(got) });
}
