# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A small Kubernetes API client for the collection's cluster-side modules.

It wraps the official ``kubernetes`` Python client (``DynamicClient`` for discovery and requests) and offers
the handful of verbs the modules need: server-side apply, get, list, delete and JSON merge patch.

``K8sClient.connect(K8sConnection)`` builds one; the connection options are ``_k8s/config``'s, the objects' types
``_k8s/objects``'.

Every failure is raised as :class:`K8sError` with the HTTP status (0 when no response was received) and a message
that names the verb, the resource and the API server; tokens, passwords and the user info of URLs
(``scheme://user:password@``, e.g. in ``proxy``) never appear in it.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import tempfile
import time
import weakref
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, TypeVar, cast

from ansible_collections.pinned.images.plugins.module_utils._k8s.config import (
    K8sConnection,
    build_configuration,
    safe_url,
    scrub_text,
    url_secrets,
)
from ansible_collections.pinned.images.plugins.module_utils._k8s.errors import K8sError
from ansible_collections.pinned.images.plugins.module_utils._k8s.objects import (
    KubeObject,
    LabelSelector,
    selector_string,
)

__all__ = [
    "APPLY_PATCH",
    "DEFAULT_FIELD_MANAGER",
    "DEFAULT_TIMEOUT",
    "HAS_KUBERNETES",
    "KUBERNETES_IMPORT_ERROR",
    "MAX_ATTEMPTS",
    "MERGE_PATCH",
    "RETRY_DELAY",
    "K8sClient",
    "check_timeout",
    "require_kubernetes",
]

# The library is imported on first use (require_kubernetes), not here: its import takes longer than rendering
# thousands of images, and a module that only writes files never talks to a cluster.
HAS_KUBERNETES = all(importlib.util.find_spec(name) is not None for name in ("kubernetes", "urllib3"))
KUBERNETES_IMPORT_ERROR: ImportError | None = None if HAS_KUBERNETES else ImportError("No module named 'kubernetes'")
# Bound by _import_kubernetes.
urllib3: Any = None
k8s_client_mod: Any = None
DynamicClient: Any = None
DynamicApiError: Any = None
ResourceNotFoundError: Any = None
ResourceNotUniqueError: Any = None
ApiException: Any = None


def _import_kubernetes() -> None:
    """Bind the library's names in this module; raises ImportError."""
    global urllib3, k8s_client_mod, DynamicClient, DynamicApiError  # pylint: disable=global-statement
    global ResourceNotFoundError, ResourceNotUniqueError, ApiException  # pylint: disable=global-statement
    import urllib3
    from kubernetes import client as k8s_client_mod
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError, ResourceNotUniqueError


_F = TypeVar("_F", bound=Callable[..., Any])

DEFAULT_FIELD_MANAGER = "pinned-images"
DEFAULT_TIMEOUT = 30
# Attempts of one request when the server refused the connection or dropped it unanswered, all within the timeout.
MAX_ATTEMPTS = 3
RETRY_DELAY = 0.25
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"


def require_kubernetes() -> None:
    """Import the kubernetes library once; raises K8sError when it is missing or broken."""
    if not HAS_KUBERNETES:
        raise K8sError(f"the Python library 'kubernetes' is required: {KUBERNETES_IMPORT_ERROR}")
    if DynamicClient is None:
        try:
            _import_kubernetes()
        except ImportError as exc:
            raise K8sError(f"the Python library 'kubernetes' cannot be imported: {exc}") from exc


def _group_of(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _parse_warnings(headers: Any) -> List[str]:
    """``Warning: 299 - "text"`` response headers -> ["text", ...]."""
    if not headers:
        return []
    values: List[str] = []
    getlist = getattr(headers, "getlist", None) or getattr(headers, "get_all", None)
    if getlist is not None:
        values = list(getlist("Warning") or [])
    else:
        value = headers.get("Warning") or headers.get("warning")
        if value:
            values = [value]
    found = []
    for value in values:
        for match in re.finditer(r'\d{3}\s+\S+\s+"((?:[^"\\]|\\.)*)"', value):
            found.append(re.sub(r"\\(.)", r"\1", match.group(1)))
    return found


class _DeadlinePassed(Exception):
    """The time of the current call ran out before (another attempt of) a request could start."""


def _within_timeout(method: _F) -> _F:
    """Give one public call (discovery, retries and every request it makes) ``timeout`` seconds in all."""

    @functools.wraps(method)
    def bounded(self: K8sClient, *args: Any, **kwargs: Any) -> Any:
        if self._deadline is not None:  # a call inside another one shares its deadline
            return method(self, *args, **kwargs)
        self._deadline = time.monotonic() + self.timeout
        try:
            return method(self, *args, **kwargs)
        except _DeadlinePassed:
            raise self._timeout_error() from None
        finally:
            self._deadline = None

    return cast(_F, bounded)


def _is_timeout(exc: Optional[BaseException]) -> bool:
    if isinstance(exc, urllib3.exceptions.MaxRetryError):
        exc = exc.reason
    # NewConnectionError derives from ConnectTimeoutError, but means "refused" or "unreachable".
    return isinstance(exc, urllib3.exceptions.TimeoutError) and not isinstance(
        exc, urllib3.exceptions.NewConnectionError
    )


def _is_retryable(exc: Optional[BaseException], method: str) -> bool:
    """Refused connections never reached the server; a dropped one is retried for the idempotent verbs used here."""
    if isinstance(exc, urllib3.exceptions.MaxRetryError):
        exc = exc.reason
    if isinstance(exc, urllib3.exceptions.NewConnectionError):
        return True
    return isinstance(exc, urllib3.exceptions.ProtocolError) and method.upper() in ("GET", "PATCH")


def check_timeout(value: Any) -> float:
    """``value`` as a timeout in seconds; K8sError unless it is a positive number."""
    try:
        timeout = float(value)
    except (TypeError, ValueError):
        timeout = 0.0
    if not timeout > 0 or timeout == float("inf"):
        raise K8sError(f"request_timeout must be a positive number of seconds, got {value!r}")
    return timeout


class K8sClient:
    """Talks to one API server. Build it with :meth:`connect`; call :meth:`close` when done.

    Each public call (``apply``, ``get``, ``list``, ...) ends within ``timeout`` seconds: discovery, the request
    and up to :data:`MAX_ATTEMPTS` attempts share that time; a server that does not answer gives K8sError status 0.
    """

    def __init__(
        self,
        configuration: Any,
        secrets: Iterable[str] = (),
        tmpdir: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        remove_tmpdir: bool = False,
    ) -> None:
        require_kubernetes()
        self.configuration = configuration
        # urllib3 would retry 3 more times with the full timeout each; the attempts are counted here instead.
        self.configuration.retries = 0
        self.timeout = check_timeout(timeout)
        self._deadline: Optional[float] = None
        self.warnings: List[str] = []
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        # A directory made here, or handed over by connect, is removed on close().
        remove_tmpdir = remove_tmpdir or tmpdir is None
        self._tmpdir = tmpdir if tmpdir is not None else tempfile.mkdtemp(prefix="pinned-images-k8s-")
        self._finalizer = weakref.finalize(self, shutil.rmtree, self._tmpdir, True) if remove_tmpdir else None
        self._api_client: Any = None
        self._dynamic: Any = None
        self._resources: Dict[Tuple[str, str], Any] = {}

    # ------------------------------------------------------------------ construction

    @classmethod
    def connect(
        cls, connection: Optional[K8sConnection], tmpdir: Optional[str] = None, timeout: Optional[float] = None
    ) -> K8sClient:
        """Build a client for ``connection`` (None: every option unset).

        ``tmpdir`` receives the discovery cache and certificate files the kubeconfig loader writes; give the module's
        ``module.tmpdir``. Without it a private temporary directory is made and removed on :meth:`close`.
        ``timeout`` defaults to the ``request_timeout`` option, else :data:`DEFAULT_TIMEOUT`.
        """
        require_kubernetes()
        connection = connection or K8sConnection()
        if timeout is None:
            timeout = connection.request_timeout
        timeout = check_timeout(DEFAULT_TIMEOUT if timeout is None else timeout)
        own_tmp: Optional[str] = None
        if tmpdir is None:
            own_tmp = tempfile.mkdtemp(prefix="pinned-images-k8s-")
            tmpdir = own_tmp
        try:
            configuration, secrets = build_configuration(connection, tmpdir)
        except Exception:
            if own_tmp:
                shutil.rmtree(own_tmp, ignore_errors=True)
            raise
        return cls(configuration, secrets=secrets, tmpdir=tmpdir, timeout=timeout, remove_tmpdir=own_tmp is not None)

    def close(self) -> None:
        """Close the connections and remove the temporary directory this client made."""
        if self._api_client is not None:
            try:
                self._api_client.close()
            except Exception:  # pragma: no cover - best effort
                pass
            self._api_client = None
            self._dynamic = None
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> K8sClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def host(self) -> str:
        """The API server URL without credentials."""
        return safe_url(self.configuration.host)

    # ------------------------------------------------------------------ plumbing

    def _scrub(self, text: object) -> str:
        secrets = set(self._secrets)
        for value in (getattr(self.configuration, "api_key", None) or {}).values():
            if value:
                secrets.update((value, value.split(" ", 1)[-1]))
        for url in (getattr(self.configuration, "proxy", None), getattr(self.configuration, "host", None)):
            secrets |= url_secrets(url)
        return scrub_text(str(text), secrets)

    def _timeout_error(self) -> K8sError:
        return K8sError(
            f"the Kubernetes API server at {self.host} did not answer within {self.timeout:g} s (request_timeout)",
            status=0,
            reason="Timeout",
        )

    def _remaining(self) -> float:
        if self._deadline is None:
            return self.timeout
        return self._deadline - time.monotonic()

    def _bound_requests(self, api_client: Any) -> None:
        """Make every request of ``api_client`` (discovery too) use what is left of the call's time."""
        rest_client = api_client.rest_client
        send = rest_client.request

        def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            attempt = 1
            while True:
                remaining = self._remaining()
                if remaining <= 0:
                    raise _DeadlinePassed()
                kwargs["_request_timeout"] = remaining
                try:
                    return send(method, url, *args, **kwargs)
                except urllib3.exceptions.HTTPError as exc:
                    if _is_timeout(exc):
                        raise _DeadlinePassed() from None
                    delay = RETRY_DELAY * attempt
                    if attempt >= MAX_ATTEMPTS or not _is_retryable(exc, method) or self._remaining() <= delay:
                        raise
                time.sleep(delay)
                attempt += 1

        rest_client.request = request

    def _connection_error(self, exc: BaseException) -> K8sError:
        if _is_timeout(exc):
            return self._timeout_error()
        reason = getattr(exc, "reason", None) or exc
        text = str(reason)
        lowered = text.lower()
        if "refused" in lowered:
            what = "connection refused"
        elif "certificate" in lowered or "ssl" in lowered:
            what = f"TLS error ({text})"
        elif "name or service not known" in lowered or "nodename nor servname" in lowered or "resolution" in lowered:
            what = f"host name not resolved ({text})"
        elif "timed out" in lowered or "timeout" in lowered:
            what = f"timed out ({text})"
        else:
            what = text
        return K8sError(self._scrub(f"cannot reach the Kubernetes API server at {self.host}: {what}"), status=0)

    def _dyn(self) -> Any:
        if self._dynamic is None:
            self._api_client = k8s_client_mod.ApiClient(self.configuration)
            self._bound_requests(self._api_client)
            cache_file = os.path.join(self._tmpdir, "discovery-cache.json")
            try:
                self._dynamic = DynamicClient(self._api_client, cache_file=cache_file)
            except DynamicApiError as exc:
                raise self._api_error(exc, "discover", "the API groups") from None
            except ApiException as exc:
                raise self._api_error(exc, "discover", "the API groups") from None
            except urllib3.exceptions.HTTPError as exc:
                raise self._connection_error(exc) from None
        return self._dynamic

    def _resource(self, api_version: str, kind: str) -> Any:
        key = (api_version, kind)
        if key in self._resources:
            return self._resources[key]
        dyn = self._dyn()
        try:
            resource = dyn.resources.get(api_version=api_version, kind=kind)
        except (ResourceNotFoundError, ResourceNotUniqueError):
            group = _group_of(api_version)
            hint = " (is its CustomResourceDefinition installed?)" if group and not group.endswith("k8s.io") else ""
            raise K8sError(
                f"the API server at {self.host} does not serve kind {kind} in {api_version}{hint}",
                status=404,
                reason="NotFound",
            ) from None
        except (DynamicApiError, ApiException) as exc:
            raise self._api_error(exc, "discover", f"{kind} in {api_version}") from None
        except urllib3.exceptions.HTTPError as exc:
            raise self._connection_error(exc) from None
        self._resources[key] = resource
        return resource

    @staticmethod
    def _resource_label(resource: Any) -> str:
        return f"{resource.name}.{resource.group}" if resource.group else str(resource.name)

    def _api_error(
        self, exc: BaseException, verb: str, what: str, resource: Any = None, rbac_verb: Optional[str] = None
    ) -> K8sError:
        status = getattr(exc, "status", 0) or 0
        body = getattr(exc, "body", None)
        status_obj: Any = {}
        if body:
            try:
                status_obj = json.loads(body if isinstance(body, str) else body.decode("utf-8", "replace"))
            except (ValueError, AttributeError):
                status_obj = {}
        if not isinstance(status_obj, dict):
            status_obj = {}
        server_message = status_obj.get("message") or getattr(exc, "reason", "") or ""
        reason = status_obj.get("reason") or getattr(exc, "reason", None)
        details = status_obj.get("details") or {}
        causes = (details.get("causes") or []) if isinstance(details, dict) else []
        resource_label = self._resource_label(resource) if resource is not None else what
        if status == 401:
            message = (
                f"unauthorized: the API server at {self.host} rejected the credentials "
                f"(bearer token or client certificate) while trying to {verb} {what}"
            )
        elif status == 403:
            message = (
                f"forbidden: the credentials may not {rbac_verb or verb} {resource_label} ({verb} {what}) "
                f"on {self.host}: {server_message}"
            )
        elif status == 404:
            message = f"not found: {what} on {self.host}: {server_message}"
        elif status == 409:
            owners = []
            for cause in causes:
                field = cause.get("field")
                text = cause.get("message") or ""
                if field:
                    owners.append(f"{field} ({text})" if text else field)
                elif text:
                    owners.append(text)
            if owners:
                message = (
                    f"conflict: cannot {verb} {what}: fields owned by another field manager: {'; '.join(owners)}. "
                    "Set force_conflicts to take ownership, or let the other manager change them"
                )
            else:
                message = f"conflict: cannot {verb} {what}: {server_message}"
        elif status == 422:
            problems = [f"{c.get('field', '')}: {c.get('message', '')}".strip(": ") for c in causes]
            message = f"invalid: the API server rejected {what}: {server_message}"
            if problems and not all(p in server_message for p in problems):
                message += " [" + "; ".join(problems) + "]"
        else:
            message = f"cannot {verb} {what} on {self.host}: HTTP {status} {reason or ''}: {server_message}".rstrip(
                ": "
            )
        return K8sError(self._scrub(message), status=status, reason=reason, causes=causes)

    def _request(
        self,
        verb: str,
        what: str,
        method: str,
        resource: Any,
        name: Optional[str] = None,
        namespace: Optional[str] = None,
        body: Any = None,
        rbac_verb: Optional[str] = None,
        **query: Any,
    ) -> KubeObject:
        dyn = self._dyn()
        path = resource.path(name=name, namespace=namespace)
        try:
            response = dyn.request(method, path, body=body, serialize=False, **query)
        except (DynamicApiError, ApiException) as exc:
            raise self._api_error(exc, verb, what, resource, rbac_verb=rbac_verb or method) from None
        except urllib3.exceptions.HTTPError as exc:
            raise self._connection_error(exc) from None
        headers = getattr(response, "headers", None)
        if headers is None and hasattr(response, "getheaders"):
            headers = response.getheaders()
        self.warnings.extend(self._scrub(w) for w in _parse_warnings(headers))
        data = response.data
        if isinstance(data, bytes):
            data = data.decode("utf-8")
        try:
            answer: KubeObject = json.loads(data) if data else {}
            return answer
        except ValueError:
            raise K8sError(
                self._scrub(f"the API server at {self.host} answered {verb} {what} with a non-JSON body")
            ) from None

    @staticmethod
    def _what(kind: str, name: Optional[str] = None, namespace: Optional[str] = None) -> str:
        text = f"{kind}/{name}" if name else kind
        if namespace:
            text += f" in namespace {namespace}"
        return text

    def _namespace_for(self, resource: Any, namespace: Optional[str], kind: str) -> Optional[str]:
        if resource.namespaced:
            if not namespace:
                raise K8sError(f"{kind} is namespaced: a namespace is required", status=400)
            return namespace
        return None

    # ------------------------------------------------------------------ verbs

    @_within_timeout
    def server_version(self) -> Dict[str, Any]:
        """The ``/version`` answer (``gitVersion``, ``major``, ``minor``, ...)."""
        version = self._dyn().version or {}
        return dict(version.get("kubernetes") or {})

    @_within_timeout
    def apply(
        self,
        obj: KubeObject,
        field_manager: str = DEFAULT_FIELD_MANAGER,
        force_conflicts: bool = False,
        dry_run: bool = False,
    ) -> KubeObject:
        """Server-side apply ``obj`` (create or update); return the object the server stored (or would store)."""
        if not isinstance(obj, dict):
            raise K8sError("apply needs the object as a dict", status=400)
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        metadata = obj.get("metadata") or {}
        name = metadata.get("name")
        if not api_version or not kind or not name:
            raise K8sError("apply needs apiVersion, kind and metadata.name", status=400)
        resource = self._resource(api_version, kind)
        namespace = self._namespace_for(resource, metadata.get("namespace"), kind)
        # A string: older clients would send Python's "True"/"False".
        query = {
            "content_type": APPLY_PATCH,
            "field_manager": field_manager,
            "force_conflicts": "true" if force_conflicts else "false",
        }
        if dry_run:
            query["dry_run"] = "All"
        return self._request(
            "server-side apply",
            self._what(kind, name, namespace),
            "patch",
            resource,
            name,
            namespace,
            # Serialised here: older clients only send str/bytes bodies for non-JSON content types (JSON is YAML).
            body=json.dumps(obj),
            rbac_verb="patch",
            **query,
        )

    @_within_timeout
    def create(self, obj: KubeObject) -> KubeObject:
        """Create ``obj`` (POST, as ``kubectl create``); K8sError 409 when it exists. Return the stored object."""
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        metadata = obj.get("metadata") or {}
        if not api_version or not kind or not (metadata.get("name") or metadata.get("generateName")):
            raise K8sError("create needs apiVersion, kind and metadata.name", status=400)
        resource = self._resource(api_version, kind)
        namespace = self._namespace_for(resource, metadata.get("namespace"), kind)
        what = self._what(kind, metadata.get("name"), namespace)
        return self._request("create", what, "post", resource, None, namespace, body=obj, rbac_verb="create")

    @_within_timeout
    def get(self, api_version: str, kind: str, name: str, namespace: Optional[str] = None) -> Optional[KubeObject]:
        """The object, or None when it does not exist."""
        resource = self._resource(api_version, kind)
        namespace = self._namespace_for(resource, namespace, kind)
        try:
            return self._request("get", self._what(kind, name, namespace), "get", resource, name, namespace)
        except K8sError as exc:
            if exc.status == 404:
                return None
            raise

    @_within_timeout
    def list(
        self, api_version: str, kind: str, label_selector: LabelSelector = None, namespace: Optional[str] = None
    ) -> List[KubeObject]:
        """Every object of ``kind`` (in ``namespace`` when given), optionally filtered by a label selector."""
        resource = self._resource(api_version, kind)
        if not resource.namespaced:
            namespace = None
        query: Dict[str, str] = {}
        selector = selector_string(label_selector)
        if selector:
            query["label_selector"] = selector
        what = self._what(kind + " objects", None, namespace)
        answer = self._request("list", what, "get", resource, None, namespace, rbac_verb="list", **query)
        items: List[KubeObject] = []
        for item in answer.get("items") or []:
            item = dict(item)
            # Built-in list responses leave apiVersion and kind out of their items.
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
            items.append(item)
        return items

    @_within_timeout
    def delete(
        self, api_version: str, kind: str, name: str, namespace: Optional[str] = None, dry_run: bool = False
    ) -> bool:
        """Delete the object; False when it was already absent."""
        resource = self._resource(api_version, kind)
        namespace = self._namespace_for(resource, namespace, kind)
        query = {"dry_run": "All"} if dry_run else {}
        try:
            self._request("delete", self._what(kind, name, namespace), "delete", resource, name, namespace, **query)
        except K8sError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    @_within_timeout
    def patch_merge(
        self,
        api_version: str,
        kind: str,
        name: str,
        patch: KubeObject,
        namespace: Optional[str] = None,
        dry_run: bool = False,
        field_manager: str = DEFAULT_FIELD_MANAGER,
    ) -> KubeObject:
        """JSON merge patch (RFC 7386; ``None`` removes a key), e.g. ``{"metadata": {"annotations": {...}}}``."""
        if not isinstance(patch, dict):
            raise K8sError("patch_merge needs the patch as a dict", status=400)
        resource = self._resource(api_version, kind)
        namespace = self._namespace_for(resource, namespace, kind)
        query = {"content_type": MERGE_PATCH, "field_manager": field_manager}
        if dry_run:
            query["dry_run"] = "All"
        return self._request(
            "patch", self._what(kind, name, namespace), "patch", resource, name, namespace, body=patch, **query
        )

    def annotate(
        self,
        api_version: str,
        kind: str,
        name: str,
        annotations: Mapping[str, Optional[str]],
        namespace: Optional[str] = None,
        dry_run: bool = False,
        field_manager: str = DEFAULT_FIELD_MANAGER,
        resource_version: Optional[str] = None,
    ) -> KubeObject:
        """Set (value) or remove (None) annotations with a merge patch; return the patched object.

        With ``resource_version`` the patch applies only to that version of the object: K8sError status 409 when
        it changed since it was read (another writer), so the caller can read it again instead of overwriting.
        """
        metadata: KubeObject = {"annotations": dict(annotations)}
        if resource_version is not None:
            metadata["resourceVersion"] = str(resource_version)
        return self.patch_merge(
            api_version,
            kind,
            name,
            {"metadata": metadata},
            namespace=namespace,
            dry_run=dry_run,
            field_manager=field_manager,
        )
