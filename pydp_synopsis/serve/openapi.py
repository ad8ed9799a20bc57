"""The API's OpenAPI 3.1 description, served at ``/api/openapi.json`` (written by
hand: the handlers are plain functions, and the schema is the contract)."""
__all__ = ["openapi_schema"]

_ERROR = {"description": "a refused request: one line",
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"},
         "description": "the served file's stem"}
_BINS = {"name": "bins", "in": "query", "required": False, "schema": {"type": "integer",
                                                                       "minimum": 1}}


def _json(ref):
    return {"content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}}}


def openapi_schema(version, limits):
    """The OpenAPI document (a dict) of a service with these :class:`~.limits.Limits`."""
    bound = {"oneOf": [{"type": "integer"}, {"type": "number"}, {"type": "string"}],
             "description": "in the column's units: integers, decimals (numbers or decimal "
                            "text), dates and times as ISO text"}
    pair = {"type": "array", "items": bound, "minItems": 2, "maxItems": 2}
    errors = {"400": _ERROR, "404": _ERROR, "405": _ERROR, "413": _ERROR}
    return {
        "openapi": "3.1.0",
        "info": {"title": "pydp-synopsis serve", "version": version,
                 "description": "Read-only queries of published differentially private "
                                "synopses. Every answer is post-processing of a release: "
                                "it costs no privacy."},
        "paths": {
            "/healthz": {"get": {"summary": "liveness", "responses": {"200": _json("Health")}}},
            "/api/synopses": {"get": {"summary": "the served files",
                                      "responses": {"200": _json("Listing")}}},
            "/api/synopses/{name}": {"get": {
                "summary": "columns, units, domain in user units, epsilon, delta, structure "
                           "(a counter: its current release)",
                "parameters": [_NAME], "responses": {"200": _json("Description"), **errors}}},
            "/api/synopses/{name}/count": {"post": {
                "summary": "counts with their noise std and per-query intervals",
                "parameters": [_NAME],
                "requestBody": {"required": True, **_json("CountRequest")},
                "responses": {"200": _json("Counts"), **errors}}},
            "/api/synopses/{name}/distribution": {"get": {
                "summary": "what the page draws: bins with intervals (1-D), a heat map (2-D)",
                "parameters": [_NAME, _BINS], "responses": {"200": {"description": "ok"},
                                                            **errors}}},
        },
        "components": {"schemas": {
            "Error": {"type": "object", "required": ["error"],
                      "properties": {"error": {"type": "string"}}},
            "Health": {"type": "object", "properties": {"status": {"const": "ok"},
                                                        "synopses": {"type": "integer"}}},
            "Listing": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"},
                "kind": {"enum": ["interval", "rectangle", "counter"]}}}},
            "Description": {"type": "object"},
            "CountRequest": {
                "type": "object",
                "description": f"at most {limits.max_batch} ranges or boxes and "
                               f"{limits.max_body} bytes",
                "properties": {
                    "ranges": {"type": "array", "items": pair, "minItems": 1,
                               "maxItems": limits.max_batch,
                               "description": "interval synopses: inclusive [lo, hi]"},
                    "boxes": {"type": "array", "minItems": 1, "maxItems": limits.max_batch,
                              "items": {"type": "array", "items": pair},
                              "description": "rectangle synopses: one [lo, hi] per axis"},
                    "confidence": {"type": "number", "exclusiveMinimum": 0,
                                   "exclusiveMaximum": 1, "default": 0.95}}},
            "Counts": {"type": "object", "properties": {
                key: {"type": "array", "items": {"type": ["number", "null"]}}
                for key in ("answers", "std", "low", "high")}},
        }},
    }
