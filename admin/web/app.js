// Switchyard console: polls /api/status every second and /api/history
// every two, long-polls /api/decisions, and asks /api/explain. Plain DOM;
// every text taken from the API is set with textContent, never parsed as
// HTML.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const MAX_ROWS = 200;
const MAX_RULES_DRAWN = 60;
const state = { status: null, history: null, hot: new Map(), decisions: 0, lastOK: 0, keysSig: "", filterSig: "" };

function $(id) { return document.getElementById(id); }
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k === "title") e.title = v; else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
function sv(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}
function clip(s, n) { s = String(s); return s.length > n ? s.slice(0, Math.max(1, n - 1)) + "…" : s; }
function num(n) {
  if (n >= 1e9) return (n / 1e9).toFixed(1) + "G";
  if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (n >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return String(n);
}
function hms(t) {
  const d = new Date(t);
  return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}
function ago(t) {
  const s = Math.round((Date.now() - new Date(t).getTime()) / 1000);
  if (s < 60) return s + "s ago";
  if (s < 3600) return Math.round(s / 60) + "m ago";
  if (s < 86400) return Math.round(s / 3600) + "h ago";
  return new Date(t).toLocaleString();
}
async function getJSON(url, signal) {
  const r = await fetch(url, { cache: "no-store", credentials: "same-origin", signal });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || ("HTTP " + r.status));
  return body;
}

// A target's display state: circuit, or parked when a 429 parked it.
function targetState(t) {
  if (t.circuit === "open") return "open";
  if (t.parked_until && new Date(t.parked_until) > Date.now()) return "parked";
  return t.circuit;
}
function ruleText(r) {
  const k = r.key === "metadata" ? "metadata " + r.field : r.key;
  return "#" + r.index + "  " + k + " = " + r.value;
}

