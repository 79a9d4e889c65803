# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""Core v1 Pods (namespaced) in the fake API server, and what a test decides about each pod.

Served under ``/api/v1/namespaces/<ns>/pods`` (and ``/api/v1/pods`` for a list or watch across namespaces):

* create (POST): ``metadata.name`` or ``generateName``; defaults a real server fills (``uid``, ``resourceVersion``,
  ``creationTimestamp``, ``namespace``; ``restartPolicy``, ``dnsPolicy``, ``schedulerName``, ``serviceAccountName``,
  ``terminationGracePeriodSeconds``, per container ``imagePullPolicy`` and ``terminationMessage*``); ``status`` is
  ``{phase: Pending, qosClass: BestEffort}`` in the answer, whatever the body says. 409 ``AlreadyExists``, 422
  ``Invalid`` without containers, container name or image, 400 when the body's namespace is not the URL's.
  Every namespace exists unless ``PodStore.namespaces`` is a set of names: then a create elsewhere answers 404
  ``namespaces "x" not found``, as does a GET of ``/api/v1/namespaces/x`` (kubectl reads the namespace after a 404);
  namespaces are served for get and list only, ``Active`` and without labels.
* get, list (as a ``meta.k8s.io/v1`` Table when kubectl asks: NAME, READY, STATUS with the waiting reason,
  RESTARTS, AGE, and for ``-o wide`` IP, NODE); ``labelSelector``; ``fieldSelector`` on the fields a real server
  selects pods by: ``metadata.name``, ``metadata.namespace``, ``spec.nodeName`` (or ``spec.host``),
  ``spec.restartPolicy``, ``spec.schedulerName``, ``spec.serviceAccountName``, ``spec.hostNetwork``,
  ``status.phase``, ``status.podIP``, ``status.nominatedNodeName``; others 400 ``field label not supported:
  <label>``;
* watch (``watch=true``, as ``kubectl wait`` and ``kubernetes.watch`` use): a chunked stream of ``ADDED``,
  ``MODIFIED``, ``DELETED`` events after ``resourceVersion`` (all current pods as ``ADDED`` when it is empty or
  ``0``), ending after ``timeoutSeconds``; as from the watch cache, a pod that comes into the selectors' selection
  is ``ADDED`` and one that leaves it ``DELETED``; no bookmarks, no ``410 Gone`` (every event is kept);
* delete: the answer is the Pod (pods return the deleted object) with ``deletionTimestamp`` set;
  ``gracePeriodSeconds`` (query or ``DeleteOptions``) and ``propagationPolicy`` (``Orphan``, ``Background``,
  ``Foreground``; others 422 ``Invalid``, before the pod is looked up, as handlers/delete.go validates first) are
  accepted. A scheduled pod stays, terminating, for
  ``min(grace, PodStore.termination_seconds)`` (default 0 s) and then goes (a ``DELETED`` event); an unscheduled pod
  goes at once. ``deletecollection`` (DELETE on the collection, with ``labelSelector``/``fieldSelector``) too;
* patch (JSON merge patch, JSON patch; a strategic merge patch is applied as a JSON merge patch, right for
  metadata, wrong for lists in the spec): ``metadata`` (labels, annotations, ownerReferences) changes; ``status``
  stays the "kubelet's"; a spec change other than container images or ``activeDeadlineSeconds`` answers 422 with
  the start of the real message (``pod updates may not change fields other than ...``, without its diff). A
  ``resourceVersion`` in the patch is a precondition (409). No update (PUT) and no ``status`` subresource;
