// A holdfast page over grpc-web: the sessions of a workspace, kept current
// by the host-service's watch (WatchSessions: told of each change, never
// polled), and the one you pick in a terminal (xterm.js) that you can type in and
// that gives the session its size, as a terminal attached with the CLI does.
//
// Query parameters: `host` (default http://127.0.0.1:7077), `workspace`
// (default: the first open workspace).

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { FitAddon } from "@xterm/addon-fit";
import { Terminal } from "@xterm/xterm";
import "@xterm/xterm/css/xterm.css";
import {
  AttachStart,
  Source,
  TerminalService,
  WorkspaceService,
  type Session,
} from "./gen/holdfast/host/v1/host_pb.js";

const params = new URLSearchParams(location.search);
const transport = createGrpcWebTransport({
  baseUrl: params.get("host") ?? "http://127.0.0.1:7077",
});
const workspaces = createClient(WorkspaceService, transport);
const terminals = createClient(TerminalService, transport);

/** The longest wait before a broken watch is opened again. */
const MOST_BACKOFF_MS = 2000;

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const workspaceSelect = element<HTMLSelectElement>("workspace");
const statusLine = element<HTMLParagraphElement>("status");
const sessionRows = element<HTMLTableSectionElement>("sessions");
const viewing = element<HTMLHeadingElement>("viewing");
const screen = element<HTMLDivElement>("terminal");

let terminal: Terminal;
let fit: FitAddon;

/**
 * The session shown: the token of its attach stream
 * (`holdfast-attachment`), which the page's resizes and keys name so that
 * they count as this client's, where its live output begins
 * (`holdfast-live-offset`), and whether it has ended (then nothing more is
 * sent to it).
 */
let attached:
  | {
      sessionId: string;
      stop: AbortController;
      attachment: string;
      liveFrom?: bigint;
      ended: boolean;
    }
  | undefined;

/**
 * Whether the terminal is reading history: output written before the page
 * attached. The queries in it (device attributes, cursor position, colours)
 * were answered or given up on long ago; answered again, the answers would
 * reach the program as typed keys. Live queries are answered.
 */
let replaying = false;
const stale = () => replaying;
const WINDOW_REPORTS = [11, 13, 14, 15, 16, 18, 19, 20, 21];

/**
 * A terminal of its own for each session attached, so that nothing the
 * last one had yet to read (xterm.js reads what it is given later) ends
 * up in this one, nor its modes: the old one goes, with what it held.
 */
function newTerminal() {
  terminal?.dispose();
  replaying = false;
  terminal = new Terminal({ convertEol: false, scrollback: 5000 });
  fit = new FitAddon();
  terminal.loadAddon(fit);
  for (const id of [
    { final: "c" }, // device attributes
    { prefix: ">", final: "c" },
    { prefix: "=", final: "c" },
    { final: "n" }, // device status, cursor position
    { prefix: "?", final: "n" },
    { intermediates: "$", final: "p" }, // DECRQM
    { prefix: "?", intermediates: "$", final: "p" },
    { prefix: ">", final: "q" }, // XTVERSION
    { prefix: "?", final: "u" }, // kitty keyboard flags
    { final: "x" }, // DECREQTPARM
  ]) {
    terminal.parser.registerCsiHandler(id, stale);
  }
  terminal.parser.registerCsiHandler(
    { final: "t" },
    (params) => replaying && WINDOW_REPORTS.includes(Number(params[0])),
  );
  for (const id of [{ intermediates: "$", final: "q" }, { intermediates: "+", final: "q" }]) {
    terminal.parser.registerDcsHandler(id, stale); // DECRQSS, XTGETTCAP
  }
  for (const osc of [4, 5, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 52]) {
    terminal.parser.registerOscHandler(osc, (data) => replaying && data.split(";").includes("?"));
  }
  terminal.onData((keys) => type(encoder.encode(keys)));
  // Mouse reports in the oldest encoding (a program that asks for `CSI ?
  // 1000 h` alone, as mc and older programs do) are bytes, one a character
  // of the string, some over 127: not text to encode.
  terminal.onBinary((bytes) => type(Uint8Array.from(bytes, (c) => c.charCodeAt(0) & 0xff)));
  terminal.onResize(() => void sendSize());
  terminal.open(screen);
  fit.fit();
}

/** Shows output at `offset` of the session `shown`, its history apart. */
function show(shown: NonNullable<typeof attached>, offset: bigint, data: Uint8Array) {
  const live = shown.liveFrom ?? 0n;
  const before = offset >= live ? 0 : Number(live - offset > BigInt(data.length) ? data.length : live - offset);
  if (before > 0) {
    // Writes are read in order, each callback once its data is read.
    terminal.write("", () => (replaying = true));
    terminal.write(data.subarray(0, before), () => (replaying = false));
  }
  if (before < data.length) terminal.write(data.subarray(before));
}
/** The watched workspace's sessions, by id, as the watch's events leave them. */
const shown = new Map<string, Session>();
/** Ends the watch of the workspace shown, when another is picked. */
let watching: AbortController | undefined;

