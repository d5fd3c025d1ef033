/* global document, location, history, requestAnimationFrame, window */
/**
 * The two-worlds page: wires the DOM to the demo's page server (server.ts).
 *
 *   token (URL fragment, kept in sessionStorage)
 *     -> the stream (/api/stream, read with fetch + sse.js): a snapshot, then batched changes
 *       -> Worlds (model.js): rows, one per cloud name, each with what links or breaks it
 *         -> RowList (rows.js): only the rows in view are in the DOM
 *   a row picked -> its facts, its actions, its story (its Events, and /api/why: the controller's decisions)
 *   buttons and forms -> the page server, which acts with the demo's credentials -> the notice line
 *
 * Nothing is polled but the story of the picked row: every change on screen comes from the stream.
 *
 * SAFETY: names, tags, messages come from anyone who can write to either world. They reach the page through
 * textContent, setAttribute or createElementNS only (never innerHTML), and the page's Content-Security-Policy
 * forbids inline script besides.
 */
import { drawShape } from "./draw.js";
import { switchesOf, withSwitch } from "./faults.js";
import { VERDICTS, Worlds, countVerdicts, filterRows, highlightedKeys, isAbout } from "./model.js";
import { RowList } from "./rows.js";
import { createSseParser } from "./sse.js";

const TOKEN_KEY = "shapes-view.token";
/** Events kept on the page. */
const EVENTS_KEPT = 500;
/** Timeline lines drawn. */
const TIMELINE_LINES = 200;
/** How often the picked row's decision history is read again while it is open. */
const STORY_REFRESH_MS = 3_000;

/** @param {string} id */
const byId = (id) => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`cannot find #${id} in the page`);
  return el;
};
/** @param {string} id */
const input = (id) => /** @type {HTMLInputElement} */ (byId(id));
/** @param {string} id */
const select = (id) => /** @type {HTMLSelectElement} */ (byId(id));

/** What each color picker was last set from: the row and the object's color. */
const pickerShows = new Map();

/**
 * Sets the picker `id` to `color` when the picked row or that color changed since it was last set; leaves
 * it alone otherwise (a person's choice survives redraws).
 * @param {string} id
 * @param {string} key
 * @param {string | undefined} color
 */
function syncPicker(id, key, color) {
  if (color === undefined) return;
  const from = `${key}|${color}`;
  if (pickerShows.get(id) === from || document.activeElement === select(id)) return;
  pickerShows.set(id, from);
  select(id).value = color;
}
/** @param {string} id */
const button = (id) => /** @type {HTMLButtonElement} */ (byId(id));

/**
 * @typedef {import("./model.js").Row} Row
 * @typedef {import("../wire.ts").ViewEvent} ViewEvent
 * @typedef {import("../wire.ts").ControllerView} ControllerView
 * @typedef {import("../wire.ts").ViewTourMoment} ViewTourMoment
 */

const state = {
  worlds: new Worlds(),
  /** @type {ViewEvent[]} oldest first */
  events: [],
  /** @type {ControllerView} */
  controller: { state: "stopped", pid: undefined, answersWhy: false },
  /** @type {ViewTourMoment | null} */
  tour: null,
  /** @type {{ rules: Record<string, unknown>[] }} */
  faults: { rules: [] },
  /** @type {string | undefined} the picked row's key */
  selected: undefined,
  filter: { text: "", /** @type {Set<string>} */ verdicts: new Set() },
  /** @type {Row[]} the rows shown (filtered) */
  shown: [],
  rendered: false,
};

void main();

