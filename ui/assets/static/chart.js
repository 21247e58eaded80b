// tandem ui: the charts' hover values, drag-to-zoom and live updates. The
// server renders every chart as SVG; this script only moves what is there
// (and adds points a live run streams). No dependencies.
"use strict";
window.tandemCharts = (function () {
  const L = 56, R = 12, T = 12, B = 28, NS = "http://www.w3.org/2000/svg"; // chart.go's padding
  const charts = Array.from(document.querySelectorAll("svg.chart")).map(svg => ({
    svg, area: svg.dataset.area === "true", timeline: svg.classList.contains("timeline"),
    W: svg.viewBox.baseVal.width, H: svg.viewBox.baseVal.height,
  }));
  let zoom = null; // [x0, x1] in steps, shared by every chart; null: all

  const fmt = (v, p) => String(Number(v.toPrecision(p)));
  // ticks and label are chart.go's: round values about a fifth of the
  // range apart, with the decimals they need.
  const ticks = (lo, hi) => {
    const raw = (hi - lo) / 5;
    let k = Math.floor(Math.log10(raw)), p = Math.pow(10, k), m = 10;
    for (const c of [1, 2, 2.5, 5]) if (raw <= c * p * (1 + 1e-9)) { m = c; break; }
    if (m === 10) { m = 1; k += 1; p *= 10; }
    const step = m * p, d = Math.max(0, -k) + (m === 2.5 && k <= 0 ? 1 : 0), out = [];
    for (let i = Math.ceil(lo / step - 1e-9); i * step <= hi + step * 1e-9; i++) out.push(i * step);
    return [out, d];
  };
  const label = (v, d) => Math.abs(v) >= 1e6 ? String(Number(v.toPrecision(4))) : (v === 0 ? 0 : v).toFixed(Math.min(d, 10));
  const el = (parent, name, attrs, text) => {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return parent.appendChild(e);
  };
  // axes redraws the grid and tick labels for bounds b.
  const axes = (c, b, sx, sy) => {
    const g = c.svg.querySelector("g.axes"), xl = g.querySelector("text.xl");
    g.querySelectorAll("line.grid, text.yt, text.xt").forEach(e => e.remove());
    const [ys, yd] = ticks(b.y0, b.y1), [xs, xd] = ticks(b.x0, b.x1);
    ys.forEach(v => {
      g.insertBefore(el(g, "line", { class: "grid", x1: L, y1: sy(v).toFixed(1), x2: c.W - R, y2: sy(v).toFixed(1) }), xl);
      g.insertBefore(el(g, "text", { class: "yt", x: L - 4, y: (sy(v) + 3).toFixed(1) }, label(v, yd)), xl);
    });
    xs.forEach(v => g.insertBefore(el(g, "text", { class: "xt", x: sx(v).toFixed(1), y: c.H - B + 14 }, label(v, xd)), xl));
  };
  const marks = c => Array.from(c.svg.querySelectorAll("circle[data-x]"));

  // bounds: the x range (the zoom, else the data's) and the y range of the
  // points inside it, widened as the server widens them.
  const bounds = c => {
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    marks(c).forEach(p => {
      const x = +p.dataset.x, y = +p.dataset.y;
      x0 = Math.min(x0, x); x1 = Math.max(x1, x);
      if (!zoom || (x >= zoom[0] && x <= zoom[1])) { y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
    });
    if (zoom) { x0 = zoom[0]; x1 = zoom[1]; }
    if (x0 === Infinity) { x0 = 0; x1 = 1; }
    if (y0 === Infinity) { y0 = 0; y1 = 1; }
    if (c.area) y0 = Math.min(y0, 0);
    if (x1 === x0) { x0 -= 1; x1 += 1; }
    if (y1 === y0) { y0 -= 1; y1 += 1; }
    return { x0, x1, y0, y1 };
  };

  // layout places every mark, line and tick label for the current zoom.
  const layout = c => {
    const b = bounds(c), W = c.W, H = c.H;
    const sx = v => L + (v - b.x0) / (b.x1 - b.x0) * (W - L - R);
    const sy = v => H - B - (v - b.y0) / (b.y1 - b.y0) * (H - T - B);
    let shown = 0;
    marks(c).forEach(p => {
      const x = +p.dataset.x, inside = x >= b.x0 && x <= b.x1;
      p.setAttribute("cx", sx(x).toFixed(1)); p.setAttribute("cy", sy(+p.dataset.y).toFixed(1));
      p.style.display = inside ? "" : "none";
      if (inside) shown++;
    });
    c.svg.querySelectorAll("g.series").forEach(g => {
      const pts = Array.from(g.querySelectorAll("circle.pt")).filter(p => p.style.display !== "none");
      const xy = pts.map(p => [p.getAttribute("cx"), p.getAttribute("cy")]);
      const line = [];
      xy.forEach((q, i) => { if (c.timeline && i > 0) line.push(q[0] + "," + xy[i - 1][1]); line.push(q[0] + "," + q[1]); });
      g.querySelector("polyline").setAttribute("points", line.join(" "));
      const area = g.querySelector("polygon");
      if (area) {
        const base = sy(Math.max(b.y0, 0)).toFixed(1);
        area.setAttribute("points", xy.length ? xy[0][0] + "," + base + " " + line.join(" ") + " " + xy[xy.length - 1][0] + "," + base : "");
      }
    });
    axes(c, b, sx, sy);
    const total = c.svg.querySelectorAll("circle.pt").length;
    if (!c.timeline) c.svg.dataset.points = total;
    c.svg.dataset.shown = shown;
    c.svg.dataset.zoom = zoom ? zoom[0] + "-" + zoom[1] : "";
    const count = c.svg.closest("figure") && c.svg.closest("figure").querySelector(".count");
    if (count && !c.timeline) count.textContent = "(" + total + " points" + (zoom ? ", " + shown + " in steps " + zoom[0] + "–" + zoom[1] : "") + ")";
    c.b = b;
  };

  const setZoom = z => { zoom = z; charts.forEach(layout); };

  // dataX converts a mouse event to the chart's x in steps.
  const svgPoint = (c, e) => {
    const pt = c.svg.createSVGPoint(); pt.x = e.clientX; pt.y = e.clientY;
    return pt.matrixTransform(c.svg.getScreenCTM().inverse());
  };
  const dataX = (c, px) => c.b.x0 + (Math.min(Math.max(px, L), c.W - R) - L) / (c.W - L - R) * (c.b.x1 - c.b.x0);

  // hover shows, for the step nearest the pointer, each series' value.
  const hover = (c, e) => {
    const x = dataX(c, svgPoint(c, e).x);
    const rows = [];
    let near = null;
    c.svg.querySelectorAll("g.series, g.batches").forEach(g => {
      let best = null;
      g.querySelectorAll("circle[data-x]").forEach(p => {
        if (p.style.display === "none") return;
        if (!best || Math.abs(+p.dataset.x - x) < Math.abs(+best.dataset.x - x)) best = p;
      });
      if (!best) return;
      if (near === null || Math.abs(+best.dataset.x - x) < Math.abs(near - x)) near = +best.dataset.x;
      rows.push([g.dataset.name, best]);
    });
    c.svg.querySelectorAll("circle.hot").forEach(p => p.classList.remove("hot"));
    if (near === null) return hide(c);
    const lines = [c.svg.closest("figure").dataset.xlabel + " " + fmt(near, 6)];
    rows.forEach(([name, p]) => {
      p.classList.add("hot");
      const at = +p.dataset.x === near ? "" : " (" + fmt(+p.dataset.x, 6) + ")";
      lines.push(name + ": " + fmt(+p.dataset.y, 6) + at);
    });
    const guide = c.guide || (c.guide = c.svg.appendChild(document.createElementNS(NS, "line")));
    guide.setAttribute("class", "guide");
    const gx = L + (near - c.b.x0) / (c.b.x1 - c.b.x0) * (c.W - L - R);
    guide.setAttribute("x1", gx); guide.setAttribute("x2", gx); guide.setAttribute("y1", T); guide.setAttribute("y2", c.H - B);
    guide.style.display = "";
    const tip = c.tip || (c.tip = c.svg.closest("figure").appendChild(document.createElement("div")));
    tip.className = "tip"; tip.hidden = false;
    tip.textContent = lines.join("\n");
    const box = c.svg.getBoundingClientRect();
    tip.style.left = Math.min(e.clientX - box.left + 14, box.width - 160) + "px";
    tip.style.top = (e.clientY - box.top + 10) + "px";
  };
  const hide = c => {
    if (c.tip) c.tip.hidden = true;
    if (c.guide) c.guide.style.display = "none";
    c.svg.querySelectorAll("circle.hot").forEach(p => p.classList.remove("hot"));
  };

  // drag selects a step range; a double click shows every step again.
  const drag = c => {
    let start = null, rect = null;
    c.svg.addEventListener("mousedown", e => {
      hide(c);
      start = svgPoint(c, e).x;
      rect = rect || c.svg.appendChild(document.createElementNS(NS, "rect"));
      rect.setAttribute("class", "sel"); rect.setAttribute("y", T); rect.setAttribute("height", c.H - T - B);
      rect.setAttribute("x", start); rect.setAttribute("width", 0); rect.style.display = "";
      e.preventDefault();
    });
    c.svg.addEventListener("mousemove", e => {
      if (start === null) return hover(c, e);
      const x = svgPoint(c, e).x;
      rect.setAttribute("x", Math.min(start, x)); rect.setAttribute("width", Math.abs(x - start));
    });
    const end = e => {
      if (start === null) return;
      const x = svgPoint(c, e).x, a = Math.min(start, x), b = Math.max(start, x);
      start = null; rect.style.display = "none";
      // Steps are whole numbers: the zoom keeps the ones selected.
      const z0 = Math.ceil(dataX(c, a)), z1 = Math.floor(dataX(c, b));
      if (b - a >= 4 && z1 > z0) setZoom([z0, z1]);
      if (e.type === "mouseup") hover(c, e);
    };
    c.svg.addEventListener("mouseup", end);
    c.svg.addEventListener("mouseleave", e => { end(e); hide(c); });
    c.svg.addEventListener("dblclick", () => setZoom(null));
  };

  charts.forEach(c => {
    const fig = c.svg.closest("figure");
    if (fig) fig.dataset.xlabel = (c.svg.querySelector("text.xl") || {}).textContent || "x";
    // The server placed everything: note the bounds, move nothing.
    c.b = bounds(c);
    c.svg.dataset.shown = marks(c).length;
    c.svg.dataset.zoom = "";
    drag(c);
  });

  // add appends a live metrics record's values to the series that name a
  // field, then lays the charts out again.
  const valueOf = (rec, field) => field.startsWith("staleness.") ? (rec.staleness || {})[field.slice(10)] || 0 : rec[field];
  // batches adds a timeline's marks for rec's batch: staleness k groups came
  // from the version the trainer held before the step, minus k.
  const batches = (c, rec) => {
    const g = c.svg.querySelector("g.batches"), line = c.svg.querySelector('g.series[data-field="version"]');
    const last = line && line.querySelector("circle.pt:last-of-type");
    if (!g || !last) return;
    const before = +last.dataset.y;
    Object.entries(rec.staleness || {}).forEach(([k, n]) => {
      if (!(n > 0)) return;
      const p = document.createElementNS(NS, "circle"), v = Math.max(before - +k, 0);
      p.setAttribute("class", "batch"); p.setAttribute("r", "3");
      p.dataset.x = rec.step; p.dataset.y = v;
      const t = document.createElementNS(NS, "title");
      t.textContent = "step " + rec.step + " trained on " + n + " group(s) of version " + v + " (staleness " + k + ")";
      p.appendChild(t); g.appendChild(p);
    });
  };
  const add = rec => {
    charts.forEach(c => {
      if (c.timeline) batches(c, rec);
      let changed = c.timeline;
      c.svg.querySelectorAll("g.series").forEach(g => {
        const field = g.dataset.field, y = field ? valueOf(rec, field) : undefined;
        if (typeof y !== "number") return;
        const x = field === "accuracy" ? rec.step + 1 : rec.step;
        const p = document.createElementNS(NS, "circle");
        p.setAttribute("class", "pt"); p.setAttribute("r", "2");
        p.dataset.x = x; p.dataset.y = y;
        const t = document.createElementNS(NS, "title");
        t.textContent = g.dataset.name + ": step " + x + ", " + y;
        p.appendChild(t); g.appendChild(p);
        changed = true;
      });
      if (changed) layout(c);
    });
  };
  return { add, setZoom, zoom: () => zoom };
})();
