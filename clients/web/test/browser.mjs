// Opens the page in headless Chromium and checks it against a running
// host-service: the session appears in the list, its output streams in, a
// line typed on the page comes back through the session, and the list shows
// the page as attached. Prints one line per check; exits non-zero on failure.
//
//   node test/browser.mjs HOST_URL WORKSPACE_ID SESSION_ID MARKER
//
// CHROMIUM names the browser (default /usr/bin/chromium, Debian's package).
import { chromium } from "playwright-core";
import { serve } from "./serve.mjs";

const [host, workspaceId, sessionId, marker] = process.argv.slice(2);
if (!marker) {
  console.error("usage: node test/browser.mjs HOST_URL WORKSPACE_ID SESSION_ID MARKER");
  process.exit(2);
}
const TIMEOUT_MS = 30_000;

const site = await serve();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const problems = [];
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(TIMEOUT_MS);
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));

  const query = new URLSearchParams({ host, workspace: workspaceId });
  await page.goto(`${site.url}/?${query}`);

  const row = page.locator(`tr[data-session-id="${sessionId}"]`);
  await row.waitFor();
  console.log(`listed ${sessionId}`);

  await row.click();
  const output = page.locator("#output");
  await page.waitForFunction((m) => document.getElementById("output").textContent.includes(m), marker);
  console.log(`output ${marker}`);

  const line = "typed in the browser";
  await page.fill("#input input", line);
  await page.press("#input input", "Enter");
  // The terminal echoes the line and `cat` writes it back: two copies.
  await page.waitForFunction(
    (l) => document.getElementById("output").textContent.split(l).length - 1 >= 2,
    line,
  );
  console.log(`echoed ${line}`);

  await page.waitForFunction(
    (id) => document.querySelector(`tr[data-session-id="${id}"] td:nth-child(4)`)?.textContent === "yes",
    sessionId,
  );
  console.log("attached yes");
  if (problems.length) throw new Error(problems.join("\n"));
} catch (error) {
  console.error(String(error));
  for (const p of problems) console.error(p);
  process.exitCode = 1;
} finally {
  await browser.close();
  site.close();
}
