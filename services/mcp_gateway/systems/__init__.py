"""HTTP systems in the tool pool: OpenAPI import, the HTTP executor, circuit breakers and probes.

Pure parts (no I/O): `openapi_import.import_operations`, `merge.merge_draft`, `request.build_request`,
`circuit.CircuitBreaker`. I/O parts take their `httpx.AsyncClient` from the caller.
"""

from services.mcp_gateway.systems.circuit import Admission, CircuitBreaker, CircuitSnapshot, CircuitState, Transition
from services.mcp_gateway.systems.executor import HttpExecutor, HttpOutcome
from services.mcp_gateway.systems.merge import MergeDecision, merge_draft, plan_merge
from services.mcp_gateway.systems.openapi_import import ImportResult, Rename, import_operations
from services.mcp_gateway.systems.openapi_load import OpenApiError, load_openapi, load_openapi_async
from services.mcp_gateway.systems.probe import Prober, probe
from services.mcp_gateway.systems.secrets import DeclaredSecrets, SecretMissing, UndeclaredSecret

__all__ = [
    "Admission", "CircuitBreaker", "CircuitSnapshot", "CircuitState", "DeclaredSecrets", "HttpExecutor",
    "HttpOutcome", "ImportResult", "MergeDecision", "OpenApiError", "Prober", "Rename", "SecretMissing",
    "Transition", "UndeclaredSecret",
    "import_operations", "load_openapi", "load_openapi_async", "merge_draft", "plan_merge", "probe",
]
