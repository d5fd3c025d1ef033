/* global document, location, history, requestAnimationFrame */
/**
 * The cloud console's page: wires the DOM to the cloud.
 *
 *   tokens (URL fragment or the sign-in form, kept in sessionStorage)
 *     -> keepInSync (live.js): list, then the change feed, into a ShapeStore (store.js)
 *       -> render(): one card per shape, drawn by draw.js, redrawn only when its revision changes
 *   buttons and forms -> CloudClient (api.js) -> the activity list shows each result or the cloud's error,
 *     with the trace id the cloud answered (`traceresponse`)
 *
 * The page never polls the shapes: every change on screen comes from the change feed, including the
 * console's own writes. Only the fault rules, which have no feed, are re-read every few seconds.
 *
 * SAFETY: names and tags come from anyone who can write to the cloud. Every piece of them reaches the page
 * through textContent, setAttribute or createElementNS, never through innerHTML or any other markup parser,
 * and the Content-Security-Policy of the page forbids inline script besides.
 *
 * THE TOKEN: the page is served without any secret in it. The console asks for the API token (and the
 * admin token, for the faults) with a form, or takes them from the URL fragment (`/#token=T&admin=A`: a
 * fragment is never sent to a server, so it lands in no log), then removes the fragment from the address
 * bar and keeps them in sessionStorage: this tab only, gone when it closes.
 */
import { CloudClient } from "./api.js";
import { drawShape } from "./draw.js";
import { switchesOf, withSwitch } from "./faults.js";
import { keepInSync } from "./live.js";
import { ShapeStore, ownershipOf } from "./store.js";

const TOKEN_KEY = "shapes-console.token";
const ADMIN_TOKEN_KEY = "shapes-console.admin-token";
/** How often the fault switches are re-read (other tools may change the rules). */
const FAULTS_REFRESH_MS = 5_000;
/** Lines kept in the activity list. */
const ACTIVITY_LINES = 50;

/** @param {string} id */
const byId = (id) => {
  const el = document.getElementById(id);
  if (!el) throw new Error(`cannot find #${id} in the page`);
  return el;
};

void main();

async function main() {
  let config;
  try {
    const res = await fetch("/console/config.json");
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    config = await res.json();
  } catch (error) {
    showConnection("error", `cannot load the console's configuration: ${String(error)}`);
    return;
  }
  fillSelect(byId("create-type"), config.types, config.types[0]);
  fillSelect(byId("create-color"), config.colors, config.colors[0]);

  const tokens = takeTokens();
  if (tokens) open(tokens, config);
  else askForTokens(config, "");
}

/**
 * The tokens from the URL fragment (then removed from the address bar) or from this tab's storage.
 *
 * @returns {{ token: string, adminToken: string } | undefined}
 */
function takeTokens() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const fromUrl = fragment.get("token");
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl);
    sessionStorage.setItem(ADMIN_TOKEN_KEY, fragment.get("admin") || fromUrl);
    history.replaceState(null, "", location.pathname + location.search);
  }
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) return undefined;
  return { token, adminToken: sessionStorage.getItem(ADMIN_TOKEN_KEY) || token };
}

/**
 * Shows the sign-in form (with why, when a token was refused).
 *
 * @param {{ types: string[], colors: string[] }} config
 * @param {string} error
 */
function askForTokens(config, error) {
  const form = /** @type {HTMLFormElement} */ (byId("login"));
  byId("console").hidden = true;
  byId("forget").hidden = true;
  form.hidden = false;
  byId("login-error").textContent = error;
  showConnection("signed-out", "signed out");
  form.onsubmit = (event) => {
    event.preventDefault();
    const token = /** @type {HTMLInputElement} */ (byId("login-token")).value.trim();
    const admin = /** @type {HTMLInputElement} */ (byId("login-admin")).value.trim();
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    sessionStorage.setItem(ADMIN_TOKEN_KEY, admin || token);
    form.hidden = true;
    open({ token, adminToken: admin || token }, config);
  };
}

/**
 * Opens the console: starts the live view, the controls and the fault switches.
 *
 * @param {{ token: string, adminToken: string }} tokens
 * @param {{ types: string[], colors: string[] }} config
 */
