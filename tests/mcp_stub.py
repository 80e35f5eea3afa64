"""A tiny MCP server over stdio (raw JSON-RPC, no SDK: it starts in ~30 ms).

Tools: ``echo {text}``, ``fail {message}`` (isError), ``structured`` (structured content
only), ``picture`` (an image and a text block), ``env {name}``, ``environ`` (all of it, as
JSON), ``write {path, text}``, ``read {path}`` (those three with ``--probe-tools``),
``cwd``, ``crash`` (dies
mid-call), ``hang`` (never answers), ``grow`` (adds a tool ``extra`` and says the list
changed).
Flags: ``--startup-delay S`` (answer ``initialize`` late), ``--pidfile P``, ``--calls P``
(append every tools/call, and every cancellation as ``{"cancelled": id}``, as a JSON line),
``--ready P`` (write ``time.monotonic()`` once initialized), ``--start-when P`` (answer
``initialize`` only once the file ``P`` exists: a test opens the gate when it wants the
server started, instead of a delay that hopes to be long enough), ``--asked P`` (write ``P``
when ``initialize`` arrives: the client is waiting now).  Exits on stdin EOF, even while
delaying.
"""

import argparse
import json
import os
import select
import sys
import time

#: With ``--probe-tools``: what a containment test asks a server to try.
PROBE_TOOLS = [
    {"name": "environ", "description": "The whole environment, as JSON.",
     "inputSchema": {"type": "object"}},
    {"name": "write", "description": "Write text to a path; say what happened.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"},
                                                      "text": {"type": "string"}}}},
    {"name": "read", "description": "Read a path; say what happened.",
     "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
]

TOOLS = [
    {"name": "echo", "title": "Echo some text", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]}},
    {"name": "fail", "description": "Report an error.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
    {"name": "structured", "description": "Structured content only.",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "picture", "description": "An image.", "inputSchema": {"type": "object"}},
    {"name": "env", "description": "An environment variable.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    {"name": "cwd", "description": "The working directory.", "inputSchema": {"type": "object"}},
    {"name": "crash", "description": "Die mid-call.", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Never answer.", "inputSchema": {"type": "object"}},
    {"name": "grow", "description": "Add a tool.", "inputSchema": {"type": "object"}},
]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def call(name, args):
    if name == "echo":
        reply = {"content": [{"type": "text", "text": args.get("text", "")}]}
        if args.get("mirror"):  # as the reference filesystem server: the text again, keyed
            reply["structuredContent"] = {"content": args.get("text", "")}
        return reply
    if name == "fail":
        return {"content": [{"type": "text", "text": args.get("message", "failed")}],
                "isError": True}
    if name == "structured":
        return {"content": [], "structuredContent": {"answer": 42, "unit": "widgets"}}
    if name == "picture":
        blocks = [{"type": "text", "text": "a red dot"},
                  {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]
        reply = {"content": blocks}
        if args.get("mirror") == "blocks":  # the content blocks again, as structured content
            reply["structuredContent"] = {"content": blocks}
        elif args.get("mirror") == "data":  # the image's bytes again, under another shape
            reply["structuredContent"] = {"image": {"base64": blocks[1]["data"],
                                                    "mime": "image/png"}, "caption": "a dot"}
        return reply
    if name == "env":
        return {"content": [{"type": "text", "text": os.environ.get(args.get("name", ""), "")}]}
    if name == "environ":
        return {"content": [{"type": "text", "text": json.dumps(dict(os.environ))}]}
    if name in ("write", "read"):
        try:
            if name == "write":
                with open(args["path"], "w") as handle:
                    handle.write(args.get("text", ""))
                text = "wrote"
            else:
                with open(args["path"]) as handle:
                    text = "read: " + handle.read()
        except OSError as exc:
            text = f"failed: {exc}"
        return {"content": [{"type": "text", "text": text}]}
    if name == "cwd":
        return {"content": [{"type": "text", "text": os.getcwd()}]}
    if name == "grow":
        TOOLS.append({"name": "extra", "description": "Added later.",
                      "inputSchema": {"type": "object"}})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return {"content": [{"type": "text", "text": "grown"}]}
    if name == "crash":
        sys.stderr.write("boom: simulated crash\n")
        sys.stderr.flush()
        os._exit(3)
    return None  # hang


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--startup-delay", type=float, default=0)
    p.add_argument("--pidfile")
    p.add_argument("--calls")
    p.add_argument("--ready")
    p.add_argument("--start-when")
    p.add_argument("--asked")
    p.add_argument("--probe-tools", action="store_true")
    opts = p.parse_args()
    if opts.probe_tools:
        TOOLS.extend(PROBE_TOOLS)
    if opts.pidfile:
        with open(opts.pidfile, "a") as f:
            f.write(f"{os.getpid()}\n")
    for line in sys.stdin:
        msg = json.loads(line)
        method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if mid is None:
            if method == "notifications/cancelled" and opts.calls:
                with open(opts.calls, "a") as f:  # recorded like a call: a test looks for it
                    f.write(json.dumps({"cancelled": params.get("requestId")}) + "\n")
            continue  # notifications
        if method == "initialize":
            if opts.asked:
                open(opts.asked, "w").close()
            # Wait, but wake (and exit) if stdin closes meanwhile.
            if opts.startup_delay and select.select([sys.stdin], [], [], opts.startup_delay)[0]:
                return
            while opts.start_when and not os.path.exists(opts.start_when):
                if select.select([sys.stdin], [], [], 0.01)[0]:
                    return
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": "stub", "version": "1"}}})
            if opts.ready:
                with open(opts.ready, "w") as f:
                    f.write(repr(time.monotonic()))
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            if opts.calls:
                with open(opts.calls, "a") as f:
                    f.write(json.dumps(params) + "\n")
            result = call(params.get("name"), params.get("arguments") or {})
            if result is not None:
                send({"jsonrpc": "2.0", "id": mid, "result": result})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": mid,
                  "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
