// The playground page's script. It keeps no state of the lock service: each
// click calls the WebAssembly session (web/playground.hpp), which returns
// the whole state as JSON, and draw() redraws the page from it. Text that a
// user typed is always set with textContent, never parsed as HTML; the
// timeline's SVG comes from the session, which escapes what it draws.
"use strict";

// The guided examples (web/examples/), in the order a newcomer reads them.
const EXAMPLES = [
  { file: "fifo-hand-off.vec", title: "The FIFO hand-off", bug: "none" },
  { file: "expiry-takeover.vec", title: "An expiry take-over", bug: "none" },
  { file: "release-expired-unswept.vec", title: "Releasing an expired, unswept key: R, not N", bug: "none" },
  { file: "lifo-bug-breaks-fifo.vec", title: "The LIFO bug breaks FIFO", bug: "lifo-handoff" },
];
// Owners for the prepared requests, one per column.
const OWNERS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "ken", "lee"];

const $ = (selector) => document.querySelector(selector);
let playground = null;
let state = null;
let storyTitle = "";

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// Calls the session and draws what it returns.
function act(call) {
  state = JSON.parse(call());
  draw();
  return state;
}

function draw() {
  $("#now").textContent = String(state.now);
  $("#next-due-at").textContent = state.next_due === null ? "none" : `${state.next_due} ms`;
  $("#error").textContent = state.error || "";
  $("#bug").value = state.bug;
  drawColumns();
  drawDivergence();
  drawKeys();
  drawStory();
  $("#timeline").innerHTML = state.timeline;
}

function columnOf(name) {
  for (const column of document.querySelectorAll(".column")) {
    if (column.dataset.connection === name) return column;
  }
  return null;
}

function createColumn(name, index) {
  const column = element("div", "column");
  column.dataset.connection = name;
  const head = element("h3");
  head.append(element("span", "name", name), element("span", "owner", OWNERS[index % OWNERS.length]));
  const close = element("button", "close", "close");
  close.type = "button";
  close.addEventListener("click", () => act(() => playground.close(name)));
  head.append(close);
  const form = element("form");
  const input = element("input", "request");
  input.placeholder = "A key owner lease_ms wait_ms";
  input.setAttribute("aria-label", `request on ${name}`);
  const send = element("button", "send", "send");
  send.type = "submit";
  form.append(input, send);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const result = act(() => playground.send(name, input.value));
    if (!result.error) input.value = "";
  });
  column.append(head, form, element("div", "prepared"), element("ol", "log"));
  $("#columns").append(column);
  return column;
}

function drawColumns() {
  const showCluster = $("#show-cluster").checked;
  const divergence = state.divergence;
  const engineOnly = new Set(divergence ? divergence.engine_only : []);
  const modelOnly = new Set(divergence ? divergence.model_only : []);
  const known = new Set(state.connections.map((c) => c.name));
  for (const column of document.querySelectorAll(".column")) {
    if (!known.has(column.dataset.connection)) column.remove();
  }
  state.connections.forEach((connection, index) => {
    const column = columnOf(connection.name) || createColumn(connection.name, index);
    column.classList.toggle("closed", !connection.open);
    column.querySelector("button.close").disabled = !connection.open;
    const log = column.querySelector(".log");
    log.replaceChildren();
    const owner = column.querySelector(".owner").textContent;
    let lastToken = null;
    state.entries.forEach((entry, i) => {
      if (entry.connection !== connection.name) return;
      let item = null;
      if (entry.kind === "request") {
        item = element("li", "entry request");
        item.append(element("span", "at", `${entry.at} ms \u2192 `), element("span", "text", entry.line));
      } else if (entry.kind === "close") {
        item = element("li", "entry close", `${entry.at} ms: ${entry.by_server ? "closed by the server" : "closed"}`);
      } else if (entry.source === "engine" || (entry.source === "cluster" && showCluster) || modelOnly.has(i)) {
        item = element("li", `entry response ${entry.source} kind-${entry.line.charAt(0)}`);
        item.append(element("span", "at", `${entry.at} ms \u2190 `), element("span", "text", entry.line));
        if (engineOnly.has(i)) item.classList.add("diverge");
        if (modelOnly.has(i)) item.classList.add("missing");
        if (divergence && entry.source === "engine" && entry.at > divergence.at) item.classList.add("after");
        if (entry.source === "engine" && entry.line.startsWith("A ")) lastToken = entry.line.split(" ")[1];
      }
      if (!item) return;
      item.dataset.at = String(entry.at);
      item.dataset.kind = entry.kind;
      item.dataset.index = String(i);
      if (entry.source) item.dataset.source = entry.source;
      log.append(item);
    });
    log.scrollTop = log.scrollHeight;
    drawPrepared(column, connection.name, owner, lastToken);
  });
}