function open(tokens, config) {
  const client = new CloudClient(tokens);
  const store = new ShapeStore();
  const stop = new AbortController();
  byId("console").hidden = false;
  const forget = byId("forget");
  forget.hidden = false;
  forget.onclick = () => {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(ADMIN_TOKEN_KEY);
    location.reload();
  };

  const view = new ShapesView(store, client, config.colors);
  let lastState = "";
  void keepInSync({
    client,
    store,
    signal: stop.signal,
    onChange: () => view.scheduleRender(),
    onStatus: (status) => {
      if (status.state === "live") {
        showConnection("live", `live · revision ${status.revision}`);
      } else if (status.state === "listing") {
        showConnection("listing", "listing the cloud…");
      } else if (status.state === "relisting") {
        showConnection("listing", "the change feed lost its place (410): listing again…");
      } else if (status.state === "retrying") {
        const seconds = Math.max(1, Math.round(status.delayMs / 1000));
        showConnection("retrying", `reconnecting in ${seconds} s: ${status.detail}`);
      } else {
        stop.abort();
        sessionStorage.removeItem(TOKEN_KEY);
        sessionStorage.removeItem(ADMIN_TOKEN_KEY);
        askForTokens(config, status.detail);
      }
      // Each change of state, not each event, is worth a line.
      if (status.state !== lastState && status.state !== "listing") {
        if (status.state === "live") activity("ok", "change feed connected");
        else if (status.state === "retrying" || status.state === "relisting")
          activity("error", status.detail);
      }
      lastState = status.state;
    },
  });

  wireCreate(client);
  new FaultSwitches(client, stop.signal).start();
}

/** The list of shape cards, redrawn from the store at most once per frame. */
class ShapesView {
  /** @type {Map<string, { revision: number, card: HTMLElement }>} */
  #cards = new Map();
  #scheduled = false;
  #store;
  #client;
  #colors;

  /**
   * @param {ShapeStore} store
   * @param {CloudClient} client
   * @param {string[]} colors
   */
  constructor(store, client, colors) {
    this.#store = store;
    this.#client = client;
    this.#colors = colors;
  }

