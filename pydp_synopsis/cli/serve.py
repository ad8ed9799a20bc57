"""``pydp-synopsis serve SYN [SYN ...]``: publish saved synopses read-only on the web
(:mod:`pydp_synopsis.serve`; needs the ``serve`` extra, checked first)."""
import sys

from ..arguments import integer
from ..serve import DEFAULT_MAX_BATCH, DEFAULT_MAX_BODY, Limits, bind, create_app, load_catalog, \
    require_serve, run

__all__ = ["cmd_serve", "add_serve_parser"]


def add_serve_parser(sub):
    s = sub.add_parser(
        "serve", help="publish saved synopses: a read-only JSON API and a page each (needs the "
                      "serve extra)",
        description="Serve the saved synopses and counter checkpoints named here, read-only: "
                    "a JSON API (/api/synopses, /api/openapi.json) and a page per file "
                    "(/s/NAME, NAME the file's stem).  Only these files, loaded once at start, "
                    "are served; no request reaches the filesystem.  Answers are "
                    "post-processing of the releases: they cost no privacy.  SIGINT or SIGTERM "
                    "stops it gracefully.")
    s.add_argument("files", nargs="+", metavar="SYN", help="a saved synopsis or counter checkpoint")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: %(default)s, this machine only; put a "
                        "reverse proxy in front to publish)")
    s.add_argument("--port", type=integer, default=8000,
                   help="TCP port, 0 for any free one (default: %(default)s)")
    s.add_argument("--max-batch", dest="max_batch", type=integer, default=DEFAULT_MAX_BATCH,
                   help="most ranges or boxes in one count request (default: %(default)s)")
    s.add_argument("--max-body", dest="max_body", type=integer, default=DEFAULT_MAX_BODY,
                   help="largest request body in bytes (default: %(default)s)")
    s.add_argument("--cors-origin", dest="cors_origin", metavar="ORIGIN",
                   help="let pages of this one origin (https://host[:port]) read the API; "
                        "default: no CORS")
    s.set_defaults(func=cmd_serve)
    return s


def _check_port(port):
    if not 0 <= port <= 65535:
        raise ValueError(f"--port must be in [0, 65535], got {port}")
    return port


def _check_origin(origin):
    if origin is None:
        return None
    scheme, sep, rest = origin.partition("://")
    if scheme not in ("http", "https") or not sep or not rest or "/" in rest or "*" in rest:
        raise ValueError(f"--cors-origin must be one origin such as https://example.org, "
                         f"got {origin!r}")
    return origin


def cmd_serve(args):
    require_serve()                          # before any file is read
    port = _check_port(args.port)
    origin = _check_origin(args.cors_origin)
    try:
        limits = Limits(max_body=args.max_body, max_batch=args.max_batch)
    except ValueError as exc:
        raise ValueError(str(exc).replace("max_body (bytes)", "--max-body")
                         .replace("max_batch", "--max-batch")) from None
    catalog = load_catalog(args.files)       # a file that fails: one line, exit 2
    app = create_app(catalog, limits, cors_origin=origin)
    sock = bind(args.host, port)
    host, bound = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host

    def ready():
        print(f"pydp-synopsis: serving {len(catalog)} file(s) at http://{shown}:{bound}/ "
              f"(Ctrl-C to stop)", file=sys.stderr, flush=True)

    try:
        run(app, sock, on_ready=ready)
    except KeyboardInterrupt:               # uvicorn re-raises the signal after its graceful stop
        pass
    finally:
        sock.close()
    print("pydp-synopsis: stopped", file=sys.stderr, flush=True)
    return 0
