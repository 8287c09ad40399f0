#!/usr/bin/env python3
"""A holdfast client in Python: create a workspace and a session, list and
count, stream output from AttachSession, send input, dispose, and read a
refusal's reason and field (grpcio-status).

Stubs are generated from proto/ at run time (grpcio-tools), never committed.

    python3 -m venv .venv && .venv/bin/pip install grpcio grpcio-tools grpcio-status
    .venv/bin/python clients/python/example.py 127.0.0.1:7077
"""

import importlib
import pathlib
import sys
import tempfile

import grpc
import grpc_tools
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parents[2]


def generate_stubs():
    """Compiles host.proto into a temp dir and imports the modules."""
    out = tempfile.mkdtemp(prefix="holdfast-stubs-")
    well_known = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    status = protoc.main([
        "protoc",
        f"-I{ROOT / 'proto'}",
        f"-I{well_known}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        str(ROOT / "proto/holdfast/host/v1/host.proto"),
    ])
    if status != 0:
        sys.exit(f"protoc failed with status {status}")
    sys.path.insert(0, out)
    return (importlib.import_module("holdfast.host.v1.host_pb2"),
            importlib.import_module("holdfast.host.v1.host_pb2_grpc"))


def read_until(stream, pb, needle, seen=b""):
    """Collects output events until `needle` appears in them."""
    for event in stream:
        if event.WhichOneof("event") == "output":
            seen += event.output.data
            if needle in seen:
                return seen
        elif event.WhichOneof("event") == "exited":
            break
    sys.exit(f"stream ended before {needle!r}; got {seen!r}")


def main():
    address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:7077"
    pb, rpc = generate_stubs()
    channel = grpc.insecure_channel(address)
    workspaces = rpc.WorkspaceServiceStub(channel)
    terminals = rpc.TerminalServiceStub(channel)

    workspace = workspaces.CreateWorkspace(pb.CreateWorkspaceRequest(name="python")).workspace
    print("workspace", workspace.workspace_id)
    session = terminals.CreateSession(pb.CreateSessionRequest(
        workspace_id=workspace.workspace_id,
        argv=["sh", "-c", "echo ready; exec cat"],
        title="python example",
    )).session
    print("session", session.session_id, "pid", session.pid)

    # A watch: the whole list first, then each change, each with a revision.
    watch = terminals.WatchSessions(pb.WatchSessionsRequest(
        workspace_id=workspace.workspace_id), timeout=20)
    first = next(watch)
    print("watch list", len(first.list.sessions), "resync", first.list.resync)

    listed = terminals.ListSessions(pb.ListSessionsRequest(workspace_id=workspace.workspace_id))
    print("listed", len(listed.sessions), pb.Source.Name(listed.source))
    count = terminals.CountBackgroundSessions(pb.CountBackgroundSessionsRequest(
        workspace_id=workspace.workspace_id))
    print("background", count.count)

    stream = terminals.AttachSession(pb.AttachSessionRequest(
        session_id=session.session_id, from_offset=0), timeout=20)
    seen = read_until(stream, pb, b"ready")
    terminals.WriteInput(pb.WriteInputRequest(session_id=session.session_id, data=b"hello\n"))
    seen = read_until(stream, pb, b"hello\r\nhello\r\n", seen)
    print("output", repr(seen.decode()))
    stream.cancel()

    terminals.DisposeSession(pb.DisposeSessionRequest(session_id=session.session_id))
    after = terminals.ListSessions(pb.ListSessionsRequest(workspace_id=workspace.workspace_id))
    print("after dispose", len(after.sessions))
    # The watch was told: the session left, disposed.
    for message in watch:
        if message.WhichOneof("event") == "removed":
            print("watch removed", pb.Removal.Name(message.removed.reason),
                  "after revision", message.revision > first.revision)
            break
    watch.cancel()

    try:
        terminals.WriteInput(pb.WriteInputRequest(session_id="not-an-id", data=b"x"))
    except grpc.RpcError as error:
        print("bad id", error.code().name, error.details())
        print_reasons(error)


def print_reasons(error):
    """Prints what a refusal's details say, as a program would read them:
    the reason (google.rpc.ErrorInfo) and any bad field (google.rpc.BadRequest)."""
    status = rpc_status.from_call(error)
    for detail in status.details if status else []:
        info = error_details_pb2.ErrorInfo()
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(info):
            print("reason", info.domain, info.reason, dict(info.metadata))
        elif detail.Unpack(bad):
            for violation in bad.field_violations:
                print("field", violation.field)


if __name__ == "__main__":
    main()