  /** Renders on the next frame (many events in a burst cost one render). */
  scheduleRender() {
    if (this.#scheduled) return;
    this.#scheduled = true;
    requestAnimationFrame(() => {
      this.#scheduled = false;
      this.#render();
    });
  }

  #render() {
    const shapes = this.#store.sorted();
    const cards = shapes.map((shape) => {
      let entry = this.#cards.get(shape.id);
      if (!entry || entry.revision !== shape.revision) {
        entry = { revision: shape.revision, card: this.#card(shape) };
        this.#cards.set(shape.id, entry);
      }
      return entry.card;
    });
    for (const id of this.#cards.keys()) if (!this.#store.get(id)) this.#cards.delete(id);

    placeInOrder(byId("shapes"), cards);
    byId("empty").hidden = shapes.length > 0;
    // Managed shapes by owner id: with several clusters sharing the cloud, each has its own.
    /** @type {Map<string, number>} */
    const owners = new Map();
    for (const s of shapes) {
      const o = ownershipOf(s);
      if (o.ours) owners.set(o.owner, (owners.get(o.owner) ?? 0) + 1);
    }
    const ours = [...owners.values()].reduce((a, n) => a + n, 0);
    const byOwner = owners.size > 1 ? ` (${[...owners].map(([o, n]) => `${n} by ${o}`).join(", ")})` : "";
    byId("summary").textContent =
      `${shapes.length} shape${shapes.length === 1 ? "" : "s"}: ${ours} managed${byOwner}, ${shapes.length - ours} foreign`;
  }

  /**
   * One card: the drawing, the name, who owns it, its details and its controls.
   *
   * @param {import("./store.js").Shape} shape
   */
  #card(shape) {
    const ownership = ownershipOf(shape);
    const card = el("li", "shape");
    Object.assign(card.dataset, {
      id: shape.id,
      name: shape.name,
      type: shape.type,
      color: shape.color,
      revision: String(shape.revision),
      owner: ownership.ours ? "ours" : "foreign",
      ...(ownership.ours ? { ownerId: ownership.owner } : {}),
    });
    card.append(drawShape(document, shape), el("h3", "name", shape.name));

    const owner = el("p", `owner ${ownership.ours ? "ours" : "foreign"}`);
    if (ownership.ours) {
      owner.append(
        el("span", "badge", "ours"),
        el("span", "", " Shape "),
        el("span", "k8s-name", ownership.k8sName ?? "(no k8s-name tag)"),
        el("span", "owner-id", ` · owner ${ownership.owner}`),
      );
    } else {
      owner.append(el("span", "badge", "foreign"), el("span", "", " no owner tag"));
    }
    card.append(owner);

    const facts = [shape.type, shape.color, ...(shape.size === undefined ? [] : [`size ${shape.size}`])];
    card.append(el("p", "facts", `${facts.join(" · ")} · rev ${shape.revision}`));

    const tags = Object.entries(shape.tags);
    if (tags.length > 0) {
      const details = el("details", "tags");
      details.append(el("summary", "", `${tags.length} tag${tags.length === 1 ? "" : "s"}`));
      const list = el("dl", "");
      for (const [key, value] of tags) list.append(el("dt", "", key), el("dd", "", value));
      details.append(list);
      card.append(details);
    }

    const actions = el("div", "actions");
    const recolor = /** @type {HTMLSelectElement} */ (el("select", "recolor"));
    recolor.setAttribute("aria-label", `Recolor ${shape.name}`);
    fillSelect(recolor, this.#colors, shape.color);
    recolor.onchange = () => {
      const current = this.#store.get(shape.id) ?? shape;
      const color = recolor.value;
      recolor.disabled = true;
      void act(this.#client, `recolored ${shape.name} to ${color}`, (c) => c.recolor(current, color)).finally(
        () => {
          recolor.disabled = false;
          recolor.value = (this.#store.get(shape.id) ?? shape).color; // the feed shows the outcome
        },
      );
    };
    const remove = /** @type {HTMLButtonElement} */ (el("button", "delete", "Delete"));
    remove.type = "button";
    remove.setAttribute("aria-label", `Delete ${shape.name}`);
    remove.onclick = () => {
      const current = this.#store.get(shape.id) ?? shape;
      remove.disabled = true;
      void act(this.#client, `deleted ${shape.name}`, (c) => c.remove(current)).finally(() => {
        remove.disabled = false;
      });
    };
    actions.append(recolor, remove);
    card.append(actions);
    return card;
  }
}

/**
 * Makes `cards` the children of `list`, in order, touching only what differs: a card that stays in place is
 * not moved (moving a node would restart its "new" animation and drop the focus of a menu inside it).
 *
 * @param {HTMLElement} list
 * @param {HTMLElement[]} cards
 */
function placeInOrder(list, cards) {
  const wanted = new Set(cards);
  for (const child of [...list.children]) if (!wanted.has(/** @type {HTMLElement} */ (child))) child.remove();
  cards.forEach((card, i) => {
    if (list.children[i] !== card) list.insertBefore(card, list.children[i] ?? null);
  });
}

/** @param {CloudClient} client */
function wireCreate(client) {
  const form = /** @type {HTMLFormElement} */ (byId("create"));
  form.onsubmit = (event) => {
    event.preventDefault();
    const name = /** @type {HTMLInputElement} */ (byId("create-name")).value.trim();
    const type = /** @type {HTMLSelectElement} */ (byId("create-type")).value;
    const color = /** @type {HTMLSelectElement} */ (byId("create-color")).value;
    void act(client, `created the foreign ${color} ${type} ${name}`, (c) => c.create({ name, type, color }));
  };
}

/** The three fault switches, kept in step with the cloud's rules. */
class FaultSwitches {
  #client;
  #signal;
  #outage = /** @type {HTMLInputElement} */ (byId("fault-outage"));
  #latency = /** @type {HTMLInputElement} */ (byId("fault-latency"));
  #latencyMs = /** @type {HTMLInputElement} */ (byId("latency-ms"));
  #throttling = /** @type {HTMLInputElement} */ (byId("fault-throttling"));
  #throttleRate = /** @type {HTMLInputElement} */ (byId("throttle-rate"));

  /**
   * @param {CloudClient} client
   * @param {AbortSignal} signal
   */
  constructor(client, signal) {
    this.#client = client;
    this.#signal = signal;
  }

  start() {
    this.#outage.onchange = () => this.#turn("outage", this.#outage.checked ? true : undefined);
    const latency = () =>
      this.#turn("latency", this.#latency.checked ? Number(this.#latencyMs.value) : undefined);
    this.#latency.onchange = latency;
    this.#latencyMs.onchange = () => this.#latency.checked && latency();
    const throttling = () =>
      this.#turn("throttling", this.#throttling.checked ? Number(this.#throttleRate.value) : undefined);
    this.#throttling.onchange = throttling;
    this.#throttleRate.onchange = () => this.#throttling.checked && throttling();

    void this.#refresh();
    const timer = setInterval(() => void this.#refresh(), FAULTS_REFRESH_MS);
    this.#signal.addEventListener("abort", () => clearInterval(timer));
  }

  /**
   * Reads the rules, changes one switch, writes them back, and shows what the cloud now has.
   *
   * @param {"outage" | "latency" | "throttling"} name
   * @param {number | true | undefined} value
   */
  async #turn(name, value) {
    const what =
      value === undefined
        ? `${name} off`
        : name === "outage"
          ? "outage on: every API call answers 503"
          : name === "latency"
            ? `latency on: every API call waits ${value} ms`
            : `throttling on: ${value} of API calls answer 429`;
    const applied = await act(this.#client, what, async (c) =>
      c.setFaults(withSwitch(await c.faults(), name, value)),
    );
    if (applied) this.#show(applied);
    else await this.#refresh(); // show the real state, not the click
  }

  async #refresh() {
    try {
      this.#show(await this.#client.faults());
    } catch (error) {
      byId("fault-rules").textContent = error instanceof Error ? error.message : String(error);
    }
  }

  /** @param {import("./faults.js").FaultConfig} config */
  #show(config) {
    const switches = switchesOf(config);
    this.#outage.checked = switches.outage;
    this.#latency.checked = switches.latencyMs !== undefined;
    this.#throttling.checked = switches.throttleRate !== undefined;
    const editing = document.activeElement;
    if (switches.latencyMs !== undefined && editing !== this.#latencyMs) {
      this.#latencyMs.value = String(switches.latencyMs);
    }
    if (switches.throttleRate !== undefined && editing !== this.#throttleRate) {
      this.#throttleRate.value = String(switches.throttleRate);
    }
    byId("fault-rules").textContent =
      config.rules.length === 0
        ? "No rules: a well-behaved cloud."
        : `Rules: ${JSON.stringify(config.rules)}`;
  }
}

