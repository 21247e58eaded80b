// The dashboard's browser suite, run by TestBrowser (ui/browser_test.go):
// node browser.mjs SPEC.json. It drives Debian's chromium through
// playwright-core against the test's in-process server, checks each page
// against what the test derived from the run folders it wrote, and saves a
// screenshot of each page. Lines on stdout are JSON for the test:
// {"append": k} asks it to log step k of the live run, {"log": "..."} is
// printed in the test log. A failed check throws: a non-zero exit.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const require = createRequire(join(spec.playwright, "noop.js"));
const { chromium } = require("playwright-core");

const say = msg => process.stdout.write(JSON.stringify(msg) + "\n");
const log = text => say({ log: text });
// Every wait ends at the test's own deadline (a hang guard, not a timing).
const left = () => spec.deadline_ms ? Math.max(1000, spec.deadline_ms - Date.now()) : 0;
const check = (ok, what) => { if (!ok) throw new Error("check failed: " + what); };
const eq = (got, want, what) => check(JSON.stringify(got) === JSON.stringify(want), `${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
const fmt6 = v => String(Number(Number(v).toPrecision(6)));

const ctx = await chromium.launchPersistentContext(spec.user_data, {
  executablePath: spec.chromium,
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1280, height: 900 },
  timeout: left(),
});
ctx.setDefaultTimeout(left());
const problems = [];
const page = ctx.pages()[0] || await ctx.newPage();
page.on("pageerror", e => problems.push("page error: " + e.message));
let expectBad = false; // the console reports the 400 of a bad request the suite sends on purpose
page.on("console", m => {
  if (m.type() === "error" && !(expectBad && m.text().includes("status of 400"))) problems.push("console error: " + m.text());
});
// Nothing but the dashboard may be fetched: no CDN, no fonts.
await ctx.route("**/*", route => {
  const url = route.request().url();
  if (url.startsWith(spec.base + "/")) return route.continue();
  problems.push("request outside the dashboard: " + url);
  return route.abort();
});

// A failed check also reports what the pages complained about.
process.on("uncaughtException", e => {
  process.stderr.write(String(e.stack || e) + "\n" + problems.join("\n") + "\n");
  process.exit(1);
});

const shot = async name => {
  const path = join(spec.screenshots, name + ".png");
  await page.screenshot({ path, fullPage: true });
  log("screenshot " + path);
};
const open = async path => {
  const resp = await page.goto(spec.base + path, { waitUntil: "load" });
  eq(resp.status(), 200, "status of " + path);
};
const wait = (fn, arg) => page.waitForFunction(fn, arg, { timeout: left() });
const count = sel => page.locator(sel).count();

// ---- runs list: every run, filter, sort ----
log("browser: " + ctx.browser()?.version());
await open("/");
eq(await page.locator("#runs tbody tr[data-run]").evaluateAll(rs => rs.map(r => r.dataset.run)), spec.runs, "runs listed");
eq(await page.locator('tr[data-run="finished"] .status').textContent(), "finished", "finished run's status");
eq(await page.locator('tr[data-run="live"] .status').textContent(), "running", "live run's status");
await shot("list");
await page.fill("#filter", "ppo");
await wait(() => Array.from(document.querySelectorAll("#runs tbody tr[data-run]")).filter(r => !r.hidden).length < 4);
await page.fill("#filter", "");
await page.click('#runs th:has-text("steps")');
await page.click('#runs th:has-text("steps")'); // descending: the 100,000-step run first
eq(await page.locator("#runs tbody tr[data-run]").first().getAttribute("data-run"), "big", "sorted by steps, descending");

// ---- a finished run: points per chart, timeline, hover, zoom ----
const f = spec.finished;
await open("/runs/" + f.name);
for (const [id, n] of Object.entries(f.points)) {
  eq(await count(`svg#chart-${id} circle.pt`), n, `points of chart ${id}`);
  eq(await page.locator(`svg#chart-${id}`).getAttribute("data-points"), String(n), `data-points of chart ${id}`);
}
eq(await count("svg#chart-timeline circle.batch"), f.batches, "timeline batch marks");
eq(await count('svg#chart-timeline g.series[data-name^="served by r"]'), 2, "timeline lines per replica");

