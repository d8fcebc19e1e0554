"""HTTP systems in the tool pool: OpenAPI import, the HTTP executor, circuit breakers and probes.

Pure parts (no I/O): `openapi_import.import_operations`/`merge_draft`, `request.build_request`,
`circuit.CircuitBreaker`. I/O parts take their `httpx.AsyncClient` from the caller.
"""
