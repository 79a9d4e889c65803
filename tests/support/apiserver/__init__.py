# Copyright (c) pinned.images contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

"""A fake Kubernetes API server for tests: it stands in for kube-apiserver, which cannot be installed here.

It is a real HTTP (optionally HTTPS) server on 127.0.0.1 that the official ``kubernetes`` Python client talks to
unchanged, so every request goes through the client's real serialisation, auth headers, TLS and error handling.

What it implements (enough of the API for the collection's modules):

* discovery: ``/version``, ``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>``, ``/apis/<group>/<version>`` (the
  client's ``DynamicClient`` reads ``/version``, ``/apis`` and the group-version lists; no OpenAPI document is needed);
* kinds: ``machineconfiguration.openshift.io/v1`` PinnedImageSet, MachineConfig, MachineConfigPool (status
  subresource), MachineConfigNode (status subresource), ``operator.openshift.io/v1`` MachineConfiguration (status
  subresource; the MCO's part of it, the object and its controller, is ``support.apiserver.mco``) and core ``v1``
  Node, all cluster-scoped; and core ``v1`` Pod, namespaced, with watch, ``deletecollection``, owner garbage
  collection, test-driven status and admission, and the ``pods/exec`` subresource over WebSocket, which runs the
  command on this machine (``support.apiserver.pods`` and ``support.apiserver.podexec`` say what exactly; namespaces
  are served for get and list only);
* GET (one object, 404 when absent), LIST with ``labelSelector`` (``a=b``, ``a!=b``, ``a``, ``!a``, ``in``, ``notin``)
  and ``fieldSelector`` on ``metadata.name``/``metadata.namespace`` (other fields: 400 ``field label not supported``,
  as for the kinds here on a real server);
* server-side apply (PATCH ``application/apply-patch+yaml``): create or merge, ``managedFields`` per field manager
  computed from the CRD schema (``x-kubernetes-list-type: map`` lists merge per key, other lists are atomic),
  removal of fields a manager stopped applying, 409 ``FieldManagerConflict`` when another manager owns a field whose
  value would change (unless ``force=true``), ``fieldManager`` required, ``dryRun=All`` stores nothing, a no-op apply
  keeps ``resourceVersion``;
* JSON merge patch (``application/merge-patch+json``; strategic merge patch is treated as merge patch for Node and
  refused with 415 for custom resources, as kube-apiserver does) and JSON patch (``application/json-patch+json``,
  RFC 6902), recorded as an ``Update`` managed-fields entry;
* create (POST; 409 ``AlreadyExists``) and replace (PUT; custom resources need ``metadata.resourceVersion``);
* ``metadata.resourceVersion`` in an apply, patch or replace body is a precondition: a stale one answers 409
  ``Conflict`` "the object has been modified; please apply your changes to the latest version and try again";
* DELETE (200 with a ``Status``, 404 when absent, ``dryRun=All`` in the query or in the ``DeleteOptions`` body,
  ``preconditions`` on ``resourceVersion``/``uid`` answering 409);
* validation of PinnedImageSet and MachineConfig (and the other CRDs) against the CRD ``openAPIV3Schema`` with
  jsonschema, plus the two CEL rules of ``pinnedImages[].name`` and those of MachineConfiguration's node disruption
  policy actions written out by hand, list-map key uniqueness,
  ``metadata.name`` and label syntax; failures answer 422 ``Invalid`` with ``details.causes`` like the real server
  (``Too many: 501: must have at most 500 items`` with reason ``FieldValueTooMany``, ``Too long``, ``Required value``,
  ...), never writing the rejected value out whole;
* unknown fields are pruned with a ``Warning`` header (``fieldValidation`` Warn, the default), or refused with 400
  (``fieldValidation=Strict``);
* authentication: bearer token (401 for a missing or wrong token) and, over HTTPS, client certificates signed by the
  fixture's CA; authorisation: 403 ``Forbidden`` for verbs/resources switched off with :meth:`FakeApiServer.forbid`
  (optionally in one namespace, and for ``pods/exec``), worded as RBAC words it (``User "<user>" cannot <verb>
  resource "<resource>" in API group "<group>" at the cluster scope`` or ``in the namespace "<ns>"``); the user is
  ``token-user`` for the bearer token, the certificate's CN over TLS; a server-side apply that creates an object
  also needs the ``create`` verb.

Discovery advertises exactly the verbs served: ``create``, ``delete``, ``get``, ``list``, ``patch``, ``update`` for
the cluster-scoped kinds; ``create``, ``delete``, ``deletecollection``, ``get``, ``list``, ``patch``, ``watch`` for pods.
What it does not implement (and does not advertise): watches and ``deletecollection`` but for pods, subresources
(``status``; for pods all but ``exec``), namespaced kinds but Pod, update (PUT) of pods, other CEL rules,
admission but the pod hooks, finalizers, pagination, Table answers but for pods (``kubectl get`` of other kinds
prints NAME and AGE only),
OpenAPI documents (kubectl needs ``--validate=false``), aggregated discovery (kubectl falls back to the legacy
documents).

Test hooks: :meth:`FakeApiServer.hold` never answers some requests (a hanging server), :meth:`FakeApiServer.on_request`
runs code before a request is handled (a concurrent writer).

Tests seed objects with :meth:`FakeApiServer.add` and read them back with :meth:`FakeApiServer.get` or the
``objects`` dict (keyed by ``(kind, name)``); pods live in ``server.pods`` (a ``PodStore``: ``add``, ``get``,
``objects`` keyed by ``(namespace, name)``, and the ``behaviour`` hook). ``requests`` records every request (method,
path, query, content type, parsed body, authenticated user; for ``pods/exec`` also the ``upgrade`` header, the
``subprotocols`` offered, the ``subprotocol`` chosen and the ``command``).


Modules: ``schema`` (kinds from the CRDs, schema conversion, pruning, apply merges, patches, selectors),
``api`` (``FakeApiServer``: the objects, authorisation, validation, the request handling), ``pods`` (pods,
namespaces, ``PodBehaviour``, watches), ``podexec`` (``pods/exec``; its WebSocket framing is ``support.websocket``),
``httpd`` (the HTTP server around it), ``mco`` (the machine-config-operator's MachineConfiguration) and ``fixtures``
(the pytest fixtures ``fake_apiserver``, ``fake_apiserver_tls``, ``crd_schemas``, ``silent_listener``).
"""
