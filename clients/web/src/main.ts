// A minimal holdfast page over grpc-web: the sessions of a workspace, kept
// current, and the live output of the one you pick, with a line of input.
//
// Query parameters: `host` (default http://127.0.0.1:7077), `workspace`
// (default: the first open workspace).
//
// Output is shown as text; a real frontend would feed the bytes to a
// terminal emulator such as xterm.js.

import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import {
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

const REFRESH_MS = 1000;

const element = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const workspaceSelect = element<HTMLSelectElement>("workspace");
const statusLine = element<HTMLParagraphElement>("status");
const sessionRows = element<HTMLTableSectionElement>("sessions");
const viewing = element<HTMLHeadingElement>("viewing");
const output = element<HTMLPreElement>("output");
const inputForm = element<HTMLFormElement>("input");

let attached: { sessionId: string; stop: AbortController } | undefined;
/** The generation of the list the rows show, to ask whether it still stands. */
let held: { workspaceId: string; generation: bigint } | undefined;

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
  for (const text of [s.sessionId, s.title, String(s.pid), s.attached ? "yes" : "no", state(s)]) {
    tr.insertCell().textContent = text;
  }
  tr.classList.toggle("selected", attached?.sessionId === s.sessionId);
  tr.addEventListener("click", () => void attach(s.sessionId));
  return tr;
}

async function refresh() {
  const workspaceId = workspaceSelect.value;
  if (!workspaceId) {
    showStatus("no open workspace: create one with `holdfast workspace create NAME`");
    return;
  }
  try {
    // The rows show no output offsets: while the list held is current, the
    // host-service says so (offsets only) and the rows stay as they are.
    const ifGeneration = held?.workspaceId === workspaceId ? held.generation : undefined;
    const list = await terminals.listSessions({ workspaceId, ifGeneration });
    if (list.unchanged) return;
    held = list.generation ? { workspaceId, generation: list.generation } : undefined;
    sessionRows.replaceChildren(...list.sessions.map(row));
    if (list.source === Source.MEMORY_ONLY) {
      showStatus(`${list.sessions.length} sessions (memory only: ${list.degradedReason})`, "degraded");
    } else {
      showStatus(`${list.sessions.length} sessions`);
    }
  } catch (error) {
    held = undefined;
    showStatus(describe(error), "error");
  }
}

/** Streams one session's output from its first held byte until it exits. */
async function attach(sessionId: string) {
  attached?.stop.abort();
  held = undefined; // the rows show which session is selected
  const stop = new AbortController();
  attached = { sessionId, stop };
  viewing.textContent = `Output of ${sessionId}`;
  output.textContent = "";
  inputForm.hidden = false;
  const decoder = new TextDecoder();
  try {
    for await (const { event } of terminals.attachSession(
      { sessionId, fromOffset: 0n },
      { signal: stop.signal },
    )) {
      switch (event.case) {
        case "output":
          output.append(decoder.decode(event.value.data, { stream: true }));
          output.scrollTop = output.scrollHeight;
          break;
        case "truncated":
          output.append(`\n[${event.value.toOffset - event.value.fromOffset} bytes no longer held]\n`);
          break;
        case "title":
          viewing.textContent = `Output of ${sessionId}: ${event.value.title}`;
          break;
        case "exited": {
          const how = event.value.signal !== undefined
            ? `killed by signal ${event.value.signal}`
            : `exited with code ${event.value.exitCode}`;
          output.append(`\n[session ${how}]\n`);
          break;
        }
      }
    }
  } catch (error) {
    if (!stop.signal.aborted) output.append(`\n[${describe(error)}]\n`);
  } finally {
    if (attached?.stop === stop) inputForm.hidden = true;
  }
}

inputForm.addEventListener("submit", async (e) => {
  e.preventDefault();
  const field = inputForm.elements.namedItem("line") as HTMLInputElement;
  if (!attached) return;
  try {
    await terminals.writeInput({
      sessionId: attached.sessionId,
      data: new TextEncoder().encode(`${field.value}\n`),
    });
    field.value = "";
  } catch (error) {
    output.append(`\n[${describe(error)}]\n`);
  }
});

workspaceSelect.addEventListener("change", () => void refresh());

try {
  await loadWorkspaces();
  await refresh();
  setInterval(() => void refresh(), REFRESH_MS);
} catch (error) {
  const unreachable = ConnectError.from(error).code === Code.Unavailable;
  showStatus(
    unreachable
      ? `cannot reach the host-service at ${params.get("host") ?? "http://127.0.0.1:7077"}: start it with \`cargo run --release -p host-service\``
      : describe(error),
    "error",
  );
}