function describe(error: unknown): string {
  const e = ConnectError.from(error);
  return `${Code[e.code]}: ${e.rawMessage}`;
}

function showStatus(text: string, kind: "" | "degraded" | "error" = "") {
  statusLine.textContent = text;
  statusLine.className = kind;
}

async function loadWorkspaces() {
  const { workspaces: all } = await workspaces.listWorkspaces({});
  const open = all.filter((w) => w.closedAt === undefined);
  workspaceSelect.replaceChildren(
    ...open.map((w) => new Option(`${w.name} (${w.workspaceId})`, w.workspaceId)),
  );
  const wanted = params.get("workspace");
  if (wanted) workspaceSelect.value = wanted;
}

function state(s: Session): string {
  if (s.alive) return "running";
  if (s.signal !== undefined) return `killed by signal ${s.signal}`;
  return `exited ${s.exitCode ?? "?"}`;
}

function row(s: Session): HTMLTableRowElement {
  const tr = document.createElement("tr");
  tr.dataset.sessionId = s.sessionId;
  const cells = [s.sessionId, s.name, s.title, `${s.cols}x${s.rows}`, String(s.pid), s.attached ? "yes" : "no", state(s)];
  for (const text of cells) {
    tr.insertCell().textContent = text;
  }
  tr.classList.toggle("selected", attached?.sessionId === s.sessionId);
  tr.addEventListener("click", () => void attach(s.sessionId));
  return tr;
}

/** Draws the rows from the watched sessions, oldest first. */
function render(source: Source, degradedReason: string) {
  const sessions = [...shown.values()].sort((a, b) =>
    Number((a.createdAt?.seconds ?? 0n) - (b.createdAt?.seconds ?? 0n)) ||
    (a.createdAt?.nanos ?? 0) - (b.createdAt?.nanos ?? 0) ||
    a.sessionId.localeCompare(b.sessionId),
  );
  sessionRows.replaceChildren(...sessions.map(row));
  if (source === Source.MEMORY_ONLY) {
    showStatus(`${sessions.length} sessions (memory only: ${degradedReason})`, "degraded");
  } else {
    showStatus(`${sessions.length} sessions`);
  }
}

/** The list's source as the watch last said it. */
let listSource = { source: Source.COMPLETE, degradedReason: "" };

/**
 * Follows the picked workspace's sessions until another is picked: the
 * whole list first, then each change. A broken stream (a host-service that
 * restarted) is opened again from the last revision seen.
 */
async function follow() {
  watching?.abort();
  const stop = new AbortController();
  watching = stop;
  const workspaceId = workspaceSelect.value;
  shown.clear();
  if (!workspaceId) {
    showStatus("no open workspace: create one with `holdfast workspace create NAME`");
    return;
  }
  let sinceRevision: bigint | undefined;
  let backoff = 100;
  while (!stop.signal.aborted) {
    try {
      const events = terminals.watchSessions({ workspaceId, sinceRevision }, { signal: stop.signal });
      for await (const { revision, event } of events) {
        sinceRevision = revision;
        backoff = 100;
        switch (event.case) {
          case "list":
            shown.clear();
            for (const s of event.value.sessions) shown.set(s.sessionId, s);
            listSource = { source: event.value.source, degradedReason: event.value.degradedReason };
            break;
          case "added":
          case "changed":
            shown.set(event.value.sessionId, event.value);
            break;
          case "removed":
            shown.delete(event.value.sessionId);
            break;
          case "source":
            listSource = { source: event.value.source, degradedReason: event.value.degradedReason };
            break;
        }
        render(listSource.source, listSource.degradedReason);
      }
    } catch (error) {
      if (stop.signal.aborted) return;
      showStatus(`${describe(error)}; watching again`, "error");
    }
    await new Promise((resolve) => setTimeout(resolve, backoff));
    backoff = Math.min(backoff * 2, MOST_BACKOFF_MS);
  }
}

/** Shows a line of the page's own in the terminal, apart from the output. */
function note(text: string) {
  terminal.write(`\r\n\x1b[2m[${text}]\x1b[0m\r\n`);
}

/**
 * Streams one session into the terminal until it exits: its output from
 * the first byte held, or, when a replay would not draw it right (a
 * full-screen program, output no longer held), its screen as it is and
 * the output after it.
 */