// The axes as the server drew them; after a zoom and its reset, the
// script's redrawing must give the same ticks.
const tickLabels = () => page.locator("svg.chart").evaluateAll(svgs => svgs.map(svg =>
  Array.from(svg.querySelectorAll("g.axes text.yt, g.axes text.xt")).map(t => t.textContent).join(" ")));
const serverTicks = await tickLabels();

// Hover over step 42 of the reward chart: the tip shows the step and the
// metrics file's reward of that step.
const pt = step => page.locator(`svg#chart-reward circle.pt[data-x="${step}"]`);
const centre = async step => {
  const b = await pt(step).boundingBox();
  return { x: b.x + b.width / 2, y: b.y + b.height / 2 };
};
await page.locator("svg#chart-reward").scrollIntoViewIfNeeded();
const at = await centre(42);
await page.mouse.move(at.x, at.y);
const tip = page.locator('figure[data-chart-id="reward"] .tip');
await tip.waitFor({ state: "visible", timeout: left() });
const tipText = await tip.textContent();
check(tipText.startsWith("step 42\n"), "hover tip names step 42: " + JSON.stringify(tipText));
check(tipText.includes("reward: " + fmt6(f.rewards[42])), `hover tip shows reward ${fmt6(f.rewards[42])}: ${JSON.stringify(tipText)}`);
await shot("run-hover");

// Drag from between steps 19 and 20 to between 59 and 60: every chart
// shows steps 20..59, the reward chart their 40 points.
const mid = async (a, b) => { const p = await centre(a), q = await centre(b); return { x: (p.x + q.x) / 2, y: p.y }; };
const from = await mid(19, 20), to = await mid(59, 60);
await page.mouse.move(from.x, from.y);
await page.mouse.down();
await page.mouse.move(to.x, to.y, { steps: 8 });
await page.mouse.up();
await wait(() => document.querySelector("svg#chart-reward").dataset.zoom !== "");
eq(await page.locator("svg#chart-reward").getAttribute("data-shown"), "40", "reward points shown after zooming on steps 20..59");
eq(await page.locator("svg#chart-counts").getAttribute("data-shown"), "120", "the counts chart's 3 series zoom with it");
const hidden = await page.locator("svg#chart-reward circle.pt").evaluateAll(ps => ps.filter(p => p.style.display === "none").map(p => +p.dataset.x));
check(hidden.length === 80 && hidden.every(x => x < 20 || x > 59), "points outside 20..59 hidden");
await shot("run-zoomed");
await page.locator('figure[data-chart-id="timeline"]').screenshot({ path: join(spec.screenshots, "timeline-zoomed.png") });
log("screenshot " + join(spec.screenshots, "timeline-zoomed.png"));
await page.dblclick("svg#chart-reward");
await wait(() => document.querySelector("svg#chart-reward").dataset.zoom === "");
eq(await page.locator("svg#chart-reward").getAttribute("data-shown"), String(f.points.reward), "double click shows every step again");
eq(await tickLabels(), serverTicks, "ticks redrawn by the script = the server's");
await page.mouse.move(0, 0);
await shot("run");

// The server zoom: full resolution inside a step range.
await page.fill("#zoom-from", String(f.zoom_from));
await page.fill("#zoom-to", String(f.zoom_to));
await Promise.all([page.waitForURL(u => u.search.includes("from="), { timeout: left() }), page.click('#zoom button[type="submit"]')]);
eq(await count("svg#chart-reward circle.pt"), f.zoom_rewards, "reward points of the server zoom");

