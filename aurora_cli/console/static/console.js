// The Aurora console's only script: signs in and out, refreshes the server-rendered sections,
// shows live events (as text: event data is untrusted), and sends approval decisions and dry runs.
"use strict";

// The session's anti-forgery token: only on the pages of a signed-in session.
const tokenMeta = document.querySelector('meta[name="console-token"]');
const TOKEN = tokenMeta ? tokenMeta.content : "";
const MAX_EVENTS = 200;
const statusLine = document.getElementById("status");

function say(text, bad) {
  statusLine.textContent = text;
  statusLine.className = bad ? "error" : "";
}

function typingIn(section) {
  return section.contains(document.activeElement) && document.activeElement.tagName === "INPUT";
}

// The notes typed on approval rows, by approval id: a refresh puts them back into the new rows.
function typedNotes(section) {
  const notes = new Map();
  for (const row of section.querySelectorAll("tr[data-approval-id]")) {
    const note = row.querySelector("input.note");
    if (note && note.value) notes.set(row.dataset.approvalId, note.value);
  }
  return notes;
}

function putBack(section, notes) {
  for (const row of section.querySelectorAll("tr[data-approval-id]")) {
    const note = row.querySelector("input.note");
    if (note && notes.has(row.dataset.approvalId)) note.value = notes.get(row.dataset.approvalId);
  }
}

// A section's HTML comes from the server, which escaped everything in it. Nothing an operator
// typed is lost to a refresh: none while they type, and a note left on a row outlives it.
async function refresh(section) {
  if (typingIn(section)) return;
  try {
    const response = await fetch(section.dataset.src, {headers: {"Accept": "text/html"}});
    if (response.status === 401) { location.reload(); return; }  // signed out elsewhere, or idle
    const html = await response.text();
    if (typingIn(section)) return;  // they began typing while the section was fetched
    const notes = typedNotes(section);
    section.innerHTML = html;
    putBack(section, notes);
  } catch (error) {
    say("cannot reach the console: " + error, true);
  }
}

function refreshNamed(...ids) {
  for (const id of ids) {
    const section = document.getElementById(id);
    if (section && section.dataset.src) refresh(section);
  }
}

for (const section of document.querySelectorAll("section[data-src]")) {
  const every = Number(section.dataset.every || "10") * 1000;
  setInterval(() => refresh(section), every);
}

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-Aurora-Console-Token": TOKEN},
    body: JSON.stringify(body),
  });
  return {ok: response.ok, status: response.status, html: await response.text()};
}

// Sign-in: the chosen credentials file's text, or the typed name and password; the server
// answers with the session's cookie and the page loads again, now as that person.
const signInForm = document.getElementById("sign-in-form");
if (signInForm) {
  signInForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = document.getElementById("sign-in-file").files[0];
    const body = file ? {creds: await file.text()}
      : {name: document.getElementById("sign-in-name").value,
         password: document.getElementById("sign-in-password").value};
    document.getElementById("sign-in-submit").disabled = true;
    const answer = await post("/sign-in", body);
    document.getElementById("sign-in-submit").disabled = false;
    if (answer.ok) { location.reload(); return; }
    document.getElementById("sign-in-result").innerHTML = answer.html;  // server-rendered and escaped
  });
}

const signOut = document.getElementById("sign-out");
if (signOut) {
  signOut.addEventListener("click", async () => {
    await post("/sign-out", {});
    location.href = "/";
  });
}

// Grant / deny: the same admin call as `aurora approvals grant|deny`, as the signed-in person.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-verb]");
  if (!button) return;
  const row = button.closest("tr");
  const note = row ? row.querySelector("input.note") : null;
  button.disabled = true;
  const id = button.dataset.approval;
  const answer = await post(`/approvals/${encodeURIComponent(id)}/${button.dataset.verb}`,
                            {note: note ? note.value : ""});
  const result = document.createElement("div");
  result.innerHTML = answer.html;  // server-rendered and escaped
  say(result.textContent.trim(), !answer.ok);
  if (note) note.blur();
  refreshNamed("approvals", "tasks", "task");
});

const form = document.getElementById("dry-run-form");
if (form) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const answer = await post("/dry-run", {event: document.getElementById("dry-run-event").value});
    document.getElementById("dry-run-result").innerHTML = answer.html;  // server-rendered and escaped
  });
}

// Live events: each field is set with textContent, never parsed as HTML.
const list = document.getElementById("event-list");
const live = document.getElementById("live");
let pending = null;

function laterRefresh() {
  if (pending) return;
  pending = setTimeout(() => { pending = null; refreshNamed("approvals", "tasks", "task"); }, 300);
}

function addEvent(item) {
  const entry = document.createElement("li");
  entry.className = "event";
  entry.dataset.type = item.type;
  entry.dataset.id = item.id;
  for (const field of ["time", "type", "app", "detail"]) {
    const span = document.createElement("span");
    span.className = field;
    span.textContent = item[field];
    entry.append(span, " ");
  }
  if (item.synthetic) entry.classList.add("synthetic");
  entry.title = item.subject;
  list.prepend(entry);
  while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
  if (item.type.startsWith("task.") || item.type.startsWith("approval.")) laterRefresh();
}

if (list && live) {
  const source = new EventSource("/events/stream");
  source.addEventListener("ready", () => { live.dataset.state = "open"; live.textContent = "live"; });
  source.addEventListener("amp", (message) => addEvent(JSON.parse(message.data)));
  source.addEventListener("trouble", (message) => {
    live.dataset.state = "trouble";
    live.textContent = JSON.parse(message.data).error;
  });
  source.onerror = () => {
    if (live.dataset.state !== "trouble") {
      live.dataset.state = "reconnecting";
      live.textContent = "reconnecting…";
    }
  };
}