async function attach(sessionId: string) {
  attached?.stop.abort();
  const stop = new AbortController();
  const mine: NonNullable<typeof attached> = { sessionId, stop, attachment: "", ended: false };
  attached = mine;
  render(listSource.source, listSource.degradedReason); // the row picked shows it
  typed = new Uint8Array();
  viewing.textContent = sessionId;
  delete screen.dataset.size;
  newTerminal();
  try {
    const events = terminals.attachSession(
      { sessionId, start: AttachStart.AUTO },
      {
        signal: stop.signal,
        onHeader: (headers) => {
          mine.attachment = headers.get("holdfast-attachment") ?? "";
          const live = headers.get("holdfast-live-offset");
          mine.liveFrom = live === null ? undefined : BigInt(live);
          // Attaching makes this the latest client: the session takes its size.
          fit.fit();
          void sendSize();
        },
      },
    );
    for await (const { event } of events) {
      if (attached !== mine) break; // another session was picked meanwhile
      switch (event.case) {
        case "output":
          show(mine, event.value.offset, event.value.data);
          break;
        case "screen":
          // Drawn at the session's size; the resize sent on attach has
          // its program draw again at this terminal's.
          terminal.write(event.value.rendering);
          break;
        case "truncated":
          note(`${event.value.toOffset - event.value.fromOffset} bytes no longer held`);
          break;
        case "title":
          viewing.textContent = `${sessionId}: ${event.value.title}`;
          break;
        case "exited": {
          const how = event.value.signal !== undefined
            ? `killed by signal ${event.value.signal}`
            : `exited with code ${event.value.exitCode}`;
          mine.ended = true;
          note(`session ${how}`);
          break;
        }
      }
    }
  } catch (error) {
    if (attached === mine) note(describe(error));
  }
}

/** Whether a resize is on its way, and whether the size changed since it left. */
let resizing = false;
let resizedSince = false;

/**
 * Gives the session shown the terminal's size, as this client's: one
 * resize at a time, the latest size after it, so that the session is left
 * at the size the terminal has.
 */
async function sendSize() {
  if (resizing) {
    resizedSince = true;
    return;
  }
  resizing = true;
  do {
    resizedSince = false;
    const shown = attached;
    if (!shown?.attachment || shown.ended) break;
    const { cols, rows } = terminal;
    try {
      await terminals.resizeSession({ sessionId: shown.sessionId, cols, rows, attachment: shown.attachment });
      if (attached === shown) screen.dataset.size = `${cols}x${rows}`;
    } catch (error) {
      if (attached === shown) note(describe(error));
    }
  } while (resizedSince);
  resizing = false;
}

/** Keys typed while a write is on its way, sent together after it, in order. */
let typed = new Uint8Array();

/** Sends `keys` to the session shown, after what was typed before. */
function type(keys: Uint8Array) {
  if (!attached || attached.ended) return;
  typed = joined(typed, keys);
  if (!sending) void sendKeys();
}
let sending = false;
/** The most one write carries: a paste beyond it goes in several, in order. */
const WRITE_BYTES = 64 * 1024;
const encoder = new TextEncoder();

function joined(a: Uint8Array, b: Uint8Array): Uint8Array {
  const both = new Uint8Array(a.length + b.length);
  both.set(a);
  both.set(b, a.length);
  return both;
}

/**
 * Sends what is typed to the session shown, in order. A write refused
 * because the program has not read what came before
 * (`RESOURCE_EXHAUSTED`: nothing of it was taken) goes again, before what
 * was typed since, for as long as the program does not read (as keys wait
 * in a terminal's input queue); a refusal of any other kind drops what
 * waits, which would reach the program with a gap.
 */
async function sendKeys() {
  const shown = attached;
  if (!shown) return;
  sending = true;
  let waiting = new Uint8Array();
  let pause = 10;
  while (attached === shown && (typed.length > 0 || waiting.length > 0)) {
    waiting = joined(waiting, typed);
    typed = new Uint8Array();
    const data = waiting.subarray(0, WRITE_BYTES);
    try {
      await terminals.writeInput({ sessionId: shown.sessionId, data, attachment: shown.attachment });
      waiting = waiting.subarray(data.length);
      pause = 10;
    } catch (error) {
      if (attached !== shown) break;
      if (ConnectError.from(error).code === Code.ResourceExhausted) {
        await new Promise((resolve) => setTimeout(resolve, pause));
        pause = Math.min(pause * 2, 1000);
        continue;
      }
      note(describe(error));
      waiting = new Uint8Array();
      typed = new Uint8Array();
    }
  }
  sending = false;
  // Keys typed in another session picked meanwhile.
  if (typed.length > 0 && attached) void sendKeys();
}

newTerminal();
new ResizeObserver(() => fit.fit()).observe(screen);

workspaceSelect.addEventListener("change", () => void follow());

try {
  await loadWorkspaces();
  void follow();
} catch (error) {
  const unreachable = ConnectError.from(error).code === Code.Unavailable;
  showStatus(
    unreachable
      ? `cannot reach the host-service at ${params.get("host") ?? "http://127.0.0.1:7077"}: start it with \`cargo run --release -p host-service\``
      : describe(error),
    "error",
  );
}