// ---- samples of the last step, then the step before ----
await open(`/runs/${f.name}/samples`);
eq(await page.locator("#sample-step").textContent(), String(f.sample_step), "samples page opens on the last step");
eq(await count("#samples tr.sample"), f.sample_rows, "rollouts of the last step");
await shot("samples");
await Promise.all([page.waitForURL(u => u.search.includes("step="), { timeout: left() }), page.click("#prev-step")]);
eq(await page.locator("#sample-step").textContent(), String(f.sample_step - 1), "previous step");
await page.fill("#sample-filter", "r1");
await wait(() => Array.from(document.querySelectorAll("#samples tr.sample")).filter(r => !r.hidden).length === 4);

// ---- a run that trains while the page watches ----
const lv = spec.live;
await open("/runs/" + lv.name);
eq(await page.locator("#step-counter").textContent(), String(lv.logged), "live step counter at load");
eq(await count("svg#chart-reward circle.pt"), lv.logged, "live reward points at load");
for (let k = lv.logged; k < lv.logged + lv.appends; k++) {
  say({ append: k });
  await wait(n => document.getElementById("step-counter").textContent === String(n) &&
    document.querySelectorAll("svg#chart-reward circle.pt").length === n &&
    document.querySelectorAll("svg#chart-staleness circle.pt").length >= n &&
    document.querySelectorAll('svg#chart-timeline g.series[data-field="version"] circle.pt').length === n &&
    document.querySelectorAll(`svg#chart-timeline circle.batch[data-x="${n - 1}"]`).length > 0, k + 1);
  log(`live: step counter, reward chart and version timeline reached ${k + 1}`);
}
await shot("live");

// ---- compare two runs picked in the list ----
await open("/");
for (const r of spec.compare) await page.check(`.pick[value="${r}"]`);
await Promise.all([page.waitForURL(u => u.pathname === "/compare", { timeout: left() }), page.click("#compare")]);
for (const [id, n] of Object.entries(spec.compare_points)) eq(await count(`svg#chart-${id} circle.pt`), n, `compare: points of chart ${id}`);
eq(await count("svg#chart-reward g.series"), spec.compare.length, "compare: one reward series per run");
check(await count('#config-diff code:text-is("rl.adam.learning_rate")') === 1, "compare: the learning rate differs");
await shot("compare");

// ---- playground: sample from a checkpoint ----
const p = spec.play;
await open(`/runs/${p.run}/checkpoints`);
await page.selectOption("#pg-checkpoint", p.checkpoint);
await page.fill("#pg-prompt", p.prompt);
await page.fill("#pg-max-tokens", String(p.max_tokens));
await page.fill("#pg-temperature", String(p.temperature));
await page.fill("#pg-seed", String(p.seed));
await page.fill("#pg-n", String(p.completions.length));
await page.click("#pg-run");
await wait(() => ["done", "error"].includes(document.getElementById("sample-form").dataset.state));
eq(await page.locator("#sample-form").getAttribute("data-state"), "done", "playground answered: " + await page.locator("#pg-status").textContent());
eq(await page.locator("#pg-out li.completion code").allTextContents(), p.completions, "playground completions = the engine's");
await shot("playground");
// A bad request comes back as a message, not a broken page.
await page.evaluate(() => { const i = document.getElementById("pg-max-tokens"); i.removeAttribute("max"); i.value = "100000"; });
expectBad = true;
await page.click("#pg-run");
await wait(() => document.getElementById("sample-form").dataset.state === "error");
expectBad = false;
check((await page.locator("#pg-status").textContent()).includes("max_tokens"), "playground explains a bad max_tokens");

// ---- the 100,000-step run: page load time in the browser ----
await open("/runs/" + spec.big);
const nav = await page.evaluate(() => {
  const n = performance.getEntriesByType("navigation")[0];
  return { response: n.responseEnd - n.requestStart, load: n.loadEventEnd - n.startTime, bytes: n.transferSize };
});
eq(await count("svg#chart-reward circle.pt"), 400, "the 100,000-step run's reward chart is downsampled to MaxPoints");
log(`100,000-step run page in the browser: request to last byte ${nav.response.toFixed(0)} ms, load event at ${nav.load.toFixed(0)} ms, ${nav.bytes} bytes`);
await shot("run-100k");

eq(problems, [], "no page errors, console errors or outside requests");
await ctx.close();