async function main() {
  const token = takeToken();
  if (!token) {
    byId("signin").hidden = false;
    showConnection("signed-out", "no token");
    return;
  }
  /** @type {{ types: string[], colors: string[] }} */
  let config;
  try {
    const res = await fetch("/view/config.json");
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    config = await res.json();
  } catch (error) {
    showConnection("error", `cannot load the page's configuration: ${String(error)}`);
    return;
  }
  for (const id of ["apply-type", "foreign-type"]) fillSelect(select(id), config.types);
  for (const id of ["apply-color", "foreign-color", "shape-color", "cloud-color"])
    fillSelect(select(id), config.colors);

  const api = apiClient(token);
  const list = new RowList(byId("rows"), byId("rows-space"));
  const render = scheduler(() => renderAll(list));
  wireFilter(render);
  wireKeyboard(list);
  wireActions(api);
  byId("page").hidden = false;

  await follow(token, {
    snapshot: (snapshot) => {
      state.worlds.reset(snapshot);
      state.events = snapshot.events;
      state.controller = snapshot.controller;
      state.tour = snapshot.tour;
      state.faults = snapshot.faults;
      showConnection(snapshot.synced ? "live" : "listing", snapshot.synced ? "live" : "listing both worlds…");
      renderAll(list);
      if (!state.rendered) {
        state.rendered = true;
        performance.mark("view:first-render");
      }
      revealTour(list);
    },
    changes: (changes) => {
      performance.mark("view:changes-start");
      state.worlds.apply(changes);
      if (changes.events.length > 0) {
        state.events = [...state.events, ...changes.events].slice(-EVENTS_KEPT);
      }
      renderAll(list);
      performance.measure("view:changes", "view:changes-start");
      if (state.selected && changes.events.some((e) => isSelected(e))) story.refresh(api);
    },
    controller: (controller) => {
      state.controller = controller;
      renderController();
    },
    tour: (moment) => {
      state.tour = moment;
      render();
      revealTour(list);
    },
    faults: (faults) => {
      state.faults = faults;
      renderFaults();
    },
  });
}

/**
 * The page's token, from the URL fragment (then removed from the address bar, and kept in this tab only)
 * or from this tab's storage.
 *
 * @returns {string | undefined}
 */
function takeToken() {
  const fromUrl = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

/**
 * Follows the stream for ever: reconnects after a drop (the server sends a fresh snapshot each time).
 *
 * @param {string} token
 * @param {Record<string, (data: any) => void>} handlers
 */
async function follow(token, handlers) {
  let delayMs = 500;
  for (;;) {
    try {
      const res = await fetch("/api/stream", { headers: { authorization: `Bearer ${token}` } });
      if (res.status === 401) {
        sessionStorage.removeItem(TOKEN_KEY);
        byId("signin").hidden = false;
        showConnection("signed-out", "the token was refused");
        return;
      }
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      delayMs = 500;
      const parser = createSseParser((message) => {
        const handler = handlers[message.event];
        if (handler) handler(JSON.parse(message.data));
      });
      const decoder = new TextDecoder();
      const reader = res.body.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(decoder.decode(value, { stream: true }));
      }
      showConnection("retrying", "the demo closed the stream: reconnecting…");
    } catch (error) {
      showConnection("retrying", `cannot reach the demo (${String(error)}): retrying…`);
    }
    await new Promise((resolve) => setTimeout(resolve, delayMs));
    delayMs = Math.min(delayMs * 2, 5_000);
  }
}

/**
 * Calls `fn` once per animation frame at most.
 *
 * @param {() => void} fn
 */
function scheduler(fn) {
  let scheduled = false;
  return () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      fn();
    });
  };
}

/** @param {RowList} list */
function renderAll(list) {
  const rows = state.worlds.rows();
  state.shown = filterRows(rows, state.filter);
  list.show(state.shown, {
    ownerId: state.worlds.ownerId,
    selected: state.selected,
    highlighted: highlightedKeys(rows, state.tour),
  });
  byId("empty").hidden = rows.length > 0;
  renderVerdicts(rows);
  renderTour();
  renderController();
  renderFaults();
  renderDetail();
  renderTimeline();
}

/** @param {Row[]} rows */
function renderVerdicts(rows) {
  const counts = countVerdicts(rows);
  const items = VERDICTS.map(({ verdict, label, problem }) => {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.verdict = verdict;
    b.className = `chip${problem ? " problem" : ""}`;
    b.setAttribute("aria-pressed", String(state.filter.verdicts.has(verdict)));
    b.textContent = `${label} ${counts[verdict] ?? 0}`;
    li.append(b);
    return li;
  });
  const all = document.createElement("li");
  const total = document.createElement("span");
  total.className = "total";
  total.textContent = `${state.worlds.shapes.size} Shapes · ${state.worlds.shapeRefs.size} ShapeRefs · ${state.worlds.cloud.size} cloud shapes`;
  all.append(total);
  byId("verdicts").replaceChildren(all, ...items);
}

