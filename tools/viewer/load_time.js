#!/usr/bin/env node
/*
 * How long `tpsim view`'s page takes to load in headless chromium: from
 * navigation start (performance.timeOrigin) to "viewer ready" (the page
 * sets window.tpsimViewer.readyMs when it has drawn its first event),
 * median of RUNS fresh pages, plus the time to step to each next event.
 *
 *   node tools/viewer/load_time.js PAGE.html... [--runs 5]
 *
 * tools/viewer/measure.sh makes the pages (the 2x4 example and a ~50 MB
 * trace) and runs this; docs/viewer.md has the figures. Uses
 * tests/browser's puppeteer-core (npm ci --prefix tests/browser).
 */
"use strict";
const fs = require("fs");
const path = require("path");
const puppeteer = require(path.join(__dirname, "..", "..", "tests", "browser", "node_modules", "puppeteer-core"));

const args = process.argv.slice(2);
let runs = 5;
const pages = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--runs") runs = Number(args[++i]);
  else pages.push(path.resolve(args[i]));
}
if (!pages.length || !(runs > 0)) {
  process.stderr.write("usage: load_time.js PAGE.html... [--runs N]\n");
  process.exit(2);
}
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-extensions"],
  });
  for (const file of pages) {
    const ready = [], steps = [];
    for (let r = 0; r < runs; r++) {
      const page = await browser.newPage();
      await page.setViewport({ width: 1280, height: 900 });
      await page.goto("file://" + file, { waitUntil: "load", timeout: 120000 });
      await page.waitForFunction("window.tpsimViewer && window.tpsimViewer.ready", { timeout: 120000 });
      ready.push(await page.evaluate(() => {
        const v = window.tpsimViewer;
        const nav = performance.getEntriesByType("navigation")[0];
        /* file read, HTML parsed (script starts), JSON.parse, first draw */
        return [v.readyMs, nav.responseEnd, v.startMs, v.parsedMs];
      }));
      /* The slowest single step: to each next event with ArrowRight. */
      const n = await page.evaluate(() => window.tpsimViewer.eventCount);
      let worst = 0;
      await page.focus("body");
      for (let i = 1; i < n; i++) {
        const t = await page.evaluate(() => {
          const t0 = performance.now();
          document.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
          return performance.now() - t0;
        });
        worst = Math.max(worst, t);
      }
      steps.push(worst);
      await page.close();
    }
    const mb = fs.statSync(file).size / 1e6;
    const col = (k) => median(ready.map((x) => x[k])).toFixed(0);
    console.log(path.basename(file) + ": " + mb.toFixed(1) + " MB, ready in " + col(0) +
                " ms (median of " + runs + "; " + ready.map((x) => x[0].toFixed(0)).join(", ") +
                "): file read by " + col(1) + " ms, HTML parsed by " + col(2) + ", trace parsed by " + col(3) +
                "; slowest step to the next event " + median(steps).toFixed(0) + " ms");
  }
  await browser.close();
}
main().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
