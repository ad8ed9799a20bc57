"""Publish saved synopses: a read-only web service with a JSON API and a page per synopsis
(``pydp-synopsis serve``; docs/guide/serve.md).

* :mod:`.catalog` -- the files named at start, loaded once; descriptions and pictures;
* :mod:`.limits` -- body and batch limits, strict JSON, query corners checked;
* :mod:`.answers` -- count requests answered in batches (one vectorised call);
* :mod:`.api` -- the JSON handlers;
* :mod:`.openapi` -- the API's OpenAPI document;
* :mod:`.app` -- the Starlette application, security headers, uvicorn (optional extra ``serve``).
"""
from .app import SECURITY_HEADERS, bind, create_app, require_serve, run
from .catalog import Published, load_catalog
from .limits import DEFAULT_MAX_BATCH, DEFAULT_MAX_BODY, MAX_BATCH, Limits, RequestError

__all__ = ["create_app", "run", "bind", "require_serve", "load_catalog", "Published", "Limits",
           "RequestError", "SECURITY_HEADERS", "DEFAULT_MAX_BATCH", "DEFAULT_MAX_BODY",
           "MAX_BATCH"]