// Requests a click away: try once, wait in the queue, release the last token.
function drawPrepared(column, name, owner, lastToken) {
  const key = $("#prepared-key").value.trim() || "printer";
  const lines = [`A ${key} ${owner} 5000 0`, `A ${key} ${owner} 5000 10000`];
  if (lastToken) lines.push(`R ${key} ${lastToken}`);
  const prepared = column.querySelector(".prepared");
  prepared.replaceChildren();
  for (const line of lines) {
    const button = element("button", "prepared-request", line);
    button.type = "button";
    button.addEventListener("click", () => act(() => playground.send(name, line)));
    prepared.append(button);
  }
}

function drawDivergence() {
  const box = $("#divergence");
  const divergence = state.divergence;
  box.hidden = !divergence;
  box.replaceChildren();
  if (divergence) {
    const describe = (indices) => indices.map((i) => `${state.entries[i].line} on ${state.entries[i].connection}`).join(", ") || "nothing";
    box.append(element("strong", "", `The engine first differs from the model at ${divergence.at} ms. `));
    box.append(element("span", "engine-sent", `The engine sent: ${describe(divergence.engine_only)}. `));
    box.append(element("span", "model-sends", `The model sends: ${describe(divergence.model_only)}.`));
    if (state.bug !== "none") {
      box.append(element("p", "bug-story", `Injected bug ${state.bug}: ${state.bug_story}.`));
    }
  }
  const failures = Object.entries(state.failures);
  const failureBox = $("#failures");
  failureBox.hidden = failures.length === 0;
  failureBox.replaceChildren(...failures.map(([, message]) => element("p", "", message)));
}

function drawKeys() {
  const list = $("#keys");
  list.replaceChildren();
  for (const key of state.keys) {
    const item = element("div", "key-state");
    item.dataset.key = key.key;
    item.append(element("span", "name", key.key), document.createTextNode(" held by "));
    const holder = element("span", key.expired ? "holder expired" : "holder",
      `${key.holder} #${key.token}`);
    item.append(holder);
    item.append(document.createTextNode(key.expired
      ? ` since ${key.granted_at} ms; lease over at ${key.expiry} ms: expired, not yet swept`
      : ` since ${key.granted_at} ms, until ${key.expiry} ms`));
    if (key.queue.length > 0) {
      const queue = element("ol", "queue");
      for (const waiter of key.queue) {
        queue.append(element("li", "", `${waiter.owner} on ${waiter.connection}: lease ${waiter.lease_ms} ms, waits until ${waiter.deadline} ms`));
      }
      item.append(element("div", "queue-title", "queue, oldest first:"), queue);
    } else {
      item.append(element("div", "queue-title", "nobody waits"));
    }
    list.append(item);
  }
  $("#next-sweep").textContent = `next sweep at ${state.next_sweep} ms (every ${state.sweep_ms} ms)` +
    (state.next_due === null ? "" : `; next due at ${state.next_due} ms`);
}