* ``ownerReferences`` are kept as given. Garbage collection: when an object (any kind, this server's) whose ``uid``
  a pod names as owner is deleted, the pod goes too unless another of its owners still exists (then the reference
  is dropped), as the garbage collector does for ``Background`` deletion; an owner deleted with ``Orphan`` leaves its
  pods, without the reference. Pods whose owner never existed are *not* collected (a real cluster would collect
  them).

What happens to a created pod is decided by ``PodStore.behaviour`` (``server.pods.behaviour``), a function of the
created pod (a dict) returning a :class:`PodBehaviour`; the default starts every pod at once. There is no
scheduler: a pod without ``spec.nodeName`` stays ``Pending`` whatever its behaviour. A behaviour is one of

* :meth:`PodBehaviour.running`: ``Running`` with ``Ready``/``ContainersReady`` true and ``containerStatuses``
  running, after ``delay`` seconds (a ``MODIFIED`` event);
* :meth:`PodBehaviour.waiting`: stays ``Pending`` with each container ``waiting`` (``ErrImagePull`` by default,
  ``ImagePullBackOff`` or any reason, with a message), ``Ready`` false with reason ``ContainersNotReady``;
* :meth:`PodBehaviour.forbidden_by_pod_security` / :meth:`PodBehaviour.forbidden_by_scc`: the create is refused
  with the 403 of the Pod Security admission plugin or OpenShift's SCC admission, nothing stored.

A running pod's behaviour also says how ``pods/exec`` runs a command "in" it (``exec_prefix``, ``env``, ``cwd``;
see ``support.apiserver.podexec``). Tests read pods with ``server.pods.get(ns, name)`` or ``server.pods.objects``
(keyed by ``(namespace, name)``), seed them with ``server.pods.add(obj)``, change a pod's status as its kubelet
would with ``server.pods.set_status(ns, name, status)``, and keep deleted pods terminating for a while with
``server.pods.termination_seconds``.
"""

from __future__ import annotations

import copy
import datetime
import json
import os
import re
import secrets
import signal
import threading
import time
import uuid
from dataclasses import dataclass

from support.apiserver.schema import _DNS_SUBDOMAIN_RE, ApiError, _json_patch, _merge_patch, _now, _parse_selector

# The PATH of a container's process when the image sets none (containerd's and CRI-O's default).
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_POD_FIELDS = {
    "metadata.name": lambda p: p["metadata"].get("name"),
    "metadata.namespace": lambda p: p["metadata"].get("namespace"),
    "spec.nodeName": lambda p: (p.get("spec") or {}).get("nodeName"),
    "spec.serviceAccountName": lambda p: (p.get("spec") or {}).get("serviceAccountName"),
    "spec.hostNetwork": lambda p: "true" if (p.get("spec") or {}).get("hostNetwork") else "false",
    "status.phase": lambda p: (p.get("status") or {}).get("phase"),
    "spec.restartPolicy": lambda p: (p.get("spec") or {}).get("restartPolicy"),
    "spec.schedulerName": lambda p: (p.get("spec") or {}).get("schedulerName"),
    "status.podIP": lambda p: (p.get("status") or {}).get("podIP"),
    "status.nominatedNodeName": lambda p: (p.get("status") or {}).get("nominatedNodeName"),
    # Old clients' name for spec.nodeName.
    "spec.host": lambda p: (p.get("spec") or {}).get("nodeName"),
}


@dataclass
class PodBehaviour:
    """What the fake's "kubelet" and admission do with a created pod. Build one with the class methods."""

    outcome: str = "running"
    delay: float = 0.0
    reason: str = ""
    message: str = ""
    exec_prefix: tuple = ()
    env: dict | None = None
    cwd: str | None = None

    @classmethod
    def running(cls, delay=0.0, exec_prefix=(), env=None, cwd=None):
        """Running and Ready after ``delay`` s; ``pods/exec`` runs ``exec_prefix + command`` with ``env`` (default
        ``PATH`` and ``HOME`` only) in ``cwd`` (default ``/``) on this machine."""
        return cls("running", delay, exec_prefix=tuple(exec_prefix), env=env, cwd=cwd)

    @classmethod
    def waiting(cls, reason="ErrImagePull", message=None, delay=0.0):
        """Stays Pending; each container ``waiting`` with ``reason`` and ``message`` after ``delay`` s."""
        return cls("waiting", delay, reason=reason, message=message or "")

    @classmethod
    def forbidden_by_pod_security(cls, violations, level="restricted:latest"):
        """Refused at create as the PodSecurity admission plugin does: ``violations`` is the list of its check
        results, e.g. ``['privileged (container "c" must not set securityContext.privileged=true)']``."""
        # kubernetes staging/src/k8s.io/pod-security-admission/admission/admission.go: forbiddenResponse of
        # fmt.Errorf("violates PodSecurity %q: %s", level, result.ForbiddenDetail()), which joins "reason (detail)"
        # with ", "; admission.NewForbidden prefixes 'pods "<name>" is forbidden: '.
        return cls("forbidden", message=f'violates PodSecurity "{level}": {", ".join(violations)}')

    @classmethod
    def forbidden_by_scc(cls, errors):
        """Refused at create as OpenShift's SCC admission does: ``errors`` are its per-provider field errors, e.g.
        ``['provider "privileged": Forbidden: not usable by user or serviceaccount']``."""
        # openshift/apiserver-library-go sccadmission: "unable to validate against any security context constraint:
        # %v" of validationErrs.ToAggregate(); an aggregate (apimachinery util/errors) drops repeats and shows one
        # error bare, several as "[a, b]".
        unique = list(dict.fromkeys(errors))
        text = unique[0] if len(unique) == 1 else f"[{', '.join(unique)}]"
        return cls("forbidden", message=f"unable to validate against any security context constraint: {text}")


