// pydp-synopsis serve: the page of one published synopsis (no framework, no build step).
// It reads the JSON API of its own origin only and writes text with textContent.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const name = document.body.dataset.synopsis;
  const api = "/api/synopses/" + encodeURIComponent(name);
  const $ = (id) => document.getElementById(id);
  let description = null;

  function svg(tag, attrs, parent) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    if (parent) parent.appendChild(el);
    return el;
  }

  function fmt(x) {
    if (x === null || x === undefined) return "—";
    const a = Math.abs(x);
    if (a !== 0 && (a >= 1e9 || a < 1e-3)) return x.toExponential(3);
    return x.toLocaleString("en-US", { maximumFractionDigits: a < 10 ? 3 : 1 });
  }

  function showError(message) {
    const el = $("error");
    el.textContent = message;
    el.hidden = !message;
  }

  async function getJSON(url, options) {
    const response = await fetch(url, options);
    const body = await response.json();
    if (!response.ok) throw new Error(body && body.error ? body.error : "HTTP " + response.status);
    return body;
  }

  // ------------------------------------------------------------------ the query form
  function boundInputs(columns) {
    const box = $("bounds");
    columns.forEach((col, axis) => {
      const set = document.createElement("fieldset");
      const legend = document.createElement("legend");
      legend.textContent = col.name + " (" + col.units + ")";
      set.appendChild(legend);
      for (const side of ["lo", "hi"]) {
        const label = document.createElement("label");
        label.textContent = side === "lo" ? "from (inclusive)" : "to (inclusive)";
        const input = document.createElement("input");
        input.id = side + "-" + axis;
        input.name = side + "-" + axis;
        input.required = true;
        input.placeholder = col.domain_text[side === "lo" ? 0 : 1];
        label.appendChild(input);
        set.appendChild(label);
      }
      box.appendChild(set);
    });
  }

  // A bound as a JSON token: integers and decimals as numbers (their exact text: the
  // server reads 40.1 as the decimal 40.1), dates and times as strings.
  function token(col, text) {
    const t = text.trim();
    if (col.kind === "integer" && /^-?\d+$/.test(t)) return t;
    if (col.kind === "decimal" && /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(t)) return t;
    return JSON.stringify(t);
  }

  function requestBody(columns) {
    const pairs = columns.map((col, axis) =>
      "[" + token(col, $("lo-" + axis).value) + "," + token(col, $("hi-" + axis).value) + "]");
    return columns.length === 1 ? '{"ranges":[' + pairs[0] + "]}"
                                : '{"boxes":[[' + pairs.join(",") + "]]}";
  }

  async function count(event) {
    if (event) event.preventDefault();
    showError("");
    try {
      const result = await getJSON(api + "/count", {
        method: "POST", headers: { "content-type": "application/json" },
        body: requestBody(description.columns),
      });
      showAnswer(result.answers[0], result.std[0], result.low[0], result.high[0]);
    } catch (err) {
      $("result").hidden = true;
      showError(err.message);
    }
  }

  function showAnswer(answer, std, low, high) {
    $("answer").textContent = fmt(answer);
    $("std").textContent = fmt(std);
    $("low").textContent = fmt(low);
    $("high").textContent = fmt(high);
    $("answer").dataset.value = String(answer);
    $("std").dataset.value = String(std);
    $("low").dataset.value = String(low);
    $("high").dataset.value = String(high);
    drawErrorBar(answer, low, high);
    $("result").hidden = false;
  }

  function drawErrorBar(answer, low, high) {
    const box = $("errorbar");
    box.replaceChildren();
    const W = 640, H = 70, pad = 50;
    const lo = Math.min(0, low), hi = Math.max(high, answer, 1) * 1.05;
    const x = (v) => pad + (W - 2 * pad) * (v - lo) / (hi - lo || 1);
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img",
                           "aria-label": "answer with its interval" }, box);
    svg("line", { x1: pad, x2: W - pad, y1: 50, y2: 50, class: "whisker" }, s);
    svg("rect", { x: x(low), y: 18, width: Math.max(2, x(high) - x(low)), height: 22, class: "band" }, s);
    svg("line", { x1: x(low), x2: x(low), y1: 14, y2: 44, class: "whisker" }, s);
    svg("line", { x1: x(high), x2: x(high), y1: 14, y2: 44, class: "whisker" }, s);
    svg("circle", { cx: x(answer), cy: 29, r: 5, class: "point" }, s);
    for (const v of [lo, hi]) {
      const t = svg("text", { x: x(v), y: 66, "text-anchor": "middle", class: "axis" }, s);
      t.textContent = fmt(v);
    }
  }

  // ------------------------------------------------------------------ 1-D bars
  function drawBars(picture) {
    const box = $("chart");
    box.replaceChildren();
    const n = picture.answers.length, W = 900, H = 320, left = 56, bottom = 40, top = 12;
    const ymax = Math.max(1, ...picture.high);
    const bw = (W - left - 10) / n;
    const y = (v) => top + (H - top - bottom) * (1 - Math.max(0, v) / ymax);
    const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, id: "bars", role: "img",
                           "aria-label": "private count per bin with its interval" }, box);
    const axis = svg("g", { class: "axis" }, s);
    for (const f of [0, 0.5, 1]) {
      const v = ymax * f;
      svg("line", { x1: left - 4, x2: left, y1: y(v), y2: y(v) }, axis);
      const t = svg("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end" }, axis);
      t.textContent = fmt(v);
    }
    for (let i = 0; i < n; i++) {
      const a = picture.answers[i];
      svg("rect", { x: left + i * bw, y: y(a), width: Math.max(0.5, bw - 0.6),
                    height: Math.max(0, y(0) - y(a)), class: "bar" }, s);
      const cx = left + (i + 0.5) * bw;
      svg("line", { x1: cx, x2: cx, y1: y(picture.high[i]), y2: y(picture.low[i]), class: "whisker" }, s);
    }
    for (const i of [0, Math.floor(n / 2), n - 1]) {
      const t = svg("text", { x: left + (i + 0.5) * bw, y: H - bottom + 16,
                              "text-anchor": i === 0 ? "start" : i === n - 1 ? "end" : "middle" }, axis);
      t.textContent = i === n - 1 ? picture.hi[i] : picture.lo[i];
    }
    const sel = svg("rect", { class: "selection", x: 0, y: top, width: 0, height: H - top - bottom,
                              visibility: "hidden" }, s);
    // drag to select bins: the range from the first bin's start to the last's end
    const binAt = (event) => {
      const p = s.createSVGPoint();
      p.x = event.clientX; p.y = event.clientY;
      const q = p.matrixTransform(s.getScreenCTM().inverse());
      return Math.min(n - 1, Math.max(0, Math.floor((q.x - left) / bw)));
    };
    let start = null;
    const mark = (a, b) => {
      const i = Math.min(a, b), j = Math.max(a, b);
      sel.setAttribute("x", left + i * bw);
      sel.setAttribute("width", (j - i + 1) * bw);
      sel.setAttribute("visibility", "visible");
      return [i, j];
    };
    s.addEventListener("pointerdown", (e) => { start = binAt(e); mark(start, start);
                                              s.setPointerCapture(e.pointerId); });
    s.addEventListener("pointermove", (e) => { if (start !== null) mark(start, binAt(e)); });
    s.addEventListener("pointerup", (e) => {
      if (start === null) return;
      const [i, j] = mark(start, binAt(e));
      start = null;
      $("lo-0").value = picture.lo[i];
      $("hi-0").value = picture.hi[j];
      count();
    });
    $("chart-note").textContent = n + " bins from " + picture.lo[0] + " to " + picture.hi[n - 1] +
      "; whiskers: each bin's " + Math.round(picture.confidence * 100) +
      "% interval. Drag over the bars to count a range.";
  }

  // ------------------------------------------------------------------ 2-D heat map
  const STOPS = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];

  function colour(t) {
    const x = Math.min(1, Math.max(0, t)) * (STOPS.length - 1);
    const i = Math.min(STOPS.length - 2, Math.floor(x)), f = x - i;
    const c = STOPS[i].map((v, k) => Math.round(v + f * (STOPS[i + 1][k] - v)));
    return "rgb(" + c.join(",") + ")";
  }

  function drawHeatMap(picture) {
    const box = $("chart");
    box.replaceChildren();
    const rows = picture.answers, ny = rows.length, nx = rows[0].length;
    const W = 900, H = 560, left = 90, bottom = 40, right = 20;
    const canvas = document.createElement("canvas");
    canvas.width = W; canvas.height = H; canvas.id = "heatmap";
    box.appendChild(canvas);
    const ctx = canvas.getContext("2d");
    const vmax = Math.max(1, ...rows.flat());
    const cw = (W - left - right) / nx, ch = (H - bottom - 10) / ny;
    for (let r = 0; r < ny; r++) {
      for (let c = 0; c < nx; c++) {
        ctx.fillStyle = colour(rows[r][c] / vmax);
        ctx.fillRect(left + c * cw, H - bottom - (r + 1) * ch, Math.ceil(cw), Math.ceil(ch));
      }
    }
    ctx.fillStyle = "#5b6475";
    ctx.font = "12px system-ui, sans-serif";
    ctx.textAlign = "left";
    ctx.fillText(picture.x.lo[0], left, H - bottom + 16);
    ctx.textAlign = "right";
    ctx.fillText(picture.x.hi[nx - 1], W - right, H - bottom + 16);
    ctx.fillText(picture.y.lo[0], left - 6, H - bottom - 2);
    ctx.fillText(picture.y.hi[ny - 1], left - 6, 22);
    const cols = description.columns;
    $("chart-title").textContent = "Released counts per cell: " + cols[0].name + " × " + cols[1].name;
    $("chart-note").textContent = nx + " × " + ny + " cells; brightest = " + fmt(vmax) +
      "; median noise std per cell ± " + fmt(picture.median_std) + ". Click two cells to count the box between them.";
    // two clicks select a box (corners in user units)
    let first = null;
    canvas.addEventListener("click", (e) => {
      const rect = canvas.getBoundingClientRect();
      const px = (e.clientX - rect.left) * W / rect.width, py = (e.clientY - rect.top) * H / rect.height;
      const c = Math.min(nx - 1, Math.max(0, Math.floor((px - left) / cw)));
      const r = Math.min(ny - 1, Math.max(0, Math.floor((H - bottom - py) / ch)));
      if (first === null) { first = [c, r]; return; }
      const [c0, c1] = [Math.min(first[0], c), Math.max(first[0], c)];
      const [r0, r1] = [Math.min(first[1], r), Math.max(first[1], r)];
      first = null;
      $("lo-0").value = picture.x.lo[c0]; $("hi-0").value = picture.x.hi[c1];
      $("lo-1").value = picture.y.lo[r0]; $("hi-1").value = picture.y.hi[r1];
      count();
    });
  }

  // ------------------------------------------------------------------ counters
  function drawCounter(d) {
    $("chart-title").textContent = "Running count";
    const box = $("chart");
    box.replaceChildren();
    const rel = d.release;
    const p = document.createElement("p");
    if (!rel) {
      p.textContent = "This counter's checkpoint holds no current release to show.";
      box.appendChild(p);
      return;
    }
    p.className = "big";
    p.id = "release";
    p.textContent = fmt(rel.value);
    box.appendChild(p);
    const when = document.createElement("p");
    when.textContent = "after " + rel.time.toLocaleString("en-US") + " of " +
      d.horizon.toLocaleString("en-US") + " items";
    box.appendChild(when);
    const bar = document.createElement("div");
    bar.className = "progress";
    const fill = document.createElement("div");
    fill.style.width = (100 * rel.time / d.horizon).toFixed(2) + "%";
    bar.appendChild(fill);
    box.appendChild(bar);
    if (rel.bound !== undefined) {
      showAnswer(rel.value, rel.std === undefined ? null : rel.std, rel.low, rel.high);
      $("query-section").hidden = false;
      $("query-title").textContent = "Its error";
      $("query-form").hidden = true;
      $("interval-note").textContent = "(a bound on every release of this counter at once)";
      $("chart-note").textContent = Math.round(rel.confidence * 100) + "% bound ± " + fmt(rel.bound) +
        " (" + rel.bound_is + ").";
    }
  }

  // ------------------------------------------------------------------ start
  async function start() {
    try {
      description = await getJSON(api);
    } catch (err) {
      $("summary").textContent = "cannot read the synopsis: " + err.message;
      return;
    }
    const d = description;
    const eps = "ε = " + d.epsilon_text + (d.delta ? ", δ = " + d.delta : "");
    if (d.kind === "counter") {
      $("summary").textContent = d.class + ", " + eps + ", horizon " + d.horizon.toLocaleString("en-US");
      drawCounter(d);
      document.body.dataset.ready = "true";
      return;
    }
    const cols = d.columns.map((c) => c.name + " (" + c.units + ", " + c.domain_text[0] + " .. " +
                                      c.domain_text[1] + ")");
    $("summary").textContent = d.class + ", " + eps + "; " + cols.join("; ");
    boundInputs(d.columns);
    $("query-title").textContent = d.columns.length === 1 ? "Count a range" : "Count a box";
    $("query-section").hidden = false;
    $("query-form").addEventListener("submit", count);
    try {
      const picture = await getJSON(api + "/distribution");
      if (picture.kind === "interval") drawBars(picture); else drawHeatMap(picture);
    } catch (err) {
      $("chart-note").textContent = "no picture: " + err.message;
    }
    document.body.dataset.ready = "true";
  }

  start();
})();
