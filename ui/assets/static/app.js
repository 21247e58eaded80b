// tandem ui: sorting and filtering of the runs list, and live charts on a
// run page (server-sent events from /runs/{run}/events). No dependencies.
"use strict";
(function () {
  // ---- runs list ----
  const table = document.getElementById("runs");
  if (table) {
    const body = table.tBodies[0];
    table.querySelectorAll("th").forEach((th, col) => {
      const type = th.dataset.type;
      if (!type || type === "none") return;
      th.addEventListener("click", () => {
        const asc = !th.classList.contains("asc");
        table.querySelectorAll("th").forEach(h => h.classList.remove("asc", "desc"));
        th.classList.add(asc ? "asc" : "desc");
        const key = tr => tr.cells[col] ? tr.cells[col].textContent.trim() : "";
        const rows = Array.from(body.rows).filter(r => r.dataset.run);
        rows.sort((a, b) => {
          let x = key(a), y = key(b), c;
          if (type === "num") { x = parseFloat(x); y = parseFloat(y); c = (isNaN(x) ? -Infinity : x) - (isNaN(y) ? -Infinity : y); }
          else c = x.localeCompare(y);
          return asc ? c : -c;
        });
        rows.forEach(r => body.appendChild(r));
      });
    });
    const filter = document.getElementById("filter");
    filter.addEventListener("input", () => {
      const q = filter.value.toLowerCase();
      Array.from(body.rows).forEach(r => { r.hidden = q !== "" && !r.textContent.toLowerCase().includes(q); });
    });
    const cmp = document.getElementById("compare");
    const picked = () => Array.from(table.querySelectorAll(".pick:checked")).map(c => c.value);
    table.addEventListener("change", () => { cmp.disabled = picked().length < 2; });
    cmp.addEventListener("click", () => {
      location.href = "/compare?" + picked().map(n => "run=" + encodeURIComponent(n)).join("&");
    });
  }

  // ---- live run page ----
  const live = document.getElementById("live");
  if (!live || !live.dataset.live || !window.EventSource) return;
  const W = 640, H = 240, L = 56, R = 12, T = 12, B = 28, NS = "http://www.w3.org/2000/svg";
  const charts = Array.from(document.querySelectorAll("svg.chart")).map(svg => ({
    svg, x0: +svg.dataset.x0, x1: +svg.dataset.x1, y0: +svg.dataset.y0, y1: +svg.dataset.y1,
    area: svg.dataset.area === "true", empty: svg.querySelectorAll("circle.pt").length === 0,
  }));
  const valueOf = (rec, field) => {
    if (field.startsWith("staleness.")) return (rec.staleness || {})[field.slice(10)] || 0;
    return rec[field];
  };
  const redraw = c => {
    const sx = v => L + (v - c.x0) / (c.x1 - c.x0) * (W - L - R);
    const sy = v => H - B - (v - c.y0) / (c.y1 - c.y0) * (H - T - B);
    c.svg.querySelectorAll("g.series").forEach(g => {
      const pts = Array.from(g.querySelectorAll("circle.pt"));
      pts.forEach(p => { p.setAttribute("cx", sx(+p.dataset.x).toFixed(1)); p.setAttribute("cy", sy(+p.dataset.y).toFixed(1)); });
      const line = pts.map(p => p.getAttribute("cx") + "," + p.getAttribute("cy")).join(" ");
      g.querySelector("polyline").setAttribute("points", line);
      const area = g.querySelector("polygon");
      if (area && pts.length) {
        const base = sy(Math.max(c.y0, 0)).toFixed(1);
        area.setAttribute("points", pts[0].getAttribute("cx") + "," + base + " " + line + " " + pts[pts.length - 1].getAttribute("cx") + "," + base);
      }
    });
    c.svg.dataset.points = c.svg.querySelectorAll("circle.pt").length;
    const fig = c.svg.closest("figure");
    const count = fig && fig.querySelector(".count");
    if (count) count.textContent = "(" + c.svg.dataset.points + " points)";
  };
  const add = rec => {
    charts.forEach(c => {
      let changed = false;
      c.svg.querySelectorAll("g.series").forEach(g => {
        const field = g.dataset.field;
        if (!field) return;
        const y = valueOf(rec, field);
        if (typeof y !== "number") return;
        const x = field === "accuracy" ? rec.step + 1 : rec.step;
        if (c.empty) { c.x0 = x; c.x1 = x + 1; c.y0 = y; c.y1 = y + 1; c.empty = false; }
        c.x0 = Math.min(c.x0, x); c.x1 = Math.max(c.x1, x);
        c.y0 = Math.min(c.y0, y); c.y1 = Math.max(c.y1, y);
        const p = document.createElementNS(NS, "circle");
        p.setAttribute("class", "pt"); p.setAttribute("r", "2");
        p.dataset.x = x; p.dataset.y = y;
        const t = document.createElementNS(NS, "title");
        t.textContent = g.dataset.name + ": step " + x + ", " + y;
        p.appendChild(t); g.appendChild(p);
        changed = true;
      });
      if (changed) redraw(c);
    });
    document.getElementById("step-counter").textContent = rec.step + 1;
  };
  const es = new EventSource("/runs/" + encodeURIComponent(live.dataset.run) + "/events?offset=" + live.dataset.offset + "&lines=" + live.dataset.lines);
  es.addEventListener("metrics", e => add(JSON.parse(e.data)));
  es.addEventListener("bad", e => {
    const b = JSON.parse(e.data), list = document.querySelector("#bad-lines ul"), li = document.createElement("li");
    li.textContent = "line " + b.line + ": " + b.error + " " + b.text;
    list.appendChild(li);
    const n = document.getElementById("bad-count"); n.textContent = +n.textContent + 1;
  });
  es.addEventListener("reset", () => { es.close(); location.reload(); });
})();
