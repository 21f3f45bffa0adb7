#!/usr/bin/env node
/*
 * docs/img/viewer_2x4.png: the 2x4 example's page at its all_reduce
 * (seq 4), in headless chromium at 1100x680. Run from the source root
 * after building:
 *   node tools/viewer/screenshot.js [build/src/tpsim]
 * Uses tests/browser's puppeteer-core (npm ci --prefix tests/browser).
 */
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const { execFileSync } = require("child_process");
const puppeteer = require(path.join(__dirname, "..", "..", "tests", "browser", "node_modules", "puppeteer-core"));

const root = path.join(__dirname, "..", "..");
const tpsim = process.argv[2] || path.join(root, "build", "src", "tpsim");
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "tpsim-shot-"));

async function main() {
  const trace = path.join(tmp, "t.json"), html = path.join(tmp, "t.html");
  execFileSync(tpsim, ["run", path.join(root, "fixtures", "seed_2x4_rowwise_after_reduce", "config.json"), "-o", trace],
               { stdio: "ignore" });
  execFileSync(tpsim, ["view", trace, "-o", html]);
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 680 });
  await page.goto("file://" + html + "#seq=4");
  await page.waitForFunction("window.tpsimViewer && window.tpsimViewer.ready");
  const out = path.join(root, "docs", "img", "viewer_2x4.png");
  await page.screenshot({ path: out });
  await browser.close();
  fs.rmSync(tmp, { recursive: true, force: true });
  console.log("wrote " + path.relative(process.cwd(), out));
}
main().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