/**
 * Runs one action of the person at the console and reports it in the activity list: `done` when it
 * succeeds, the cloud's explanation when it fails, with the trace of the action's last request when the
 * cloud told it (so the edit can be found in the tracing backend). The action makes its calls with its own
 * session of `client`. Resolves with the result, or undefined after a failure.
 *
 * @template T
 * @param {CloudClient} client
 * @param {string} done
 * @param {(client: CloudClient) => Promise<T>} action
 * @returns {Promise<T | undefined>}
 */
async function act(client, done, action) {
  const session = client.session();
  try {
    const result = await action(session);
    activity("ok", done, session.traceId);
    return result;
  } catch (error) {
    activity("error", error instanceof Error ? error.message : String(error), session.traceId);
    return undefined;
  }
}

/**
 * Adds a line at the top of the activity list: the time, the request's trace id when there is one, the
 * text. Of the trace id, the first 8 hex digits show; the whole id is in the title, and is what a click
 * selects and a copy copies (to paste into the tracing backend's search).
 *
 * @param {"ok" | "error"} kind
 * @param {string} text
 * @param {string} [traceId]
 */
function activity(kind, text, traceId) {
  const list = byId("activity");
  const line = el("li", kind);
  line.append(el("time", "", new Date().toLocaleTimeString()));
  if (traceId) {
    const trace = el("code", "trace-id", traceId);
    trace.setAttribute("title", `trace ${traceId}`);
    line.dataset.traceId = traceId;
    line.append(" ", trace);
  }
  line.append(el("span", "", ` ${text}`));
  list.prepend(line);
  while (list.children.length > ACTIVITY_LINES) list.lastElementChild?.remove();
}

/**
 * @param {string} state
 * @param {string} text
 */
function showConnection(state, text) {
  const status = byId("connection");
  status.dataset.state = state;
  status.textContent = text;
}

/**
 * Replaces the options of a select.
 *
 * @param {HTMLElement} select
 * @param {string[]} values
 * @param {string} selected
 */
function fillSelect(select, values, selected) {
  const options = values.map((value) => {
    const option = el("option", "", value);
    option.setAttribute("value", value);
    if (value === selected) option.setAttribute("selected", "");
    return option;
  });
  if (!values.includes(selected)) {
    const option = el("option", "", selected); // a color the console does not know: still shown
    option.setAttribute("value", selected);
    option.setAttribute("selected", "");
    options.push(option);
  }
  select.replaceChildren(...options);
}

/**
 * An HTML element with a class and, optionally, its text (always as text, never as markup).
 *
 * @param {string} tag
 * @param {string} className
 * @param {string} [text]
 * @returns {HTMLElement}
 */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
