// The official A2A JavaScript client (@a2a-js/sdk) against an Aurora agent: send a message,
// then get its task. Run by test_a2a_js_client.py:
//   node js_client.mjs <sdk folder> <agent base URL> <bearer token> <text>
// Prints one JSON line: {"sent": <task or message>, "got": <task>}.
import { pathToFileURL } from "node:url";

const [sdk, base, token, text] = process.argv.slice(2);
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
const taskId = sent.id ?? sent.task?.id;
const got = await agent.getTask({ id: taskId, tenant: "", historyLength: undefined });
const state = (t) => core.taskStateToJSON(t.status.state);
const answer = (t) => (t.artifacts || []).flatMap((a) => a.parts.map((p) => p.content?.value)).join("");
console.log(JSON.stringify({ id: taskId, sentState: state(sent.task ?? sent), gotState: state(got), answer: answer(got) }));
