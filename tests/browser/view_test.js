#!/usr/bin/env node
/*
 * Browser tests of `tpsim view` (docs/viewer.md): headless Debian
 * chromium, driven by puppeteer-core (pinned in package-lock.json), loads
 * the page of several traces and asserts what it draws.
 *
 *   TPSIM_EXE=build/src/tpsim TPSIM_SOURCE_ROOT=. node tests/browser/view_test.js
 *
 * `meson test browser` runs it with both set. CHROMIUM overrides
 * /usr/bin/chromium. It fails, never skips, when chromium or
 * node_modules is missing: `tools/quickstart.sh test` installs both.
 * Written for node 18 (Debian 12's): CommonJS, no newer APIs.
 */
"use strict";

const fs = require("fs");
const os = require("os");
const path = require("path");
const { execFileSync } = require("child_process");

const ROOT = path.resolve(process.env.TPSIM_SOURCE_ROOT || path.join(__dirname, "..", ".."));
const TPSIM = process.env.TPSIM_EXE || path.join(ROOT, "build", "src", "tpsim");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const HINT = "run tools/quickstart.sh test (it installs chromium, nodejs, npm and runs npm ci --prefix tests/browser)";

function die(msg) {
  process.stderr.write("view_test: " + msg + "\n");
  process.exit(1);
}

if (!fs.existsSync(CHROMIUM)) die(CHROMIUM + " is missing: " + HINT);
let puppeteer;
try {
  puppeteer = require("puppeteer-core");
} catch (e) {
  die("tests/browser/node_modules has no puppeteer-core: " + HINT);
}
if (!fs.existsSync(TPSIM)) die(TPSIM + " is missing: build tpsim first (TPSIM_EXE)");

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tpsim-view-"));
let passed = 0;
let failed = 0;

function check(cond, what) {
  if (!cond) throw new Error(what);
}

function tpsim(args) {
  return execFileSync(TPSIM, args, { stdio: ["ignore", "pipe", "pipe"] });
}

/* tpsim run CONFIG [extra...] then tpsim view: the page's path and the
 * trace as node reads it. */
function make(name, config, extra) {
  const trace = path.join(tmp, name + ".json");
  const html = path.join(tmp, name + ".html");
  tpsim(["run", config, "-o", trace].concat(extra || []));
  tpsim(["view", trace, "-o", html]);
  return { html: html, trace: JSON.parse(fs.readFileSync(trace, "utf8")) };
}

/* A fixture's config with "trace": {"values": "summary"}. */
function summaryConfig(fixture) {
  const cfg = JSON.parse(fs.readFileSync(path.join(ROOT, "fixtures", fixture, "config.json"), "utf8"));
  cfg.trace = { values: "summary" };
  const p = path.join(tmp, fixture + ".summary.config.json");
  fs.writeFileSync(p, JSON.stringify(cfg));
  return p;
}

/* Opens a page, with every console error, page error and non-file
 * request recorded. */
async function open(browser, file, hash) {
  const page = await browser.newPage();
  const problems = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push("console error: " + m.text());
  });
  page.on("pageerror", (e) => problems.push("page error: " + e.message));
  await page.setRequestInterception(true);
  page.on("request", (req) => {
    const u = req.url();
    if (u.startsWith("file:") || u.startsWith("data:") || u.startsWith("about:")) {
      req.continue();
    } else {
      problems.push("network request: " + u);
      req.abort();
    }
  });
  await page.goto("file://" + file + (hash || ""), { waitUntil: "load" });
  await page.waitForFunction("window.tpsimViewer && window.tpsimViewer.ready === true", { timeout: 30000 });
  return { page: page, problems: problems };
}

/* The drawn values of a rank's (first) grid as a nested array: of its
 * output, or with which "input" of a collective's input beside it. */