/** @param {() => void} render */
function wireFilter(render) {
  input("filter").addEventListener("input", () => {
    state.filter.text = input("filter").value;
    render();
  });
  byId("verdicts").addEventListener("click", (event) => {
    const target = /** @type {HTMLElement} */ (event.target);
    const verdict = target.closest("button")?.dataset.verdict;
    if (!verdict) return;
    if (state.filter.verdicts.has(verdict)) state.filter.verdicts.delete(verdict);
    else state.filter.verdicts.add(verdict);
    render();
  });
}

/**
 * Up and down move the pick, Page Up/Down by ten, Home and End to the ends, Escape drops it; a click picks.
 *
 * @param {RowList} list
 */
function wireKeyboard(list) {
  const rows = byId("rows");
  const pick = (/** @type {number} */ index) => {
    const row = list.at(Math.max(0, Math.min(list.length - 1, index)));
    if (!row) return;
    state.selected = row.key;
    story.open(row.key);
    renderAll(list);
    list.reveal(list.indexOf(row.key));
  };
  rows.addEventListener("keydown", (event) => {
    const current = list.indexOf(state.selected);
    const moves = {
      ArrowDown: current + 1,
      ArrowUp: current - 1,
      PageDown: current + 10,
      PageUp: current - 10,
      Home: 0,
      End: list.length - 1,
    };
    if (Object.hasOwn(moves, event.key)) {
      event.preventDefault();
      pick(current === -1 && event.key !== "End" ? 0 : moves[/** @type {keyof moves} */ (event.key)]);
    } else if (event.key === "Enter") {
      event.preventDefault();
      if (current === -1) pick(0);
      else byId("detail").scrollIntoView({ block: "nearest" });
    } else if (event.key === "Escape") {
      state.selected = undefined;
      story.open(undefined);
      renderAll(list);
    }
  });
  rows.addEventListener("click", (event) => {
    const key = /** @type {HTMLElement} */ (event.target).closest(".row")?.getAttribute("data-key");
    if (!key) return;
    pick(list.indexOf(key));
    rows.focus();
  });
  byId("timeline").addEventListener("click", (event) => {
    const key = /** @type {HTMLElement} */ (event.target).closest("li")?.getAttribute("data-key");
    if (!key) return;
    if (list.indexOf(key) === -1) {
      // picked from the timeline but filtered out: show it anyway
      state.filter = { text: "", verdicts: new Set() };
      input("filter").value = "";
      renderAll(list);
    }
    pick(list.indexOf(key));
  });
}

/** The picked row's story: its Events (from the stream) and its decision history (read from the controller). */
const story = {
  /** @type {string | undefined} */
  key: undefined,
  /** @type {{ entries: any[] } | undefined} */
  history: undefined,
  note: "",
  /** @type {ReturnType<typeof setInterval> | undefined} */
  timer: undefined,
  /** @type {ReturnType<typeof apiClient> | undefined} */
  api: undefined,

  /** @param {string | undefined} key */
  open(key) {
    if (key === this.key) return;
    this.key = key;
    this.history = undefined;
    this.note = "";
    clearInterval(this.timer);
    if (key && this.api) {
      const api = this.api;
      void this.refresh(api);
      this.timer = setInterval(() => void this.refresh(api), STORY_REFRESH_MS);
    }
  },

  /** @param {ReturnType<typeof apiClient>} api */
  async refresh(api) {
    const key = this.key;
    const row = state.shown.find((r) => r.key === key) ?? state.worlds.rows().find((r) => r.key === key);
    const subject = row?.shape ?? row?.shapeRef?.shape;
    if (!key || !subject) {
      this.note = "No Shape: the controller keeps decisions per Shape; this row's Events are below.";
      renderDetail();
      return;
    }
    const answer = await api.get(
      `/api/why/${encodeURIComponent(subject.namespace)}/${encodeURIComponent(subject.name)}`,
    );
    if (this.key !== key) return;
    if (answer.ok) {
      this.history = answer.body;
      this.note = "The controller's Events about it, and its last reconciles of it (from its memory: /why).";
    } else {
      this.history = undefined;
      this.note = `Its Events only: ${answer.detail}`;
    }
    renderDetail();
  },
};

/** @param {ViewEvent} e */
function isSelected(e) {
  const row = state.shown.find((r) => r.key === state.selected);
  return row !== undefined && isAbout(row, e);
}

function selectedRow() {
  return state.worlds.rows().find((r) => r.key === state.selected);
}