// ---- the diagram ---------------------------------------------------------
function drawDiagram(st) {
  const svg = $("svg");
  const box = $("diagram");
  const W = Math.max(320, box.clientWidth - 4);
  const narrow = W < 560;
  const rules = st.rules.slice(0, MAX_RULES_DRAWN).map(r => ({ id: "r" + r.index, label: ruleText(r), sub: r.line ? "line " + r.line : "", chain: r.chain, idx: r.index }));
  rules.push({ id: "fb", label: "fallback (no match)", sub: "targets[0]", chain: [st.fallback], idx: -1, fallback: true });
  const byName = new Map(st.targets.map((t, i) => [t.name, i]));
  const rw = Math.min(300, Math.floor(W * (narrow ? 0.38 : 0.36)));
  const tw = Math.min(300, Math.floor(W * (narrow ? 0.46 : 0.36)));
  const tx = W - tw - 4;
  const RH = 28, TH = narrow ? 84 : 88;
  let RG = 6, TG = 10;
  // On a wall screen the diagram fills its panel: the gaps grow.
  const avail = window.innerWidth > 900 ? box.clientHeight - 8 : 0;
  const need = Math.max(rules.length * (RH + RG), st.targets.length * (TH + TG));
  if (avail > need + 14) {
    RG += Math.min(18, (avail - 14 - rules.length * (RH + RG)) / Math.max(1, rules.length));
    TG += Math.min(30, (avail - 14 - st.targets.length * (TH + TG)) / Math.max(1, st.targets.length));
  }
  const rulesH = rules.length * (RH + RG), targetsH = st.targets.length * (TH + TG);
  const H = Math.max(rulesH, targetsH) + 14;
  const r0 = 6 + (H - 14 - rulesH) / 2 + RG / 2, t0 = 6 + (H - 14 - targetsH) / 2 + TG / 2;
  svg.setAttribute("width", W); svg.setAttribute("height", H); svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.replaceChildren();
  const hotRule = state.hot.get("rule"), hotTargets = state.hot.get("targets") || [];
  const edges = sv("g"), nodes = sv("g");
  svg.append(edges, nodes);
  const chars = w => Math.floor(w / 7.1);

  rules.forEach((r, i) => {
    const y = r0 + i * (RH + RG);
    const hot = hotRule === r.idx;
    const g = sv("g", { class: "rule" + (r.fallback ? " fallback" : "") + (hot ? " hot" : ""), "data-rule": r.idx });
    g.append(sv("rect", { x: 4, y, width: rw, height: RH, rx: 6 }));
    g.append(sv("text", { x: 12, y: y + 18 }, clip(r.label, chars(rw - (narrow ? 16 : 66)))));
    if (!narrow) g.append(sv("text", { x: rw - 4, y: y + 18, class: "muted", "text-anchor": "end" }, r.sub));
    const title = sv("title", {}, r.label + (r.sub ? " (" + r.sub + ")" : "") + " → " + r.chain.join(", "));
    g.append(title);
    nodes.append(g);
    r.chain.forEach((name, k) => {
      const ti = byName.get(name);
      if (ti === undefined) return;
      const t = st.targets[ti];
      const ty = t0 + ti * (TH + TG) + TH / 2 + (k - (r.chain.length - 1) / 2) * 6;
      const x1 = rw + 4, y1 = y + RH / 2, x2 = tx, mid = (x1 + x2) / 2;
      const ehot = hot && hotTargets.includes(name);
      edges.append(sv("path", { class: "edge s-" + targetState(t) + (ehot ? " hot" : ""), d: `M${x1},${y1} C${mid},${y1} ${mid},${ty} ${x2},${ty}` }));
      if (r.chain.length > 1) edges.append(sv("text", { x: x1 + 6 + k * 9, y: y1 - 3, class: "order" }, String(k + 1)));
    });
  });
  if (st.rules.length > MAX_RULES_DRAWN) {
    nodes.append(sv("text", { x: 8, y: H - 2, class: "muted" }, `+${st.rules.length - MAX_RULES_DRAWN} more rules (see the explain form)`));
  }

  st.targets.forEach((t, i) => {
    const y = t0 + i * (TH + TG);
    const s = targetState(t);
    const hot = hotTargets.includes(t.name);
    const g = sv("g", { class: "tgt s-" + s + (hot ? " hot" : ""), "data-target": t.name, "data-state": s });
    g.append(sv("rect", { class: "box", x: tx, y, width: tw, height: TH, rx: 7 }));
    g.append(sv("rect", { class: "bar", x: tx, y: y + 6, width: 4, height: TH - 12, rx: 2 }));
    let nameW = tw - 22;
    if (t.residency) {
      const bw = 8 + t.residency.length * 7;
      const b = sv("g", { class: "badge" });
      b.append(sv("rect", { x: tx + tw - bw - 8, y: y + 7, width: bw, height: 16, rx: 8 }));
      b.append(sv("text", { x: tx + tw - bw / 2 - 8, y: y + 19, "text-anchor": "middle" }, t.residency));
      g.append(b);
      nameW -= bw + 6;
    }
    g.append(sv("text", { x: tx + 12, y: y + 19, "font-weight": 700 }, clip(t.name, chars(nameW))));
    let label = s === "half_open" ? "HALF-OPEN" : s.toUpperCase();
    if (s === "parked") label += " " + Math.max(0, Math.ceil((new Date(t.parked_until) - Date.now()) / 1000)) + "s";
    // Provider and state, load and quota room, then the charts of the
    // last 15 minutes.
    g.append(sv("text", { x: tx + 12, y: y + 34, class: "muted" }, clip(t.provider, chars(tw / 2))));
    g.append(sv("text", { x: tx + tw - 8, y: y + 34, class: "state", "text-anchor": "end" }, label));
    const load = narrow ? "in-flight " + t.in_flight + " · q " + t.queue_depth : "in-flight " + t.in_flight + " · queue " + t.queue_depth;
    g.append(sv("text", { x: tx + 12, y: y + 48, class: "muted" }, load));
    const q = quotaRoom(t.quota);
    if (q !== null) {
      const mw = narrow ? 36 : Math.min(70, tw * 0.25), mx = tx + tw - mw - 8;
      g.append(sv("rect", { class: "room", x: mx, y: y + 42, width: mw, height: 6, rx: 3 }));
      g.append(sv("rect", { class: "roomfill", x: mx, y: y + 42, width: mw * q, height: 6, rx: 3 }));
      g.append(sv("title", {}, "quota room " + Math.round(q * 100) + "%"));
    }
    charts(g, tx + 12, y + 54, tw - 20, TH - 54 - 6, historyOf("targets", t.name), "target:" + t.name, narrow ? 1 : 3);
    nodes.append(g);
  });
}