function gridOf(page, rank, which) {
  return page.evaluate((r, w) => {
    const grid = document.querySelector('.card[data-rank="' + r + '"] .grid' +
                                        (w === "input" ? ".input" : ":not(.input)"));
    if (!grid) return null;
    const rows = Number(grid.getAttribute("data-rows"));
    const cols = Number(grid.getAttribute("data-cols"));
    const out = [];
    for (let i = 0; i < rows; i++) {
      const row = [];
      for (let j = 0; j < cols; j++) {
        const c = grid.querySelector('.cell[data-r="' + i + '"][data-c="' + j + '"]');
        row.push(c ? Number(c.getAttribute("data-v")) : NaN);
      }
      out.push(row);
    }
    return out;
  }, rank, which);
}

const seqNow = (page) => page.evaluate(() => window.tpsimViewer.current());
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function test(name, fn) {
  try {
    await fn();
    passed++;
    console.log("ok - " + name);
  } catch (e) {
    failed++;
    console.log("not ok - " + name + ": " + (e && e.message ? e.message : e));
  }
}

/* Common to every trace: the event count, the chunk rule agreeing with
 * every rank's shape, stepping every event with ArrowRight, and no error. */
async function walk(browser, made, label) {
  const v = await open(browser, made.html);
  const page = v.page;
  const n = made.trace.events.length;
  const count = await page.evaluate(() => window.tpsimViewer.eventCount);
  check(count === n, label + ": eventCount " + count + ", the trace has " + n);
  const countText = await page.$eval("#count", (e) => e.textContent);
  check(countText === n + " events", label + ": #count says '" + countText + "'");
  const bad = await page.evaluate(() => window.tpsimViewer.checkAll());
  check(bad.length === 0, label + ": chunk rule disagrees: " + bad.slice(0, 3).join("; "));
  check((await seqNow(page)) === made.trace.events[0].seq, label + ": does not start at the first event");
  await page.focus("body");
  for (let i = 1; i < n; i++) {
    await page.keyboard.press("ArrowRight");
    const s = await seqNow(page);
    check(s === made.trace.events[i].seq, label + ": ArrowRight #" + i + " gave seq " + s);
    if (i < 3 || i === n - 1) {
      const shown = await page.$eval("#position", (e) => e.getAttribute("data-seq"));
      check(Number(shown) === s, label + ": #position shows seq " + shown + ", not " + s);
    }
  }
  await page.keyboard.press("Home");
  check((await seqNow(page)) === made.trace.events[0].seq, label + ": Home");
  await page.keyboard.press("End");
  check((await seqNow(page)) === made.trace.events[n - 1].seq, label + ": End");
  await page.keyboard.press("ArrowLeft");
  check(n < 2 || (await seqNow(page)) === made.trace.events[n - 2].seq, label + ": ArrowLeft");
  const warnings = await page.$eval("#warnings", (e) => e.textContent);
  check(warnings === "", label + ": warnings: " + warnings);
  check(v.problems.length === 0, label + ": " + v.problems.join("; "));
  await page.close();
}

