// The chat page: shows GET /conversations/<id> (polled) and turns what the person does into
// POST /events. Plain DOM, no framework, no build step; text is always set as text, never as HTML.
"use strict";

const POLL_MS = 500;
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(window.location.search);
let conversation = params.get("c") || $("conversation").value;
let user = params.get("u") || $("user").value;
let shown = "";  // the last view rendered, as JSON: re-render only when it changed

// The page's own words in its language: `?lang=zh-CN|en`, else the browser's (Chinese for zh-*).
// What the platform says in the conversation comes in the conversation's language already.
const LANG = (params.get("lang") || navigator.language || "en").toLowerCase().startsWith("zh") ? "zh-CN" : "en";
const WORDS = {
  "en": {
    title: "Aurora chat", conversation: "Conversation", you: "You are", open: "Open",
    empty: "Nothing in this conversation yet: say something.", placeholder: "Type a message…", send: "Send",
    join: "Join this group", note: "Friend request note", befriend: "Send a friend request",
    answer: "Answer", yourAnswer: "Your answer", waiting: "waiting for an answer",
    answered: (value, user) => `answered “${value}” by ${user}`, deleted: "deleted",
    joined: (user) => `${user} joined the group`, gave: (user, value) => `${user} answered “${value}”`,
    requested: (user, note) => `${user} sent a friend request${note ? ` (“${note}”)` : ""}`,
    accepted: "accepted", declined: "declined", notConnected: "the platform is not connected to the chat app yet: retrying…",
    unreachable: (error) => `the chat app cannot be reached: ${error}`, status: (code) => `the app answered ${code}`,
  },
  "zh-CN": {
    title: "Aurora 聊天", conversation: "会话", you: "你是", open: "打开",
    empty: "这个会话还没有消息：说点什么吧。", placeholder: "输入消息…", send: "发送",
    join: "加入群组", note: "好友申请附言", befriend: "发送好友申请",
    answer: "回答", yourAnswer: "你的回答", waiting: "等待回复",
    answered: (value, user) => `${user} 已回答“${value}”`, deleted: "已撤回",
    joined: (user) => `${user} 加入了群组`, gave: (user, value) => `${user} 回答“${value}”`,
    requested: (user, note) => `${user} 发送了好友申请${note ? `（“${note}”）` : ""}`,
    accepted: "已同意", declined: "已拒绝", notConnected: "平台还没有连接到聊天应用：正在重试…",
    unreachable: (error) => `无法连接聊天应用：${error}`, status: (code) => `聊天应用返回 ${code}`,
  },
}[LANG];

function translatePage() {
  document.documentElement.lang = LANG;
  document.title = WORDS.title;
  $("title").textContent = WORDS.title;
  $("conversation-label").firstChild.textContent = `${WORDS.conversation} `;
  $("user-label").firstChild.textContent = `${WORDS.you} `;
  $("open").textContent = WORDS.open;
  $("empty").textContent = WORDS.empty;
  $("text").placeholder = WORDS.placeholder;
  $("send").textContent = WORDS.send;
  $("join").textContent = WORDS.join;
  $("note").placeholder = WORDS.note;
  $("befriend").textContent = WORDS.befriend;
}
translatePage();

$("conversation").value = conversation;
$("user").value = user;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function time(at) {
  const when = new Date(at);
  return Number.isNaN(when.getTime()) ? "" : when.toLocaleTimeString();
}

function status(text) {
  $("status").textContent = text || "";
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The page signs in as the user it plays: the server keeps who that is in an HttpOnly session
// cookie, and every event this page posts is that user's. An id another page holds is refused.
async function signIn(wanted) {
  try {
    const reply = await fetch("/session", {
      method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify({user_id: wanted}),
    });
    const answer = await reply.json().catch(() => ({}));
    if (!reply.ok) {
      status((answer.error && answer.error.message) || WORDS.status(reply.status));
      return false;
    }
    user = answer.user_id;
    $("user").value = user;
    return true;
  } catch (error) {
    status(WORDS.unreachable(error));
    return false;
  }
}

async function post(body) {
  try {
    let reply = null;
    // 503: the platform has not connected to the app yet (it is starting): wait as it asks, a while.
    // 401: the app forgot this page's session (it was restarted): sign in again, once.
    let signedInAgain = false;
    for (let attempt = 0; attempt < 20; attempt += 1) {
      reply = await fetch("/events", {
        method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body),
      });
      if (reply.status === 401 && !signedInAgain) {
        signedInAgain = true;
        if (await signIn(user)) continue;
        return null;
      }
      if (reply.status !== 503) break;
      status(WORDS.notConnected);
      await sleep(1000 * Number(reply.headers.get("retry-after") || 1));
    }
    const answer = await reply.json().catch(() => ({}));
    if (!reply.ok) {
      status((answer.error && answer.error.message) || WORDS.status(reply.status));
      return null;
    }
    status("");
    await refresh();
    return answer;
  } catch (error) {
    status(WORDS.unreachable(error));
    return null;
  }
}