function renderDetail() {
  const row = selectedRow();
  byId("detail-body").hidden = !row;
  byId("detail-why").textContent = row
    ? row.why
    : "Click a row (or use the arrow keys and Enter) to see its Shape, its ShapeRef, its cloud shape, and its story: the controller's Events and decisions.";
  byId("detail-title").textContent = row ? row.key : "Pick a row";
  if (!row) return;
  byId("detail-title").dataset.verdict = row.verdict;
  const { shape, shapeRef, cloud } = row;
  facts(
    byId("detail-shape"),
    "Shape",
    shape && [
      ["name", `${shape.namespace}/${shape.name}`],
      ["uid", shape.uid],
      [
        "spec",
        `${shape.color} ${shape.type}${shape.size === undefined ? "" : ` size ${shape.size}`}, deletionPolicy ${shape.deletionPolicy}`,
      ],
      ["generation", `${shape.generation} (observed ${shape.observedGeneration ?? "not yet"})`],
      [
        "Ready",
        shape.ready
          ? `${shape.ready.status} ${shape.ready.reason}: ${shape.ready.message}`
          : "not reported yet",
      ],
      [
        "Synced",
        shape.synced
          ? `${shape.synced.status} ${shape.synced.reason}: ${shape.synced.message}`
          : "not reported yet",
      ],
      ["finalizers", shape.finalizers.join(", ") || "none"],
      ["deletion", shape.deletionTimestamp ? `requested ${shape.deletionTimestamp}` : "not requested"],
      ["paused", shape.paused ? "yes" : "no"],
      ["management policies", shape.managementPolicies.join(", ")],
      ["adoption policy", shape.adoptionPolicy ?? "none (a shape without our owner tag is left alone)"],
      ["cloud id", shape.cloudId ?? "none recorded"],
      ["drift repairs", String(shape.driftRepairs)],
    ],
  );
  facts(
    byId("detail-ref"),
    "ShapeRef",
    shapeRef && [
      ["name", shapeRef.name],
      ["phase", shapeRef.phase ?? "no status: the controller writes none (reads as Pending)"],
      ["cloud id", shapeRef.cloudId ?? "not in the ShapeRef (the Shape's status has it)"],
      ["for", `${shapeRef.shape.namespace}/${shapeRef.shape.name} (uid ${shapeRef.shape.uid})`],
      ["owner", shapeRef.owner ?? "?"],
    ],
  );
  const drawing = byId("detail-drawing");
  drawing.replaceChildren(...(cloud ? [drawShape(document, cloud)] : []));
  facts(
    byId("detail-cloud"),
    "Cloud shape",
    cloud && [
      ["id", cloud.id],
      ["name", cloud.name],
      ["shape", `${cloud.color} ${cloud.type}`],
      ["revision", String(cloud.revision)],
      [
        "tags",
        Object.entries(cloud.tags)
          .map(([k, v]) => `${k}=${v}`)
          .join(", ") || "none",
      ],
    ],
  );

  button("shape-recolor").disabled = !shape || Boolean(shape.deletionTimestamp);
  button("shape-pause").disabled = !shape || Boolean(shape.deletionTimestamp);
  button("shape-pause").textContent = shape?.paused ? "Resume" : "Pause";
  button("shape-delete").disabled = !shape || Boolean(shape.deletionTimestamp);
  button("shape-unfinalize").disabled = !shape?.deletionTimestamp || shape.finalizers.length === 0;
  button("cloud-recolor").disabled = !cloud;
  button("cloud-delete").disabled = !cloud;
  // A color picker follows its object only when the row or the object's color changes: the detail is
  // redrawn every few seconds, and a redraw must not undo a color a person picked and is about to apply.
  syncPicker("shape-color", row.key, shape?.color);
  syncPicker("cloud-color", row.key, cloud?.color);

  byId("story-note").textContent = story.note;
  byId("story").replaceChildren(...storyItems(row));
}

/**
 * @param {HTMLElement} dl
 * @param {string} title
 * @param {[string, string][] | undefined | false | ""} rows
 */
function facts(dl, title, rows) {
  const items = [];
  const caption = document.createElement("dt");
  caption.className = "caption";
  caption.textContent = rows ? title : `${title}: none`;
  items.push(caption, document.createElement("dd"));
  for (const [name, value] of rows || []) {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = value;
    items.push(dt, dd);
  }
  dl.replaceChildren(...items);
}

/**
 * The story of a row, newest first: its Events and the controller's reconciles of it, by time.
 *
 * @param {Row} row
 */