// quotaRoom is the smallest share of room left over a quota's limits, or null.
function quotaRoom(q) {
  if (!q || !q.limits || !q.limits.length) return null;
  return Math.min(...q.limits.map(l => (l.limit > 0 ? Math.max(0, l.remaining) / l.limit : 1)));
}

// ---- history charts ----------------------------------------------------------
// Each target and key gets three small charts of its last 15 minutes
// (GET /api/history, 10-second points): requests (calls, for a target) per
// second with the failed ones in red, p50 and p99 latency, tokens per
// second, each labelled with its last minute's value. A point without data
// (before the console started) is a gap.
const CHARTS = ["req", "lat", "tok"];

function historyOf(kind, name) {
  const h = state.history;
  return h ? h[kind].find(x => x.name === name) || null : null;
}
function rate(v) {
  if (v == null) return "–";
  if (v === 0) return "0";
  if (v >= 100) return num(Math.round(v));
  if (v >= 10) return v.toFixed(1);
  return v < 0.01 ? "<0.01" : v.toFixed(2);
}
function ms(v) {
  if (v == null) return "–";
  if (v < 1) return v.toFixed(2) + "ms";
  if (v < 1000) return Math.round(v) + "ms";
  return (v / 1000).toFixed(v < 10000 ? 2 : 1) + "s";
}
// bars draws values (null = no data) as bars in a w×h box at (x, y),
// scaled to max: one bar per point, so a single busy point shows.
function bars(values, x, y, w, h, max) {
  const dx = w / values.length;
  let d = "";
  values.forEach((v, i) => {
    if (v == null || v <= 0 || max <= 0) return;
    const bh = Math.max(1, Math.min(v, max) / max * h);
    d += `M${(x + i * dx).toFixed(1)},${(y + h).toFixed(1)}v${(-bh).toFixed(1)}h${Math.max(1, dx - 0.4).toFixed(1)}v${bh.toFixed(1)}Z`;
  });
  return d;
}
// steps draws values as a line of one level per point, broken where a
// point has no value.
function steps(values, x, y, w, h, max) {
  const dx = w / values.length;
  let d = "", open = false;
  values.forEach((v, i) => {
    if (v == null || max <= 0) { open = false; return; }
    const py = (y + h - Math.min(v, max) / max * h).toFixed(1);
    d += (open ? "L" : "M") + (x + i * dx).toFixed(1) + "," + py + "h" + dx.toFixed(1);
    open = true;
  });
  return d;
}
// chart appends one chart of series s (a /api/history series or null) to
// parent, an <svg> or <g>.
function chart(parent, x, y, w, h, s, id, metric) {
  const g = sv("g", { class: "chart m-" + metric, "data-series": id, "data-metric": metric });
  g.append(sv("rect", { class: "cbg", x, y, width: w, height: h, rx: 3 }));
  const top = y + 11, ph = h - 12;
  let label = "–", title = "";
  if (s) {
    // The label is the last minute's; the title the 15 minutes'.
    const t = s.total, m = s.last_minute;
    if (metric === "req") {
      const errs = s.requests_per_s.map((v, i) => (v == null || s.error_rate[i] == null ? v : v * s.error_rate[i]));
      const max = Math.max(1e-9, ...s.requests_per_s.filter(v => v != null));
      g.append(sv("path", { class: "area req", d: bars(s.requests_per_s, x, top, w, ph, max) }));
      g.append(sv("path", { class: "area err", d: bars(errs, x, top, w, ph, max) }));
      const err = m.error_rate;
      label = rate(m.requests_per_s) + "/s";
      if (err) label = [label + " ", sv("tspan", { class: "bad" }, Math.round(err * 100) + "%")];
      title = `15 min: ${t.requests} ${id.startsWith("target:") ? "calls" : "requests"}, ${t.errors} failed (${t.error_rate == null ? "–" : (t.error_rate * 100).toFixed(1) + "%"}), ${rate(t.requests_per_s)}/s`;
      g.dataset.requests = t.requests; g.dataset.errors = t.errors; g.dataset.last = m.requests_per_s ?? "";
    } else if (metric === "lat") {
      const max = Math.max(1e-9, ...s.p99_ms.filter(v => v != null));
      g.append(sv("path", { class: "line p50", d: steps(s.p50_ms, x, top, w, ph, max) }));
      g.append(sv("path", { class: "line p99", d: steps(s.p99_ms, x, top, w, ph, max) }));
      label = "p99 " + ms(m.p99_ms);
      title = `15 min: p50 ${ms(t.p50_ms)}, p99 ${ms(t.p99_ms)}`;
      g.dataset.last = m.p99_ms ?? "";
    } else {
      const max = Math.max(1e-9, ...s.tokens_per_s.filter(v => v != null));
      g.append(sv("path", { class: "area tok", d: bars(s.tokens_per_s, x, top, w, ph, max) }));
      label = rate(m.tokens_per_s) + " tok/s";
      title = `15 min: ${num(t.tokens)} tokens, ${rate(t.tokens_per_s)}/s`;
      g.dataset.last = m.tokens_per_s ?? "";
    }
  } else {
    title = "no history";
  }
  const text = sv("text", { class: "clabel", x: x + 3, y: y + 9 });
  text.append(...[label].flat());
  g.append(text);
  g.append(sv("title", {}, title));
  parent.append(g);
  return g;
}
// charts draws count charts (req, lat, tok) side by side in a w×h box.
function charts(parent, x, y, w, h, s, id, count) {
  const gap = 6, cw = (w - gap * (count - 1)) / count;
  CHARTS.slice(0, count).forEach((m, i) => chart(parent, x + i * (cw + gap), y, cw, h, s, id, m));
}
// keyCharts draws a key's charts across its table's width.
function keyCharts(name, width) {
  const w = Math.max(240, (width || 400) - 14), h = 26;
  const svg = sv("svg", { class: "spark", width: w, height: h, viewBox: `0 0 ${w} ${h}` });
  charts(svg, 0, 0, w, h, historyOf("keys", name), "key:" + name, 3);
  return svg;
}
async function pollHistory() {
  try {
    state.history = await getJSON("/api/history?step=10");
    if (state.status) { drawKeys(state.status); drawDiagram(state.status); }
  } catch (e) {
    // the status poll reports a dead console
  }
  setTimeout(pollHistory, 2000);
}