def _repository(image):
    """The image reference without tag or digest (a registry's port stays)."""
    name = image.split("@", maxsplit=1)[0]
    head, _colon, tag = name.rpartition(":")
    return head if head and "/" not in tag else name


def _default_behaviour(_pod):
    return PodBehaviour.running()


class PodStore:
    """The pods of one :class:`~support.apiserver.api.FakeApiServer` (``server.pods``)."""

    def __init__(self, api):
        self.api = api
        self.objects = {}
        self.behaviour = _default_behaviour
        # How long a scheduled pod stays terminating after a graceful delete (capped by its grace period).
        self.termination_seconds = 0.0
        # None: every namespace exists; a set: only these.
        self.namespaces = None
        self._behaviours = {}
        self._events = []  # (resourceVersion int, type, object)
        self._changed = threading.Condition()
        self._timers = []
        self.stopped = False
        # pods/exec processes still running, all and by pod uid; stop() and a pod's removal kill them.
        self.processes = set()
        self.pod_processes = {}

    # ------------------------------------------------------------ test helpers

    def add(self, obj, behaviour=None):
        """Seed a pod (defaults filled, stored as given, status included); ``behaviour`` for its exec."""
        obj = copy.deepcopy(obj)
        with self.api._lock:
            meta = obj.setdefault("metadata", {})
            meta.setdefault("namespace", "default")
            self._fill_defaults(obj)
            obj.setdefault("status", {"phase": "Pending", "qosClass": "BestEffort"})
            self._behaviours[(meta["namespace"], meta["name"])] = behaviour or PodBehaviour.running()
            self._put(obj, "ADDED")
        return copy.deepcopy(obj)

    def get(self, namespace, name):
        with self.api._lock:
            obj = self.objects.get((namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def behaviour_of(self, namespace, name):
        """The pod's behaviour; a pod put straight into ``objects`` behaves as the default running one."""
        with self.api._lock:
            return self._behaviours.get((namespace, name)) or PodBehaviour.running()

    def home(self):
        """The HOME of exec'd commands without a behaviour ``env``: under the server's ``tmp_path``, never ``~``."""
        path = self.api.tmp_path / "pod-home"
        path.mkdir(parents=True, exist_ok=True)
        return str(path)

    def set_status(self, namespace, name, status):
        """Replace a pod's status (as its kubelet would), e.g. to make a running pod fail."""
        with self.api._lock:
            obj = copy.deepcopy(self.objects[(namespace, name)])
            obj["status"] = copy.deepcopy(status)
            self._put(obj, "MODIFIED")

    def stop(self):
        with self.api._lock:
            self.stopped = True
            timers, self._timers = self._timers, []
            processes = list(self.processes)
        for timer in timers:
            timer.cancel()
        for process in processes:
            kill_group(process)
        with self._changed:
            self._changed.notify_all()

    # ------------------------------------------------------------ storage and events

    def _put(self, obj, event):
        obj["metadata"]["resourceVersion"] = self.api._next_rv()
        key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
        if event == "DELETED":
            self.objects.pop(key, None)
            self._behaviours.pop(key, None)
            for process in self.pod_processes.pop(obj["metadata"]["uid"], set()):
                kill_group(process)
        else:
            self.objects[key] = obj
        with self._changed:
            self._events.append((int(obj["metadata"]["resourceVersion"]), event, copy.deepcopy(obj)))
            self._changed.notify_all()

    def _later(self, delay, function, *args):
        def run():
            with self.api._lock:
                if timer in self._timers:
                    self._timers.remove(timer)
                if not self.stopped:
                    function(*args)

        if self.stopped:
            return
        timer = threading.Timer(max(delay, 0.0), run)
        timer.daemon = True
        self._timers.append(timer)
        timer.start()

    def _fill_defaults(self, obj):
        meta = obj["metadata"]
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", _now())
        spec = obj.setdefault("spec", {})
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("serviceAccountName", spec.get("serviceAccount") or "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("securityContext", {})
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("priority", 0)
        for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            if not isinstance(container, dict):
                continue
            image = str(container.get("image") or "")
            tag = image.rsplit("/", 1)[-1]
            latest = "@" not in image and (":" not in tag or tag.endswith(":latest"))
            container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})

    # ------------------------------------------------------------ status transitions

    @staticmethod
    def _condition(kind, status, now, reason=None, message=None):
        condition = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": now}
        if reason:
            condition["reason"] = reason
        if message:
            condition["message"] = message
        return condition

    def _start(self, key, uid, behaviour):
        obj = self.objects.get(key)
        if obj is None or obj["metadata"]["uid"] != uid or obj["metadata"].get("deletionTimestamp"):
            return
        if not obj["spec"].get("nodeName"):
            # No scheduler here: an unscheduled pod stays Pending.
            return
        obj = copy.deepcopy(obj)
        now = _now()
        containers = obj["spec"].get("containers") or []
        names = [c["name"] for c in containers]
        status = {
            "phase": "Pending",
            "hostIP": "10.0.0.10",
            "hostIPs": [{"ip": "10.0.0.10"}],
            "startTime": now,
            "qosClass": obj.get("status", {}).get("qosClass", "BestEffort"),
        }
        if behaviour.outcome == "running":
            if not obj["spec"].get("hostNetwork"):
                status.update(podIP="10.128.0.20", podIPs=[{"ip": "10.128.0.20"}])
            else:
                status.update(podIP="10.0.0.10", podIPs=[{"ip": "10.0.0.10"}])
            status["phase"] = "Running"
            status["conditions"] = [
                self._condition(kind, "True", now)
                for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
            ]
            status["containerStatuses"] = [
                {
                    "name": c["name"],
                    "image": c.get("image"),
                    "imageID": f"{_repository(str(c.get('image')))}@sha256:{'0' * 64}",
                    "containerID": f"containerd://{secrets.token_hex(32)}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                    "lastState": {},
                }
                for c in containers
            ]
        else:
            unready = f"containers with unready status: [{' '.join(names)}]"
            status["conditions"] = [
                self._condition("PodReadyToStartContainers", "True", now),
                self._condition("Initialized", "True", now),
                self._condition("Ready", "False", now, "ContainersNotReady", unready),
                self._condition("ContainersReady", "False", now, "ContainersNotReady", unready),
                self._condition("PodScheduled", "True", now),
            ]
            waiting = {"reason": behaviour.reason}
            if behaviour.message:
                waiting["message"] = behaviour.message
            status["containerStatuses"] = [
                {
                    "name": c["name"],
                    "image": c.get("image"),
                    "imageID": "",
                    "ready": False,
                    "started": False,
                    "restartCount": 0,
                    "state": {"waiting": dict(waiting)},
                    "lastState": {},
                }
                for c in containers
            ]
        obj["status"] = status
        self._put(obj, "MODIFIED")

    # ------------------------------------------------------------ request handling

    def authorize(self, user, verb, resource, namespace, name=None):
        """403 as RBAC answers when ``server.forbid(verb, resource[, namespace])`` denied it."""
        forbidden = self.api.forbidden
        for v in (verb, "*"):
            for r in (resource, "*"):
                # A request across namespaces needs a cluster-wide grant, which a namespaced denial rules out too.
                scoped = (v, r, namespace) in forbidden or (
                    namespace is None and any(len(f) == 3 and f[:2] == (v, r) for f in forbidden)
                )
                if (v, r) in forbidden or scoped:
                    target = f'pods "{name}" is forbidden' if name else "pods is forbidden"
                    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
                    details = {"kind": "pods"}
                    if name:
                        details = {"name": name, "kind": "pods"}
                    raise ApiError(
                        403,
                        "Forbidden",
                        f'{target}: User "{user}" cannot {verb} resource "{resource}" in API group "" {where}',
                        details,
                    )

    def namespace_exists(self, name):
        return self.namespaces is None or name in self.namespaces

    def handle_namespace(self, method, name, user):
        """GET of one namespace or the list (the only verbs served for namespaces)."""
        if method != "GET":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

        def namespace(ns):
            return {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns, "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, ns)), "resourceVersion": "1"},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }

        if name is None:
            self._authorize_cluster(user, "list", "namespaces")
            names = sorted(
                self.namespaces if self.namespaces is not None else {"default"} | {k[0] for k in self.objects}
            )
            items = [namespace(n) for n in names]
            for item in items:
                del item["apiVersion"], item["kind"]
            return (
                200,
                {
                    "kind": "NamespaceList",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": str(self.api._rv)},
                    "items": items,
                },
                [],
            )
        self._authorize_cluster(user, "get", "namespaces", name)
        if not self.namespace_exists(name):
            raise self._namespace_not_found(name)
        return 200, namespace(name), []

    @staticmethod
    def _namespace_not_found(name):
        return ApiError(404, "NotFound", f'namespaces "{name}" not found', {"name": name, "kind": "namespaces"})

    def _authorize_cluster(self, user, verb, resource, name=None):
        for v in (verb, "*"):
            for r in (resource, "*"):
                if (v, r) in self.api.forbidden:
                    target = f'{resource} "{name}" is forbidden' if name else f"{resource} is forbidden"
                    raise ApiError(
                        403,
                        "Forbidden",
                        f'{target}: User "{user}" cannot {verb} resource "{resource}" in API group "" at the cluster scope',
                        {"name": name, "kind": resource} if name else {"kind": resource},
                    )

    def not_found(self, name):
        return ApiError(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})

    def handle(self, method, namespace, name, query, body, user, content_type=None):
        """Return (status, body or :class:`WatchStream`, warnings) for a pods URL (``name`` None: the collection)."""
        watch = query.get("watch") in ("1", "t", "T", "TRUE", "true", "True")
        if method == "GET" and name is None:
            self.authorize(user, "watch" if watch else "list", "pods", namespace)
            predicates = self._predicates(query)
            if watch:
                return 200, self._watch(namespace, predicates, query), []
            return 200, self._list(namespace, predicates), []
        if namespace is None:
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        if method == "POST" and name is None:
            self.authorize(user, "create", "pods", namespace)
            return 201, self._create(namespace, body, query), []
        if method == "GET":
            self.authorize(user, "get", "pods", namespace, name)
            obj = self.objects.get((namespace, name))
            if obj is None:
                raise self.not_found(name)
            return 200, copy.deepcopy(obj), []
        if method == "PATCH" and name:
            self.authorize(user, "patch", "pods", namespace, name)
            return 200, self._patch((namespace, name), body, content_type, query), []
        if method == "DELETE" and name is None:
            self.authorize(user, "deletecollection", "pods", namespace)
            options = self._delete_options(query, body)
            items = self._list(namespace, self._predicates(query))
            # As deleted (deletionTimestamp set), as the real deletecollection answers.
            items["items"] = [
                self._full(self._delete((namespace, item["metadata"]["name"]), options)) for item in items["items"]
            ]
            return 200, items, []
        if method == "DELETE":
            self.authorize(user, "delete", "pods", namespace, name)
            # handlers/delete.go validates the options before the store looks the object up.
            options = self._delete_options(query, body)
            key = (namespace, name)
            if key not in self.objects:
                raise self.not_found(name)
            return 200, self._delete(key, options), []
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def _patch(self, key, body, content_type, query):
        live = self.objects.get(key)
        if live is None:
            raise self.not_found(key[1])
        ctype = (content_type or "").split(";")[0].strip().lower()
        if ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "the merge patch is not an object")
            result = _merge_patch(live, body)
        elif ctype == "application/json-patch+json":
            try:
                result = _json_patch(live, body)
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                raise ApiError(
                    422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
                ) from exc
        else:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json",
            )
        meta = result.get("metadata") if isinstance(result.get("metadata"), dict) else {}
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv is not None and str(wanted_rv) != live["metadata"]["resourceVersion"]:
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods "{key[1]}": the object has been modified; please apply your '
                "changes to the latest version and try again",
                {"name": key[1], "kind": "pods"},
            )
        for field_name in (
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ):
            if field_name in live["metadata"]:
                meta[field_name] = live["metadata"][field_name]
            else:
                meta.pop(field_name, None)
        result["metadata"] = meta
        # status is the kubelet's (the status subresource is not served), spec mostly immutable.
        result["status"] = copy.deepcopy(live.get("status"))

        def mutable_removed(spec):
            spec = copy.deepcopy(spec or {})
            for group in ("containers", "initContainers"):
                for container in spec.get(group) or []:
                    if isinstance(container, dict):
                        container.pop("image", None)
            spec.pop("activeDeadlineSeconds", None)
            return spec

        if mutable_removed(result.get("spec")) != mutable_removed(live.get("spec")):
            raise ApiError(
                422,
                "Invalid",
                f'Pod "{key[1]}" is invalid: spec: Forbidden: pod updates may not change fields other than '
                "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
                "`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
                "(allow it to be set to 1 if it was previously negative)",
                {"name": key[1], "kind": "Pod", "causes": [{"reason": "FieldValueForbidden", "field": "spec"}]},
            )
        if query.get("dryRun") == "All":
            return result
        if result == live:
            return copy.deepcopy(live)
        self._put(result, "MODIFIED")
        return copy.deepcopy(result)

    @staticmethod
    def _full(item):
        item = copy.deepcopy(item)
        item.pop("apiVersion", None)
        item.pop("kind", None)
        return item

    def _predicates(self, query):
        predicates = []
        selector = query.get("labelSelector")
        if selector:
            labels = _parse_selector(selector)
            predicates.append(lambda p: all(f((p["metadata"].get("labels") or {})) for f in labels))
        text = query.get("fieldSelector") or ""
        for term in filter(None, (t.strip() for t in text.split(","))):
            match = re.fullmatch(r"([^=!]+?)\s*(!=|==|=)\s*(.*)", term)
            if not match:
                raise ApiError(400, "BadRequest", f"invalid selector: '{text}'; can't understand '{term}'")
            label, operator, value = match.groups()
            if label not in _POD_FIELDS:
                # pkg/apis/core/v1/conversion.go, the Pod field label conversion.
                raise ApiError(400, "BadRequest", f"field label not supported: {label}")

            def predicate(pod, get=_POD_FIELDS[label], operator=operator, value=value):
                actual = get(pod) or ""
                return (actual != value) if operator == "!=" else (actual == value)

            predicates.append(predicate)
        return predicates

    def _list(self, namespace, predicates):
        items = []
        for (ns, _name), obj in sorted(self.objects.items()):
            if namespace in (None, ns) and all(p(obj) for p in predicates):
                item = copy.deepcopy(obj)
                # Built-in list responses leave apiVersion and kind out of the items.
                item.pop("apiVersion", None)
                item.pop("kind", None)
                items.append(item)
        return {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(self.api._rv)},
            "items": items,
        }

    def _create(self, namespace, body, query):
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "the request body is not an object")
        if body.get("apiVersion", "v1") != "v1" or body.get("kind", "Pod") != "Pod":
            raise ApiError(
                400,
                "BadRequest",
                f"the object has apiVersion {body.get('apiVersion')!r} and kind {body.get('kind')!r}; "
                "this endpoint serves v1 Pod",
            )
        if not self.namespace_exists(namespace):
            raise self._namespace_not_found(namespace)
        obj = copy.deepcopy(body)
        obj["apiVersion"], obj["kind"] = "v1", "Pod"
        meta = obj.setdefault("metadata", {})
        if meta.get("namespace", namespace) != namespace:
            raise ApiError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the request",
            )
        for key in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "generation", "managedFields"):
            meta.pop(key, None)
        meta["namespace"] = namespace
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _position in range(5)
            )
        name = meta.get("name") or ""
        self._validate(name, obj)
        self._fill_defaults(obj)
        behaviour = self.behaviour(copy.deepcopy(obj))
        # Validating admission (PodSecurity, SCC) runs before storage, so it answers before AlreadyExists would.
        if behaviour.outcome == "forbidden":
            raise ApiError(
                403, "Forbidden", f'pods "{name}" is forbidden: {behaviour.message}', {"name": name, "kind": "pods"}
            )
        if (namespace, name) in self.objects:
            raise ApiError(409, "AlreadyExists", f'pods "{name}" already exists', {"name": name, "kind": "pods"})
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        if query.get("dryRun") == "All":
            meta.pop("resourceVersion", None)
            return obj
        self._behaviours[(namespace, name)] = behaviour
        self._put(obj, "ADDED")
        self._later(behaviour.delay, self._start, (namespace, name), meta["uid"], behaviour)
        return copy.deepcopy(obj)

    @staticmethod
    def _validate(name, obj):
        causes = []
        if not name:
            causes.append(("metadata.name", "Required value: name or generateName is required"))
        elif not _DNS_SUBDOMAIN_RE.match(name) or len(name) > 253:
            causes.append(
                (
                    "metadata.name",
                    f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
                    "characters, '-' or '.', and must start and end with an alphanumeric character",
                )
            )
        containers = (obj.get("spec") or {}).get("containers")
        if not containers or not isinstance(containers, list):
            causes.append(("spec.containers", "Required value"))
        else:
            for index, container in enumerate(containers):
                container = container if isinstance(container, dict) else {}
                if not container.get("name"):
                    causes.append((f"spec.containers[{index}].name", "Required value"))
                if not container.get("image"):
                    causes.append((f"spec.containers[{index}].image", "Required value"))
        if causes:
            message = ", ".join(f"{f}: {m}" for f, m in causes)
            raise ApiError(
                422,
                "Invalid",
                f'Pod "{name}" is invalid: {message if len(causes) == 1 else "[" + message + "]"}',
                {
                    "name": name,
                    "kind": "Pod",
                    "causes": [
                        {
                            "reason": "FieldValueRequired" if m.startswith("Required") else "FieldValueInvalid",
                            "message": m,
                            "field": f,
                        }
                        for f, m in causes
                    ],
                },
            )

    @staticmethod
    def _delete_options(query, body):
        options = dict(body) if isinstance(body, dict) else {}
        if "gracePeriodSeconds" in query:
            options["gracePeriodSeconds"] = query["gracePeriodSeconds"]
        if "propagationPolicy" in query:
            options["propagationPolicy"] = query["propagationPolicy"]
        if query.get("dryRun") == "All":
            options["dryRun"] = ["All"]
        policy = options.get("propagationPolicy")
        if policy not in (None, "Orphan", "Background", "Foreground"):
            # apiserver handlers/delete.go: errors.NewInvalid(GroupKind{meta.k8s.io, DeleteOptions}, "", errs) of
            # ValidateDeleteOptions' field.NotSupported.
            cause = f'Unsupported value: "{policy}": supported values: "Foreground", "Background", "Orphan", "nil"'
            raise ApiError(
                422,
                "Invalid",
                f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: {cause}',
                {
                    "group": "meta.k8s.io",
                    "kind": "DeleteOptions",
                    "causes": [{"reason": "FieldValueNotSupported", "message": cause, "field": "propagationPolicy"}],
                },
            )
        grace = options.get("gracePeriodSeconds")
        if grace is not None:
            try:
                options["gracePeriodSeconds"] = int(grace)
            except (TypeError, ValueError) as exc:
                raise ApiError(400, "BadRequest", f"invalid gracePeriodSeconds: {grace!r}") from exc
        return options

    def _delete(self, key, options):
        obj = copy.deepcopy(self.objects[key])
        if "All" in (options.get("dryRun") or []):
            return obj
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = obj["spec"].get("terminationGracePeriodSeconds", 30)
        grace = max(int(grace), 0)
        finished = (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp"):
            meta["deletionTimestamp"] = _now()
            meta["deletionGracePeriodSeconds"] = grace
        stay = min(grace, self.termination_seconds)
        if obj["spec"].get("nodeName") and not finished and stay > 0:
            self._put(obj, "MODIFIED")
            self._later(stay, self._remove, key, meta["uid"], options.get("propagationPolicy"))
            return copy.deepcopy(obj)
        self._put(obj, "DELETED")
        self.api.collect_dependents(meta["uid"], options.get("propagationPolicy"))
        return copy.deepcopy(obj)

    def _remove(self, key, uid, policy=None):
        obj = self.objects.get(key)
        if obj is not None and obj["metadata"]["uid"] == uid:
            self._put(copy.deepcopy(obj), "DELETED")
            self.api.collect_dependents(uid, policy)

    def collect(self, uid, exists, policy=None):
        """The garbage collector's part for pods: ``uid`` was deleted with ``policy`` (``Orphan``: its dependents
        stay, without the reference); ``exists(uid)`` says whether an owner lives."""
        for key, obj in list(self.objects.items()):
            refs = obj["metadata"].get("ownerReferences") or []
            if not any(r.get("uid") == uid for r in refs):
                continue
            others = [r for r in refs if r.get("uid") != uid]
            if policy == "Orphan" or any(exists(r.get("uid")) for r in others):
                obj = copy.deepcopy(obj)
                obj["metadata"]["ownerReferences"] = others
                self._put(obj, "MODIFIED")
            else:
                self._delete(key, {"gracePeriodSeconds": None})

    # ------------------------------------------------------------ watch

    def _watch(self, namespace, predicates, query):
        since = query.get("resourceVersion") or ""
        timeout = float(query.get("timeoutSeconds") or 1800)
        initial = []
        if since in ("", "0"):
            initial = [
                ("ADDED", copy.deepcopy(obj))
                for (ns, _n), obj in sorted(self.objects.items())
                if namespace in (None, ns) and all(p(obj) for p in predicates)
            ]
            since = str(self.api._rv)
        return WatchStream(self, namespace, predicates, int(since), initial, time.monotonic() + timeout)


class WatchStream:
    """The events of one watch request; the HTTP server writes ``events()`` as chunked JSON lines."""

    def __init__(self, store, namespace, predicates, since, initial, deadline):
        self.store, self.namespace, self.predicates = store, namespace, predicates
        self.since, self.initial, self.deadline = since, initial, deadline

    def events(self, stopped):
        """Yield encoded events until the deadline, or until ``stopped()`` (the client left or the server stops)."""
        for kind, obj in self.initial:
            yield json.dumps({"type": kind, "object": obj}).encode() + b"\n"
        # Whether each pod is in the watcher's selection, replayed from the log: as the watch cache does, a pod that
        # enters the selection comes as ADDED and one that leaves it as DELETED.
        selected = {}
        position = 0
        while time.monotonic() < self.deadline and not stopped():
            with self.store._changed:
                pending = self.store._events[position:]
                position = len(self.store._events)
                if not pending:
                    self.store._changed.wait(min(0.5, max(self.deadline - time.monotonic(), 0)))
                    continue
            for rv, kind, obj in pending:
                key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
                was = selected.pop(key, False)
                now = self.namespace in (None, key[0]) and all(p(obj) for p in self.predicates)
                if kind != "DELETED" and now:
                    selected[key] = True
                if rv <= self.since:
                    continue
                self.since = rv
                if kind == "DELETED" or (was and not now):
                    report = "DELETED" if was else None
                else:
                    report = (kind if was else "ADDED") if now else None
                if report:
                    yield json.dumps({"type": report, "object": obj}).encode() + b"\n"


_TABLE_COLUMNS = (
    ("Name", "name", 0),
    ("Ready", "", 0),
    ("Status", "", 0),
    ("Restarts", "", 0),
    ("Age", "", 0),
    ("IP", "", 1),
    ("Node", "", 1),
    ("Nominated Node", "", 1),
    ("Readiness Gates", "", 1),
)


def _age(created):
    """kube's duration.HumanDuration, to the minute past ten minutes."""
    then = datetime.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    seconds = max(int((datetime.datetime.now(datetime.timezone.utc) - then).total_seconds()), 0)
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    return f"{minutes // 60}h"


def _row(pod):
    """The cells kube-apiserver's pod printer (pkg/printers/internalversion printPod) gives, for what pods here have."""
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    ready = restarts = 0
    for container in status.get("containerStatuses") or []:
        restarts += container.get("restartCount", 0)
        state = container.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif state.get("terminated"):
            terminated = state["terminated"]
            reason = terminated.get("reason") or f"ExitCode:{terminated.get('exitCode', 0)}"
        elif container.get("ready") and state.get("running"):
            ready += 1
    if pod["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    return [
        pod["metadata"]["name"],
        f"{ready}/{len(pod['spec'].get('containers') or [])}",
        reason,
        str(restarts),
        _age(pod["metadata"]["creationTimestamp"]),
        status.get("podIP") or "<none>",
        pod["spec"].get("nodeName") or "<none>",
        "<none>",
        "<none>",
    ]


def as_table(answer):
    """A Pod or PodList as the ``meta.k8s.io/v1`` Table kubectl asks for (``Accept: ...;as=Table;...``)."""
    pods = answer["items"] if answer.get("kind") == "PodList" else [answer]
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": answer["metadata"].get("resourceVersion", "")},
        "columnDefinitions": [
            {"name": name, "type": "string", "format": fmt, "description": "", "priority": priority}
            for name, fmt, priority in _TABLE_COLUMNS
        ],
        "rows": [
            {
                "cells": _row(pod),
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": pod["metadata"],
                },
            }
            for pod in pods
        ],
    }


def exec_environment(behaviour, home=None):
    """The environment of a command run through ``pods/exec`` in a pod with ``behaviour``; ``HOME`` is ``home``
    (the server's ``PodStore.home()``) so that nothing exec'd writes to the tester's own home."""
    if behaviour.env is not None:
        return dict(behaviour.env)
    if home is None:
        raise ValueError("exec_environment needs a home directory for a behaviour without env")
    return {"PATH": CONTAINER_PATH, "HOME": home}


def kill_group(process):
    """SIGKILL an exec'd command's process group (it runs in its own session), as the kubelet kills the container's
    cgroup: what the command started goes too, and its output pipes close."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