function storyItems(row) {
  /** @type {{ at: string, el: HTMLElement }[]} */
  const items = [];
  for (const e of state.events) {
    if (!isAbout(row, e)) continue;
    const li = document.createElement("li");
    li.className = `event ${e.type === "Warning" ? "warning" : ""}`;
    li.append(
      time(e.at),
      text("strong", `${e.kind} ${e.reason}`),
      text("span", ` ${e.message}${e.count > 1 ? ` (×${e.count})` : ""}`),
    );
    items.push({ at: e.at, el: li });
  }
  for (const entry of story.history?.entries ?? []) {
    const li = document.createElement("li");
    li.className = "decision";
    li.append(
      time(entry.at),
      text("strong", `reconcile (${entry.controller})`),
      text("span", ` → ${entry.result}${entry.repeats > 1 ? ` (×${entry.repeats})` : ""}`),
    );
    const ul = document.createElement("ul");
    for (const seen of entry.observed ?? []) ul.append(text("li", `saw: ${seen}`));
    for (const d of entry.decided ?? []) ul.append(text("li", `decided ${d.branch}: ${d.why}`));
    for (const c of entry.calls ?? [])
      ul.append(text("li", `called: ${typeof c === "string" ? c : JSON.stringify(c)}`));
    li.append(ul);
    items.push({ at: entry.at, el: li });
  }
  return items.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0)).map((i) => i.el);
}

function renderTimeline() {
  const only = input("timeline-selected").checked;
  const row = selectedRow();
  const lines = [];
  for (let i = state.events.length - 1; i >= 0 && lines.length < TIMELINE_LINES; i--) {
    const e = /** @type {ViewEvent} */ (state.events[i]);
    if (only && !(row && isAbout(row, e))) continue;
    const li = document.createElement("li");
    li.className = e.type === "Warning" ? "warning" : "";
    li.dataset.key = e.kind === "ShapeRef" ? e.name : `${e.namespace}.${e.name}`;
    const who = e.kind === "ShapeRef" ? `ShapeRef ${e.name}` : `${e.kind} ${e.namespace}/${e.name}`;
    li.append(time(e.at), text("span", ` ${who} `), text("strong", e.reason), text("span", `: ${e.message}`));
    lines.push(li);
  }
  byId("timeline").replaceChildren(...lines);
}

function renderController() {
  const { controller } = state;
  const el = byId("controller-state");
  el.dataset.state = controller.state;
  el.textContent = `controller: ${controller.state}${controller.pid ? ` (pid ${controller.pid})` : ""}`;
  button("controller-stop").disabled = controller.state !== "running";
  button("controller-start").disabled = controller.state !== "stopped" && controller.state !== "crashed";
}

function renderTour() {
  const moment = state.tour;
  byId("tour").hidden = !moment;
  if (!moment) return;
  byId("tour-step").textContent = `Tour, step ${moment.step} of ${moment.steps}:`;
  byId("tour-title").textContent = moment.title;
  byId("tour-caption").textContent = moment.caption;
}

/** Scrolls to the first row the tour's moment is about. */
function revealTour(/** @type {RowList} */ list) {
  if (!state.tour) return;
  const keys = highlightedKeys(state.worlds.rows(), state.tour);
  const index = state.shown.findIndex((r) => keys.has(r.key));
  if (index >= 0) list.reveal(index);
}

function renderFaults() {
  const switches = switchesOf(state.faults);
  input("fault-outage").checked = switches.outage;
  input("fault-latency").checked = switches.latencyMs !== undefined;
  input("fault-throttling").checked = switches.throttleRate !== undefined;
}