// ---- keys, config, reloads --------------------------------------------------
function drawKeys(st) {
  const tb = $("keys").tBodies[0];
  tb.replaceChildren();
  for (const k of st.keys) {
    const name = k.name === "" ? el("span", { class: "none" }, "(no key)") : k.name;
    const errPct = k.requests ? " (" + Math.round(100 * k.errors / k.requests) + "%)" : "";
    const spend = k.spend_usd == null ? el("span", { class: "none" }, "–") : "$" + k.spend_usd.toFixed(k.spend_usd < 10 ? 4 : 2);
    const spendTitle = "since start" + (k.spend_day_usd == null ? "" :
      "; budgets: $" + k.spend_day_usd.toFixed(2) + " today, $" + k.spend_month_usd.toFixed(2) + " this month (UTC)");
    tb.append(el("tr", { class: "key" },
      el("td", { title: k.last_seen ? "last request " + ago(k.last_seen) : "no request yet" }, name),
      el("td", { class: "n" }, num(k.requests)),
      el("td", { class: "n" }, num(k.errors) + errPct),
      el("td", { class: "n" }, num(k.prompt_tokens) + " / " + num(k.completion_tokens)),
      el("td", { class: "n", title: spendTitle }, spend),
      el("td", {}, quotaCell(k.quota))));
    tb.append(el("tr", { class: "hist", "data-key": k.name }, el("td", { colspan: 6 }, keyCharts(k.name, $("keys").parentElement.clientWidth))));
  }
  const sig = st.keys.map(k => k.name).join("\n");
  if (sig !== state.keysSig) {
    state.keysSig = sig;
    const sel = document.querySelector("#explain-form select[name=key]");
    const cur = sel.value;
    sel.replaceChildren(el("option", { value: "" }, "(none)"));
    for (const k of st.keys) if (k.name) sel.append(el("option", { value: k.name }, k.name));
    sel.value = cur;
  }
}
const LIMIT_NAMES = { requests_per_minute: "req/min", tokens_per_minute: "tok/min", tokens_per_day: "tok/day",
  spend_per_day_usd: "$/day", spend_per_month_usd: "$/month" };