async function main() {
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless=new", "--no-sandbox", "--no-first-run", "--disable-gpu",
           "--disable-background-networking", "--disable-component-update",
           "--disable-default-apps", "--disable-extensions", "--disable-sync"],
  });
  try {
    const fx = (name) => path.join(ROOT, "fixtures", name, "config.json");
    const seed = make("seed_2x4", fx("seed_2x4_rowwise_after_reduce"));
    const mesh2d = make("mesh_2d", fx("mesh_2d_dp_tp"));
    const train = make("train", fx("train_dp2_tp2_mse"));
    const summary = make("summary", summaryConfig("mesh_2d_dp_tp"));
    const symbolic = make("symbolic", path.join(ROOT, "examples", "gpt_2block", "config.json"), ["--symbolic"]);

    /* fixtures/seed_2x4_rowwise_after_reduce/DERIVATION.md, by hand:
     * the matmul's partial sums per rank and the all_reduce's sum. */
    const derivation = fs.readFileSync(
      path.join(ROOT, "fixtures", "seed_2x4_rowwise_after_reduce", "DERIVATION.md"), "utf8");
    const rank0Partial = [[5, 17], [17, 61]];
    const rank1Partial = [[25, 53], [53, 113]];
    const reduced = [[30, 70], [70, 174]];
    await test("the 2x4 numbers are DERIVATION.md's", async () => {
      check(derivation.includes("= [[5, 17], [17, 61]]"), "rank 0's partial sums");
      check(derivation.includes("= [[25, 53], [53, 113]]"), "rank 1's partial sums");
      check(derivation.includes("= [[30, 70], [70, 174]]  on both ranks"), "the all_reduce");
    });

    await test("2x4: the matmul event draws each rank's partial sums, marked partial", async () => {
      const v = await open(browser, seed.html, "#seq=3");
      const op = await v.page.$eval("#event h2", (e) => e.textContent);
      check(op === "[3] fc matmul fc.out", "event heading: " + op);
      check(same(await gridOf(v.page, 0), rank0Partial), "rank 0: " + JSON.stringify(await gridOf(v.page, 0)));
      check(same(await gridOf(v.page, 1), rank1Partial), "rank 1: " + JSON.stringify(await gridOf(v.page, 1)));
      const marks = await v.page.$$eval(".card.partial .badge.partial", (b) => b.map((x) => x.textContent));
      check(marks.length === 2 && marks[0] === "partial sum: \u03a3 over tp", "partial badges: " + marks);
      check((await v.page.$$(".card.replicate")).length === 0, "a partial card also looks replicated");
      const border = await v.page.$eval('.card[data-rank="0"]', (e) => getComputedStyle(e).outlineStyle);
      check(border === "dashed", "partial card outline: " + border);
      const note = await v.page.$eval("#note", (e) => e.textContent);
      check(note === "(y_i = x_i W_i^T: partial sums, y = sum_i y_i)", "note: " + note);
      const title = await v.page.$eval('.card[data-rank="1"] .cell[data-r="1"][data-c="1"]', (e) => e.getAttribute("aria-label"));
      check(title.indexOf("= 113") >= 0, "cell text alternative: " + title);
      check(v.problems.length === 0, v.problems.join("; "));
      await v.page.close();
    });

    await test("2x4: the all_reduce event draws the sum on both ranks, replicated, its group highlighted", async () => {
      const v = await open(browser, seed.html, "#seq=4");
      check(same(await gridOf(v.page, 0), reduced), "rank 0: " + JSON.stringify(await gridOf(v.page, 0)));
      check(same(await gridOf(v.page, 1), reduced), "rank 1: " + JSON.stringify(await gridOf(v.page, 1)));
      check((await v.page.$$(".badge.partial")).length === 0, "a partial badge on the all_reduce's output");
      check((await v.page.$$(".card.partial")).length === 0, "a partial card on the all_reduce's output");
      check((await v.page.$$(".card.replicate")).length === 2, "replicated cards");
      const eq = await v.page.$eval("#equation", (e) => e.textContent);
      check(eq === "fc.out = sum_i fc.out_i, on every rank of the group", "equation: " + eq);
      const hl = await v.page.$$eval(".mesh-rank.in-group", (b) => b.map((x) => [Number(x.dataset.rank), Number(x.dataset.group)]));
      check(same(hl, [[0, 0], [1, 0]]), "highlighted mesh ranks: " + JSON.stringify(hl));
      const flow = await v.page.$$eval(".flow-group", (g) => g.length);
      check(flow === 1, "flow groups: " + flow);
      check(v.problems.length === 0, v.problems.join("; "));
      await v.page.close();
    });

    await test("2x4: the all_reduce shows each rank's addends beside the sum", async () => {
      const v = await open(browser, seed.html, "#seq=4");
      check(same(await gridOf(v.page, 0, "input"), rank0Partial),
            "rank 0's input: " + JSON.stringify(await gridOf(v.page, 0, "input")));
      check(same(await gridOf(v.page, 1, "input"), rank1Partial),
            "rank 1's input: " + JSON.stringify(await gridOf(v.page, 1, "input")));
      check(same(await gridOf(v.page, 0), reduced), "rank 0's output: " + JSON.stringify(await gridOf(v.page, 0)));
      check(same(await gridOf(v.page, 1), reduced), "rank 1's output: " + JSON.stringify(await gridOf(v.page, 1)));
      /* Input, then output, in reading order, each named. */
      const parts = await v.page.$$eval('.card[data-rank="1"] .io .part', (p) =>
        p.map((x) => [x.dataset.part, x.querySelector(".panel-label").textContent]));
      check(same(parts, [["input", "addend (input: [3] matmul, [partial])"], ["output", "sum (output)"]]),
            "parts: " + JSON.stringify(parts));
      /* An addend's cell reads as the matmul's tensor on that rank. */
      const said = await v.page.$eval('.card[data-rank="1"] .grid.input .cell[data-r="1"][data-c="1"]',
                                      (e) => e.getAttribute("aria-label"));
      check(said === "fc.out[1, 1] = 113 (rank 1's [1, 1])", "input cell: " + said);
      /* A compute event has no input beside it. */
      await v.page.evaluate(() => window.tpsimViewer.go(3));
      check((await v.page.$$(".io")).length === 0, "the matmul shows an input");
      check(v.problems.length === 0, v.problems.join("; "));
      await v.page.close();
    });

    await test("sizes read as numfmt.h writes them", async () => {
      const v = await open(browser, seed.html, "#seq=4");
      const meta = await v.page.$eval("#event .meta", (e) => e.textContent);
      check(meta.indexOf("16 bytes/rank") >= 0, "meta: " + meta);
      /* tests/base/test_numfmt.c's table (sizes_print_in_binary_units_...). */
      const table = [[0, "0 bytes"], [1, "1 byte"], [768, "768 bytes"], [1023, "1023 bytes"],
                     [1024, "1 KiB"], [1536, "1.5 KiB"], [10239, "10 KiB"], [1048575, "1 MiB"],
                     [2359296, "2.25 MiB"], [7425024, "7.08 MiB"], [939524096, "896 MiB"],
                     [87623270400, "81.6 GiB"], [1649267441664, "1.5 TiB"]];
      const got = await v.page.evaluate((t) => t.map((x) => window.tpsimViewer.fmtBytes(x[0])), table);
      table.forEach((x, i) => check(got[i] === x[1], x[0] + ": " + got[i] + ", not " + x[1]));
      await v.page.close();
    });

    await test("2x4: ArrowRight from the matmul moves seq by one, to the all_reduce", async () => {
      const v = await open(browser, seed.html, "#seq=3");
      await v.page.focus("body");
      await v.page.keyboard.press("ArrowRight");
      check((await seqNow(v.page)) === 4, "seq " + (await seqNow(v.page)));
      check(same(await gridOf(v.page, 1), reduced), "rank 1 after ArrowRight");
      await v.page.click("#prev");
      check((await seqNow(v.page)) === 3, "the back button");
      check(v.problems.length === 0, v.problems.join("; "));
      await v.page.close();
    });

    await test("2-D mesh: a collective highlights each of its groups in the mesh", async () => {
      const v = await open(browser, mesh2d.html);
      const ev = mesh2d.trace.events.find((e) => e.kind === "collective");
      check(ev && ev.groups.length === 2, "the fixture has a collective over 2 groups");
      await v.page.evaluate((s) => window.tpsimViewer.go(s), ev.seq);
      const hl = await v.page.$$eval(".mesh-rank.in-group", (b) => b.map((x) => [Number(x.dataset.rank), Number(x.dataset.group)]));
      const want = [];
      ev.groups.forEach((g, gi) => g.forEach((r) => want.push([r, gi])));
      want.sort((a, b) => a[0] - b[0]);
      check(same(hl, want), "highlighted " + JSON.stringify(hl) + ", groups " + JSON.stringify(ev.groups));
      const flows = await v.page.$$eval(".flow-group", (g) => g.map((x) => Number(x.dataset.group)));
      check(same(flows, [0, 1]), "one flow per group: " + flows);
      await v.page.evaluate(() => window.tpsimViewer.go(8));
      const marks = await v.page.$$(".card.partial .badge.partial");
      check(marks.length === 4, "fc2.out at event 8 is partial on every rank: " + marks.length);
      const blocks = await v.page.$eval("#block-list", (e) => e.textContent);
      check(blocks.indexOf("row 0, cols 0-1: ranks 0,1 (dp=0; partial sum over tp)") >= 0, "block list: " + blocks);
      check(v.problems.length === 0, v.problems.join("; "));
      await v.page.close();
    });

    await test("filters: phase, module and rank", async () => {
      const v = await open(browser, train.html);
      await v.page.select("#f-phase", "backward");
      const want = train.trace.events.filter((e) => e.phase === "backward");
      const count = await v.page.$eval("#count", (e) => e.textContent);
      check(count === want.length + " of " + train.trace.events.length + " events", "count: " + count);
      check((await seqNow(v.page)) === want[0].seq, "first backward event");
      await v.page.focus("body");
      await v.page.keyboard.press("ArrowRight");
      check((await seqNow(v.page)) === want[1].seq, "ArrowRight stays in the phase");
      await v.page.select("#f-phase", "");
      await v.page.select("#f-module", "fc1");
      const phase = await v.page.$eval("#event .meta", (e) => e.textContent);
      const mod = await v.page.$eval("#event h2", (e) => e.textContent);
      check(/ fc1 /.test(mod), "module filter: " + mod + " / " + phase);
      await v.page.select("#f-rank", "2");
      const cards = await v.page.$$eval(".card", (c) => c.map((x) => x.dataset.rank));
      check(same(cards, ["2"]), "rank filter: " + cards);
      check((await v.page.$$(".mesh-rank.selected")).length === 1, "the rank is marked in the mesh");
      check(v.problems.length === 0, v.problems.join("; "));
      await v.page.close();
    });

    await test("summary trace: statistics instead of values", async () => {
      const v = await open(browser, summary.html);
      await v.page.evaluate(() => window.tpsimViewer.go(8));
      check((await v.page.$$(".cell")).length === 0, "cells drawn without values");
      const stats = await v.page.$$eval('.card[data-rank="0"] .stats td', (t) => t.map((x) => x.textContent));
      check(stats[0] === "min" && stats.indexOf("hash") >= 0, "stats: " + stats);
      const ev = summary.trace.events[8];
      check(stats[1] === String(ev.ranks[0].min), "min " + stats[1] + " vs " + ev.ranks[0].min);
      check(v.problems.length === 0, v.problems.join("; "));
      await v.page.close();
    });

    await test("symbolic trace: shapes from the placements, no values", async () => {
      const v = await open(browser, symbolic.html);
      check(!symbolic.trace.events.some((e) => e.ranks), "the trace is symbolic");
      const ev = symbolic.trace.events.find((e) => e.placements.some((p) => p.indexOf("shard") === 0));
      await v.page.evaluate((s) => window.tpsimViewer.go(s), ev.seq);
      const region = await v.page.$eval('.card[data-rank="0"] .region', (e) => e.textContent);
      check(region.indexOf("local (") >= 0, "region: " + region);
      check((await v.page.$$(".cell")).length === 0, "cells drawn without values");
      check(v.problems.length === 0, v.problems.join("; "));
      await v.page.close();
    });

    await test("a grid elides past 64 rows and says so", async () => {
      const cfg = {
        tpsim: 1, mesh: { shape: [2], dim_names: ["tp"] },
        model: [{ name: "fc", type: "linear", in_features: 100, out_features: 70 }],
        plan: { fc: "colwise" }, input: { shape: [3, 100] }
      };
      const p = path.join(tmp, "wide.config.json");
      fs.writeFileSync(p, JSON.stringify(cfg));
      const wide = make("wide", p);
      const v = await open(browser, wide.html);
      /* seq 0: fc.weight (70, 100) shard(0): rank 1 holds rows 35-69 */
      const el = await v.page.$eval('.card[data-rank="1"] .elided', (e) => e.textContent);
      check(el === "showing cols 0-63 of 100 (0-99) (the first 64 of each)", "elision: " + el);
      const dims = await v.page.$eval('.card[data-rank="1"] canvas.grid', (c) => [c.dataset.rows, c.dataset.cols]);
      check(same(dims, ["35", "64"]), "canvas cells drawn: " + dims);
      /* Its cells are read out on focus, with the arrow keys. */
      await v.page.focus('.card[data-rank="1"] canvas.grid');
      await v.page.keyboard.press("ArrowDown");
      await v.page.keyboard.press("ArrowRight");
      const said = await v.page.$eval("#readout", (e) => e.textContent);
      const want = "fc.weight[36, 1] = " + wide.trace.events[0].ranks[1].values[1][1] + " (rank 1's [1, 1])";
      check(said === want, "readout '" + said + "', want '" + want + "'");
      const region = await v.page.$eval('.card[data-rank="1"] .region', (e) => e.textContent);
      check(region === "rows 35-69, cols 0-99 of (70, 100); local (35, 100)", "region: " + region);
      check(v.problems.length === 0, v.problems.join("; "));
      await v.page.close();
    });

    await test("a focused grid reads out each cell's value", async () => {
      const v = await open(browser, seed.html, "#seq=4");
      await v.page.focus('.card[data-rank="0"] .grid:not(.input)');
      await v.page.keyboard.press("ArrowDown");
      await v.page.keyboard.press("ArrowRight");
      const said = await v.page.$eval("#readout", (e) => e.textContent);
      check(said === "fc.out[1, 1] = 174 (rank 0's [1, 1])", "readout: " + said);
      check((await seqNow(v.page)) === 4, "arrows in a grid do not step events");
      check(v.problems.length === 0, v.problems.join("; "));
      await v.page.close();
    });

    /* 5 rows over dp and cp flattened, [0, 2, 4, 6]: one chunk over the
     * group, 2, 2, 1, 0 (shard(0,flat)), not a chunk of a chunk. */
    const flatCfg = path.join(tmp, "flat.config.json");
    fs.writeFileSync(flatCfg, JSON.stringify({
      tpsim: 1, mesh: { shape: [2, 2, 2], dim_names: ["dp", "cp", "tp"] }, dp_dim: ["dp", "cp"],
      model: [{ name: "fc", type: "linear", in_features: 4, out_features: 2 }],
      plan: { fc: "colwise" }, input: { shape: [5, 4], init: "arange" }, mode: "training"
    }));
    const flat = make("flat", flatCfg);
    await test("a batch over flattened dp dims: one chunk over the group", async () => {
      const ev = flat.trace.events.find((e) => e.op === "split" && e.tensor === "input");
      check(ev && ev.mesh_dim === "dp_cp" && same(ev.placements, ["shard(0,flat)", "shard(0,flat)", "replicate"]),
            "the split: " + JSON.stringify(ev && ev.placements));
      const v = await open(browser, flat.html);
      await v.page.evaluate((s) => window.tpsimViewer.go(s), ev.seq);
      const blocks = await v.page.$eval("#block-list", (e) => e.textContent);
      check(blocks.indexOf("rows 0-1, cols 0-3: ranks 0,1") >= 0 && blocks.indexOf("rows 2-3, cols 0-3: ranks 2,3") >= 0 &&
            blocks.indexOf("row 4, cols 0-3: ranks 4,5") >= 0, "block list: " + blocks);
      check(same(await gridOf(v.page, 4), [[17, 18, 19, 20]]), "rank 4 holds row 4");
      check(v.problems.length === 0, v.problems.join("; "));
      await v.page.close();
    });

    const all = [["seed_2x4", seed], ["mesh_2d_dp_tp", mesh2d], ["train_dp2_tp2_mse", train],
                 ["summary", summary], ["gpt_2block --symbolic", symbolic], ["dp_cp flat", flat]];
    for (const name of fs.readdirSync(path.join(ROOT, "fixtures")).sort()) {
      if (["seed_2x4_rowwise_after_reduce", "mesh_2d_dp_tp", "train_dp2_tp2_mse"].indexOf(name) < 0) {
        all.push([name, make("fx_" + name, fx(name))]);
      }
    }
    for (const [label, made] of all) {
      await test(label + ": every event drawn, stepped with the keyboard, no errors", () => walk(browser, made, label));
    }
  } finally {
    await browser.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  console.log("browser: " + passed + " passed, " + failed + " failed");
  process.exit(failed ? 1 : 0);
}

main().catch((e) => die(e && e.stack ? e.stack : String(e)));
