// tandem ui: sorting and filtering of tables, the live run page (server-sent
// events from /runs/{run}/events, drawn by chart.js) and the playground.
// No dependencies.
"use strict";
(function () {
  // ---- sortable tables (runs list, samples) ----
  document.querySelectorAll("table.sortable").forEach(table => {
    const body = table.tBodies[0], width = table.tHead.rows[0].cells.length;
    const rowsOf = () => Array.from(body.rows).filter(r => r.cells.length === width);
    table.querySelectorAll("th").forEach((th, col) => {
      const type = th.dataset.type;
      if (!type || type === "none") return;
      th.addEventListener("click", () => {
        const asc = !th.classList.contains("asc");
        table.querySelectorAll("th").forEach(h => h.classList.remove("asc", "desc"));
        th.classList.add(asc ? "asc" : "desc");
        const key = tr => tr.cells[col] ? tr.cells[col].textContent.trim() : "";
        const rows = rowsOf();
        rows.sort((a, b) => {
          let x = key(a), y = key(b), c;
          if (type === "num") { x = parseFloat(x); y = parseFloat(y); c = (isNaN(x) ? -Infinity : x) - (isNaN(y) ? -Infinity : y); }
          else c = x.localeCompare(y);
          return asc ? c : -c;
        });
        rows.forEach(r => body.appendChild(r));
      });
    });
  });
  const filterRows = (input, table) => {
    if (!input || !table) return;
    input.addEventListener("input", () => {
      const q = input.value.toLowerCase();
      Array.from(table.tBodies[0].rows).forEach(r => { r.hidden = q !== "" && !r.textContent.toLowerCase().includes(q); });
    });
  };

  // ---- runs list ----
  const table = document.getElementById("runs");
  if (table) {
    filterRows(document.getElementById("filter"), table);
    const cmp = document.getElementById("compare");
    const picked = () => Array.from(table.querySelectorAll(".pick:checked")).map(c => c.value);
    table.addEventListener("change", () => { cmp.disabled = picked().length < 2; });
    cmp.addEventListener("click", () => {
      location.href = "/compare?" + picked().map(n => "run=" + encodeURIComponent(n)).join("&");
    });
  }
  filterRows(document.getElementById("sample-filter"), document.getElementById("samples"));

  // ---- playground ----
  const form = document.getElementById("sample-form");
  if (form) {
    const status = document.getElementById("pg-status"), out = document.getElementById("pg-out");
    form.addEventListener("submit", async e => {
      e.preventDefault();
      form.dataset.state = "running";
      status.className = "note"; status.textContent = "sampling…"; out.textContent = "";
      let ans;
      try {
        const resp = await fetch(form.action, { method: "POST", body: new URLSearchParams(new FormData(form)) });
        ans = await resp.json();
      } catch (err) {
        ans = { error: String(err) };
      }
      if (ans.error) {
        status.className = "bad"; status.textContent = ans.error; form.dataset.state = "error";
        return;
      }
      (ans.completions || []).forEach(c => {
        const li = document.createElement("li"), code = document.createElement("code"), meta = document.createElement("span");
        li.className = "completion"; code.textContent = c.text;
        meta.className = "note"; meta.textContent = "  " + c.tokens + " tokens · log p " + c.logprob.toFixed(3) + " · " + c.stop_reason;
        li.append(code, meta); out.appendChild(li);
      });
      status.textContent = (ans.completions || []).length + " completions of " + JSON.stringify(ans.prompt) + " from " +
        (ans.checkpoint || "the base model") + " in " + ans.seconds.toFixed(2) + " s";
      form.dataset.state = "done";
    });
  }

  // ---- live run page ----
  const live = document.getElementById("live");
  if (!live || !live.dataset.live || !window.EventSource || !window.tandemCharts) return;
  const es = new EventSource("/runs/" + encodeURIComponent(live.dataset.run) + "/events?offset=" + live.dataset.offset + "&lines=" + live.dataset.lines);
  es.addEventListener("metrics", e => {
    const rec = JSON.parse(e.data);
    window.tandemCharts.add(rec);
    document.getElementById("step-counter").textContent = rec.step + 1;
  });
  es.addEventListener("bad", e => {
    const b = JSON.parse(e.data), list = document.querySelector("#bad-lines ul"), li = document.createElement("li");
    li.textContent = "line " + b.line + ": " + b.error + " " + b.text;
    list.appendChild(li);
    const n = document.getElementById("bad-count"); n.textContent = +n.textContent + 1;
  });
  es.addEventListener("reset", () => { es.close(); location.reload(); });
})();