function quotaCell(q) {
  if (!q || !q.limits || !q.limits.length) return el("span", { class: "none" }, "no limits");
  // The limit closest to full.
  const l = q.limits.reduce((a, b) => (b.used / (b.limit || 1) > a.used / (a.limit || 1) ? b : a));
  const f = Math.min(1, l.limit > 0 ? l.used / l.limit : 0);
  const bar = el("b"); bar.style.width = Math.round(f * 100) + "%";
  return el("span", { title: q.limits.map(x => x.name + ": " + num(Math.round(x.used)) + " of " + num(x.limit)).join("\n") },
    el("span", { class: "meter" + (f >= 1 ? " full" : f > 0.8 ? " hi" : "") }, bar), Math.round(f * 100) + "% " + (LIMIT_NAMES[l.name] || l.name));
}
function drawConfig(st) {
  $("version").textContent = st.version;
  $("cfg-file").textContent = st.config.file || "(memory)";
  $("cfg-hash").textContent = st.config.hash.slice(0, 12);
  $("cfg-hash").title = st.config.hash;
  $("cfg-loaded").textContent = ago(st.config.loaded_at);
  $("cfg-loaded").title = new Date(st.config.loaded_at).toString();
  const a = $("cfg-auth");
  a.textContent = st.config.auth ? "client keys on" : "open: no client keys";
  a.className = "pill " + (st.config.auth ? "on" : "off");
  const ol = $("reloads");
  ol.replaceChildren();
  for (const r of st.config.reloads) {
    const li = el("li", {}, el("span", { class: "res " + r.result }, r.result),
      el("span", { class: "mono" }, hms(r.time)), "  ", el("code", { title: r.hash }, r.hash.slice(0, 12)));
    for (const p of r.problems || []) li.append(el("div", { class: "prob" }, p));
    ol.append(li);
  }
}

async function pollStatus() {
  try {
    const st = await getJSON("/api/status");
    state.status = st;
    state.lastOK = Date.now();
    drawConfig(st); drawKeys(st); drawDiagram(st); drawFilterOptions(st);
  } catch (e) {
    $("live-text").textContent = e.message;
  }
  setTimeout(pollStatus, 1000);
}