function drawStory() {
  const story = state.story;
  $("#story").hidden = !story;
  if (!story) return;
  $("#story-title").textContent = storyTitle || story.name;
  $("#story-intro").textContent = story.introduction;
  const status = $("#story-status");
  const total = story.steps.length;
  if (story.failed) {
    const failure = story.reports[story.reports.length - 1];
    status.textContent = `\u2717 failed at line ${failure.line}`;
    status.className = "fail";
    status.dataset.state = "failed";
  } else if (story.finished) {
    status.textContent = `\u2713 every expect held (${total} steps)`;
    status.className = "ok";
    status.dataset.state = "passed";
  } else {
    status.textContent = `step ${story.position} of ${total}`;
    status.className = "";
    status.dataset.state = "running";
  }
  $("#story-next").disabled = story.finished;
  $("#story-run").disabled = story.finished;

  const log = $("#story-log");
  log.replaceChildren();
  const passed = new Set();
  const done = new Set();
  let failedLine = 0;
  for (const report of story.reports) {
    const step = story.steps[report.step];
    const item = element("li", report.ok ? "ok" : "fail");
    item.append(element("span", "action", report.action));
    if (step.narration) item.append(element("span", "narration", step.narration));
    if (step.kind === "check" && report.ok) {
      item.append(element("span", "verdict", step.expect_lines.length === 0
        ? " \u2713 nothing else was sent"
        : ` \u2713 line${step.expect_lines.length === 1 ? "" : "s"} ${step.expect_lines.join(", ")} held`));
      step.expect_lines.forEach((line) => passed.add(line));
    }
    if (!report.ok) {
      item.append(element("span", "verdict", ` \u2717 line ${report.line}: ${report.message}`));
      failedLine = report.line;
    }
    if (step.line) done.add(step.line);
    log.append(item);
  }
  log.scrollTop = log.scrollHeight;

  const next = story.finished ? null : story.steps[story.position];
  const nextLines = new Set(next ? (next.kind === "check" ? next.expect_lines : [next.line]) : []);
  const source = $("#story-source");
  source.replaceChildren();
  story.text.split("\n").forEach((text, index) => {
    const number = index + 1;
    if (number === story.text.split("\n").length && text === "") return;
    const line = element("span", "line", `${String(number).padStart(3)}  ${text}`);
    line.dataset.line = String(number);
    if (done.has(number)) line.classList.add("done");
    if (passed.has(number)) line.classList.add("passed");
    if (number === failedLine) line.classList.add("failed");
    if (nextLines.has(number)) line.classList.add("next");
    source.append(line);
  });
}

function openStory(name, text, title) {
  storyTitle = title || name;
  act(() => playground.loadStory(name, text));
  $("#show-cluster").checked = state.mode === "cluster";
  $("#config").value = "";
  draw();
}

function exportSession() {
  const text = playground.exportVector(state.mode);
  $("#export-section").hidden = false;
  $("#export-text").value = text;
  const link = element("a");
  link.href = URL.createObjectURL(new Blob([text], { type: "text/plain" }));
  link.download = "playground-session.vec";
  document.body.append(link);
  link.click();
  link.remove();
}

function setup() {
  const bugs = JSON.parse(wasm.Playground.bugs());
  const bugSelect = $("#bug");
  bugSelect.append(new Option("none (the correct engine)", "none"));
  for (const bug of bugs) bugSelect.append(new Option(`${bug.name}: ${bug.story}`, bug.name));
  bugSelect.addEventListener("change", () => act(() => playground.setBug(bugSelect.value)));

  for (const example of EXAMPLES) {
    const bundled = window.LOCKSTEP_EXAMPLES.find((e) => e.name === example.file);
    const button = element("button", "example", example.title);
    button.type = "button";
    button.dataset.example = example.file;
    button.addEventListener("click", () => {
      act(() => playground.setBug(example.bug));
      openStory(example.file, bundled.text, example.title);
    });
    $("#examples").append(button);
  }
  const vectorSelect = $("#vector-select");
  for (const vector of window.LOCKSTEP_VECTORS) vectorSelect.append(new Option(vector.name, vector.name));
  $("#open-vector").addEventListener("click", () => {
    const vector = window.LOCKSTEP_VECTORS.find((v) => v.name === vectorSelect.value);
    openStory(vector.name, vector.text, `tests/vectors/${vector.name}`);
  });

  $("#step").addEventListener("click", () => act(() => playground.step(Number($("#step-ms").value))));
  $("#next-due").addEventListener("click", () => act(() => playground.toNextDue()));
  $("#reset").addEventListener("click", () => {
    storyTitle = "";
    act(() => playground.reset($("#config").value.trim()));
    $("#show-cluster").checked = state.mode === "cluster";
    draw();
  });
  $("#show-cluster").addEventListener("change", draw);
  $("#prepared-key").addEventListener("input", draw);
  $("#add-connection").addEventListener("click", () => act(() => playground.openConnection()));
  $("#export").addEventListener("click", exportSession);
  $("#story-next").addEventListener("click", () => act(() => playground.storyNext()));
  $("#story-run").addEventListener("click", () => {
    while (state.story && !state.story.finished) act(() => playground.storyNext());
  });
}

let wasm = null;
createLockstep().then((module) => {
  wasm = module;
  playground = new module.Playground();
  setup();
  // Two connections to start with: enough for a queue.
  act(() => playground.openConnection());
  act(() => playground.openConnection());
  document.body.dataset.ready = "1";
});