function renderQuestion(item) {
  const question = item.question;
  const box = el("div", "question");
  box.dataset.interactionId = question.interaction_id;
  box.appendChild(el("div", "text", question.question));
  const options = el("div", "options");
  const answered = question.answer ? String(question.answer.value).trim() : null;
  for (const option of question.options) {
    const button = el("button", "option", `${option.number}. ${option.label}`);
    button.type = "button";
    button.dataset.number = String(option.number);
    if (answered !== null) {
      button.disabled = true;
      if (answered === String(option.number) || answered === option.label) button.classList.add("chosen");
    } else {
      button.addEventListener("click", () => post({
        type: "interaction.submitted", session_id: conversation, user_id: user,
        interaction_id: question.interaction_id, value: String(option.number),
      }));
    }
    options.appendChild(button);
  }
  box.appendChild(options);
  if (question.options.length === 0 && answered === null) {
    const form = el("form", "free-answer");
    const input = el("input");
    input.placeholder = WORDS.yourAnswer;
    form.append(input, el("button", null, WORDS.answer));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (input.value.trim()) {
        post({type: "interaction.submitted", session_id: conversation, user_id: user,
              interaction_id: question.interaction_id, value: input.value});
      }
    });
    box.appendChild(form);
  }
  // The interaction id stays out of sight (it is the box's data-interaction-id): ids are for the
  // console and the CLI, not for the person chatting.
  const meta = answered === null ? WORDS.waiting : WORDS.answered(answered, question.answer.user_id);
  box.appendChild(el("div", "meta answer-state", meta));
  return box;
}

function renderMessage(item) {
  const li = el("li", `item message ${item.direction}${item.deleted ? " deleted" : ""}`);
  li.dataset.messageId = item.message_id || "";
  if (item.question) {
    li.classList.add("asks");
    li.appendChild(renderQuestion(item));
  } else {
    li.appendChild(el("div", "text", item.text));
  }
  if (item.reactions.length) li.appendChild(el("div", "reactions", item.reactions.join(" ")));
  const who = item.direction === "in" ? item.user_id : "bot";
  li.appendChild(el("div", "meta", `${who} · ${time(item.at)}${item.deleted ? ` · ${WORDS.deleted}` : ""}`));
  return li;
}

function renderNotice(item) {
  const li = el("li", `item notice ${item.kind.replace("_", "-")}`);
  if (item.kind === "member_joined") {
    li.textContent = WORDS.joined(item.user_id);
  } else if (item.kind === "answer") {
    li.textContent = WORDS.gave(item.user_id, item.value);
  } else if (item.kind === "friend_request") {
    li.dataset.requestId = item.request_id;
    const response = item.response;
    const state = !response ? WORDS.waiting
      : `${response.accept ? WORDS.accepted : WORDS.declined}${response.message ? `: ${response.message}` : ""}`;
    li.textContent = `${WORDS.requested(item.user_id, item.note)} — ${state}`;
  }
  li.appendChild(el("span", "meta", ` · ${time(item.at)}`));
  return li;
}

function render(view) {
  const list = $("timeline");
  const atBottom = list.parentElement.scrollHeight - list.parentElement.scrollTop
    - list.parentElement.clientHeight < 40;
  list.replaceChildren(...view.items.map((item) => (item.kind === "message" ? renderMessage(item)
    : renderNotice(item))));
  $("empty").hidden = view.items.length > 0;
  if (atBottom) list.parentElement.scrollTop = list.parentElement.scrollHeight;
}

async function refresh() {
  try {
    const reply = await fetch(`/conversations/${encodeURIComponent(conversation)}`, {cache: "no-store"});
    if (!reply.ok) throw new Error(`${reply.status}`);
    const text = await reply.text();
    if (text !== shown) {
      shown = text;
      render(JSON.parse(text));
    }
  } catch (error) {
    status(WORDS.unreachable(error));
  }
}

$("who").addEventListener("submit", async (event) => {
  event.preventDefault();
  conversation = $("conversation").value.trim();
  const wanted = $("user").value.trim();
  if (!(await signIn(wanted))) {
    $("user").value = user;
    return;
  }
  status("");
  const url = new URL(window.location.href);
  url.searchParams.set("c", conversation);
  url.searchParams.set("u", user);
  window.history.replaceState(null, "", url);
  shown = "";
  refresh();
});

$("composer").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("text").value;
  if (!text.trim()) return;
  if (await post({type: "message.received", session_id: conversation, user_id: user, text})) $("text").value = "";
});

$("join").addEventListener("click", () => post({type: "group.member_joined", session_id: conversation, user_id: user}));

$("befriend").addEventListener("click", () => post({
  type: "friend.request_received", user_id: user, note: $("note").value, shown_in: conversation,
}));

signIn(user).then(() => {
  refresh();
  setInterval(refresh, POLL_MS);
});
