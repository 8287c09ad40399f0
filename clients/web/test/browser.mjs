// Opens the page in headless Chromium and checks it against a running
// host-service: the session appears in the list, its output streams into
// the terminal, a line typed in the terminal comes back through the
// session, the list shows the page as attached, and the session takes the
// terminal's size, then its new size when the window shrinks (printed as
// COLSxROWS, for the caller to check against the session) and the list
// shows it; a click reaches the session as a mouse report. Prints one line
// per check; exits non-zero on failure.
//
// Then it attaches to FULL_SCREEN_ID, vim on a file of lines `note N`
// with a status line, started at another size than the page's: the page
// must show its first line and its status line on the second-to-last row
// (the screen drawn, then redrawn at the page's size), and prints the
// size it gave it.
//
//   node test/browser.mjs HOST_URL WORKSPACE_ID SESSION_ID MARKER FULL_SCREEN_ID
//
// CHROMIUM names the browser (default /usr/bin/chromium, Debian's package).
import { chromium } from "playwright-core";
import { serve } from "./serve.mjs";

const [host, workspaceId, sessionId, marker, fullScreenId] = process.argv.slice(2);
if (!fullScreenId) {
  console.error("usage: node test/browser.mjs HOST_URL WORKSPACE_ID SESSION_ID MARKER FULL_SCREEN_ID");
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
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  page.setDefaultTimeout(TIMEOUT_MS);
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));

  const query = new URLSearchParams({ host, workspace: workspaceId });
  await page.goto(`${site.url}/?${query}`);

  const row = page.locator(`tr[data-session-id="${sessionId}"]`);
  await row.waitFor();
  console.log(`listed ${sessionId}`);

  await row.click();
  await page.waitForFunction(
    (m) => document.querySelector("#terminal .xterm-rows")?.textContent.includes(m),
    marker,
  );
  console.log(`output ${marker}`);

  // The size the session was given once attached, as the page recorded it.
  const sizeOtherThan = async (previous) => {
    const handle = await page.waitForFunction(
      (p) => {
        const size = document.getElementById("terminal").dataset.size;
        return size && size !== p ? size : undefined;
      },
      previous,
    );
    return handle.jsonValue();
  };
  const size = await sizeOtherThan("");
  console.log(`size ${size}`);

  const line = "typed in the browser";
  // Near the top left corner: mouse reports (below) carry its cell as
  // bytes 32 + column and 32 + row, which stay clear of what the history
  // check looks for.
  const corner = { position: { x: 20, y: 10 } };
  await page.locator("#terminal").click(corner);
  await page.keyboard.type(line);
  await page.keyboard.press("Enter");
  // The terminal echoes the line and `cat` writes it back: two copies.
  await page.waitForFunction(
    (l) => document.querySelector("#terminal .xterm-rows").textContent.split(l).length - 1 >= 2,
    line,
  );
  console.log(`echoed ${line}`);

  await page.waitForFunction(
    (id) => document.querySelector(`tr[data-session-id="${id}"] td:nth-child(6)`)?.textContent === "yes",
    sessionId,
  );
  console.log("attached yes");

  await page.setViewportSize({ width: 700, height: 500 });
  await sizeOtherThan(size);
  // Settled: the list shows the size the page gave last (should the page
  // have fitted its terminal twice, the second).
  const resized = await (
    await page.waitForFunction((id) => {
      const given = document.getElementById("terminal").dataset.size;
      const listed = document.querySelector(`tr[data-session-id="${id}"] td:nth-child(4)`)?.textContent;
      return given && listed === given ? given : undefined;
    }, sessionId)
  ).jsonValue();
  console.log(`resized ${resized}`);

  // The session asked for mouse reports in the oldest encoding (`CSI ? 1000
  // h`): a click reaches it as `ESC [ M` and three bytes, which its
  // terminal echoes as `^[[M` (one more for the press, one for the release).
  const reports = () => page.evaluate(() => document.querySelector("#terminal .xterm-rows").textContent.split("^[[M").length - 1);
  const before = await reports();
  await page.locator("#terminal").click(corner);
  await page.waitForFunction(
    (b) => document.querySelector("#terminal .xterm-rows").textContent.split("^[[M").length - 1 > b,
    before,
  );
  console.log("clicked");

  const vimRow = page.locator(`tr[data-session-id="${fullScreenId}"]`);
  await vimRow.click();
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll("#terminal .xterm-rows > div")].map((r) => r.textContent);
    const size = document.getElementById("terminal").dataset.size;
    return size && rows[0]?.startsWith("note 1") && rows.at(-2)?.includes("notes.txt");
  });
  const given = await page.evaluate(() => document.getElementById("terminal").dataset.size);
  console.log(`full screen ${given}`);
  if (problems.length) throw new Error(problems.join("\n"));
} catch (error) {
  console.error(String(error));
  for (const p of problems) console.error(p);
  process.exitCode = 1;
} finally {
  await browser.close();
  site.close();
}