/** @param {ReturnType<typeof apiClient>} api */
function wireActions(api) {
  story.api = api;
  const act = async (
    /** @type {string} */ method,
    /** @type {string} */ path,
    /** @type {unknown} */ body,
  ) => {
    notice("working", `${method} ${path}…`);
    const answer = await api.send(method, path, body);
    if (answer.ok) notice("done", answer.body.done);
    else notice("error", answer.detail);
    return answer.ok;
  };
  const shapePath = () => {
    const shape = selectedRow()?.shape;
    return shape
      ? `/api/shapes/${encodeURIComponent(shape.namespace)}/${encodeURIComponent(shape.name)}`
      : undefined;
  };
  const cloudPath = () => {
    const cloud = selectedRow()?.cloud;
    return cloud ? `/api/cloud/shapes/${encodeURIComponent(cloud.id)}` : undefined;
  };
  const onClick = (/** @type {string} */ id, /** @type {() => Promise<unknown> | undefined} */ fn) =>
    button(id).addEventListener("click", () => void fn());

  onClick("shape-recolor", () => {
    const path = shapePath();
    return path && act("PATCH", path, { color: select("shape-color").value });
  });
  onClick("shape-pause", () => {
    const path = shapePath();
    return path && act("PATCH", path, { paused: !selectedRow()?.shape?.paused });
  });
  onClick("shape-delete", () => {
    const path = shapePath();
    return path && act("DELETE", path);
  });
  onClick("shape-unfinalize", () => {
    const path = shapePath();
    return path && act("POST", `${path}/remove-finalizer`);
  });
  onClick("cloud-recolor", () => {
    const path = cloudPath();
    return path && act("PATCH", path, { color: select("cloud-color").value });
  });
  onClick("cloud-delete", () => {
    const path = cloudPath();
    return path && act("DELETE", path);
  });
  onClick("controller-stop", () => {
    button("controller-stop").disabled = true;
    return act("POST", "/api/controller/stop");
  });
  onClick("controller-start", () => {
    button("controller-start").disabled = true;
    return act("POST", "/api/controller/start");
  });

  byId("apply").addEventListener("submit", (event) => {
    event.preventDefault();
    void act("POST", "/api/shapes", {
      namespace: input("apply-namespace").value.trim(),
      name: input("apply-name").value.trim(),
      type: select("apply-type").value,
      color: select("apply-color").value,
    });
  });
  byId("foreign").addEventListener("submit", (event) => {
    event.preventDefault();
    void act("POST", "/api/cloud/shapes", {
      name: input("foreign-name").value.trim(),
      type: select("foreign-type").value,
      color: select("foreign-color").value,
    });
  });
  /** @type {[string, "outage" | "latency" | "throttling", number | true][]} */
  const switches = [
    ["fault-outage", "outage", true],
    ["fault-latency", "latency", 1000],
    ["fault-throttling", "throttling", 0.5],
  ];
  for (const [id, name, value] of switches) {
    input(id).addEventListener("change", () => {
      const next = withSwitch(state.faults, name, input(id).checked ? value : undefined);
      void act("PUT", "/api/cloud/faults", next);
    });
  }
  input("timeline-selected").addEventListener("change", () => renderTimeline());
}

/**
 * Calls to the page server, with the token. Never throws: the answer says what happened.
 *
 * @param {string} token
 */
function apiClient(token) {
  /**
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @returns {Promise<{ ok: true, body: any } | { ok: false, detail: string }>}
   */
  const send = async (method, path, body) => {
    try {
      const res = await fetch(path, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const answer = await res.json().catch(() => ({}));
      if (res.ok) return { ok: true, body: answer };
      return { ok: false, detail: typeof answer.detail === "string" ? answer.detail : `HTTP ${res.status}` };
    } catch (error) {
      return { ok: false, detail: `cannot reach the demo: ${String(error)}` };
    }
  };
  return { send, get: (/** @type {string} */ path) => send("GET", path) };
}

/**
 * @param {"working" | "done" | "error"} kind
 * @param {string} message
 */
function notice(kind, message) {
  const el = byId("notice");
  el.dataset.kind = kind;
  el.textContent = message;
}

/**
 * @param {string} stateName
 * @param {string} text
 */
function showConnection(stateName, text) {
  const el = byId("connection");
  el.dataset.state = stateName;
  el.textContent = text;
}

/**
 * @param {HTMLSelectElement} el
 * @param {readonly string[]} values
 */
function fillSelect(el, values) {
  el.replaceChildren(
    ...values.map((v) => {
      const option = document.createElement("option");
      option.value = v;
      option.textContent = v;
      return option;
    }),
  );
}

/** @param {string} at */
function time(at) {
  const el = document.createElement("time");
  el.dateTime = at;
  el.textContent = new Date(at).toLocaleTimeString();
  return el;
}

/**
 * @param {string} tag
 * @param {string} value
 */
function text(tag, value) {
  const el = document.createElement(tag);
  el.textContent = value;
  return el;
}

// For tests and the screenshot script: the page's own timings (performance marks) are public anyway.
window.shapesView = { state };