// ---- decisions -------------------------------------------------------------
function decisionRow(d) {
  const rule = d.rule >= 0 ? "#" + d.rule : d.rule === -1 ? "fallback" : "—";
  const tried = el("td", { title: d.tried.join(" → ") + (d.tried_total > d.tried.length ? " (+" + (d.tried_total - d.tried.length) + " more)" : "") + "; highlighted: the member that answered" });
  d.tried.forEach((n, i) => tried.append(el("span", { class: "chip" + (n === d.target && i === d.tried.length - 1 ? " final" : "") }, n)));
  if (!d.tried.length) tried.append(el("span", { class: "none" }, "none"));
  const cls = d.status < 400 ? "ok" : d.status < 500 ? "c4" : "c5";
  return el("tr", { class: "new", "data-seq": d.seq, "data-request-id": d.request_id },
    el("td", { class: "mono" }, hms(d.time)),
    el("td", { class: "mono hide-phone", title: d.request_id }, clip(d.request_id, 20)),
    el("td", {}, d.key || el("span", { class: "none" }, "–")),
    el("td", { title: d.model }, clip(d.model, 28)),
    el("td", {}, rule),
    tried,
    el("td", { class: "n", title: d.outcome + (d.attempts ? ", " + d.attempts + " attempt(s)" : "") }, el("span", { class: "st " + cls }, d.status)),
    el("td", { class: "n" }, d.latency_ms < 10 ? d.latency_ms.toFixed(2) + " ms" : Math.round(d.latency_ms) + " ms"));
}
// The decision list's filters (key, target, status) are the API's: a
// change starts the list over with the server's answer for them.
function decisionQuery() {
  const f = $("dec-filter"), p = new URLSearchParams();
  if (f.key.value !== "*") p.set("key", f.key.value);
  if (f.target.value !== "*") p.set("target", f.target.value);
  if (f.status.value) p.set("status", f.status.value);
  return p;
}
function drawFilterOptions(st) {
  const sig = st.keys.map(k => k.name).join("\n") + "\t" + st.targets.map(t => t.name).join("\n");
  if (sig === state.filterSig) return;
  state.filterSig = sig;
  const f = $("dec-filter");
  const fill = (sel, any, items) => {
    const cur = sel.value;
    sel.replaceChildren(el("option", { value: "*" }, any), ...items.map(([v, label]) => el("option", { value: v }, label)));
    sel.value = items.some(([v]) => v === cur) ? cur : "*";
  };
  fill(f.key, "any key", st.keys.map(k => [k.name, k.name === "" ? "(no key)" : k.name]));
  fill(f.target, "any target", st.targets.map(t => [t.name, t.name]));
}
const dec = { gen: 0, ctrl: null };
async function pollDecisions() {
  const gen = ++dec.gen;
  if (dec.ctrl) dec.ctrl.abort();
  const ctrl = new AbortController();
  dec.ctrl = ctrl;
  const tb = $("decisions").tBodies[0];
  tb.replaceChildren();
  state.decisions = 0;
  $("dec-count").textContent = "";
  let next = null; // the first answer is the newest decisions, at once
  while (gen === dec.gen) {
    try {
      const p = decisionQuery();
      if (next !== null) p.set("after", next);
      const r = await getJSON("/api/decisions?" + p, ctrl.signal);
      if (gen !== dec.gen) return;
      next = r.next;
      for (const d of r.decisions) {
        tb.prepend(decisionRow(d));
        state.decisions++;
      }
      while (tb.rows.length > MAX_ROWS) tb.deleteRow(tb.rows.length - 1);
      $("dec-count").textContent = state.decisions ? state.decisions + " seen" : "";
      const last = r.decisions[r.decisions.length - 1];
      if (last) {
        state.hot.set("rule", last.rule); state.hot.set("targets", last.tried);
        clearTimeout(state.hotTimer);
        state.hotTimer = setTimeout(() => { state.hot.clear(); if (state.status) drawDiagram(state.status); }, 1500);
        if (state.status) drawDiagram(state.status);
      }
    } catch (e) {
      if (gen !== dec.gen) return;
      await new Promise(res => setTimeout(res, 2000));
    }
  }
}

// ---- explain ---------------------------------------------------------------
async function explain(ev) {
  ev.preventDefault();
  const f = ev.target, p = new URLSearchParams();
  p.set("model", f.model.value);
  p.set("surface", f.surface.value);
  if (f.key.value) p.set("key", f.key.value);
  if (f.user.value) p.set("user", f.user.value);
  if (f.metadata.value) p.set("metadata", f.metadata.value);
  if (f.stream.checked) p.set("stream", "true");
  if (f.tools.checked) p.set("tools", "true");
  const out = $("explain-out");
  try {
    const r = await getJSON("/api/explain?" + p);
    out.className = "out";
    out.replaceChildren(...r.lines.map(l => el("div", { class: l.startsWith("outcome:") ? "hl" : "" }, l)));
  } catch (e) {
    out.className = "out err";
    out.textContent = e.message;
  }
}

function tick() {
  $("clock").textContent = new Date().toLocaleTimeString([], { hour12: false });
  const ok = Date.now() - state.lastOK < 3000;
  $("live-dot").className = "dot " + (ok ? "ok" : state.lastOK ? "bad" : "");
  if (ok) $("live-text").textContent = "live";
}

document.addEventListener("DOMContentLoaded", () => {
  $("explain-form").addEventListener("submit", explain);
  $("dec-filter").addEventListener("change", pollDecisions);
  $("dec-filter").addEventListener("submit", ev => ev.preventDefault());
  window.addEventListener("resize", () => state.status && drawDiagram(state.status));
  setInterval(tick, 500);
  pollStatus();
  pollHistory();
  pollDecisions();
});
