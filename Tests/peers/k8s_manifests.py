"""Checks deploy/kubernetes/ offline, with no cluster: every manifest must be a Kubernetes object
that the official Python client's models (kubernetes.client.V1Job, V1Service, …) describe, with
no unknown field and no value of the wrong type, and the objects must agree with each other the
way a Stampede run on Kubernetes needs (docs/distributed.md, "On Kubernetes").

Usage: python k8s_manifests.py DIR [--rendered FILE]
  DIR        the folder holding kustomization.yaml (deploy/kubernetes)
  --rendered also check FILE, a multi-document stream such as `kubectl kustomize DIR` prints:
             the same objects, with the kustomization's namespace and images applied

stdout, on success: one JSON line, {"objects": [...], "workers": N, "port": P, "service": …,
"namespace": …, "scenario": "<the ConfigMap's scenario text>", "scenario_path": …}.
Exit 0 when every check passes; 1 with one line per problem on stderr; 2 on bad usage.
Reads only the files named; sends nothing anywhere.
"""
import json
import os
import re
import sys

import yaml
from kubernetes import client
from kubernetes.client import ApiClient

problems = []


def problem(text):
    problems.append(text)


# ---- strict shape: the models' own field names and types ------------------------------------

def model_class(api_version, kind):
    """kubernetes.client's model for an apiVersion and kind (V1Job for batch/v1 Job), or None."""
    version = api_version.split("/")[-1]
    return getattr(client, version[0].upper() + version[1:] + kind, None)


def strict(value, type_name, path):
    """Checks `value` against the client's type string: 'str', 'int', 'list[V1Container]', …"""
    if value is None:
        return
    # Both spellings of the generated clients: 'list[X]'/'dict(str, X)' and 'List[X]'/'Dict[str, X]'.
    optional = re.match(r"^Optional\[(.*)\]$", type_name)
    if optional:
        return strict(value, optional.group(1), path)
    listed = re.match(r"^[lL]ist\[(.*)\]$", type_name)
    if listed:
        if not isinstance(value, list):
            return problem(f"{path}: expected a list, found {type(value).__name__}")
        for i, item in enumerate(value):
            strict(item, listed.group(1), f"{path}[{i}]")
        return
    mapped = re.match(r"^(?:dict\(|Dict\[)[^,]*, (.*)[)\]]$", type_name)
    if mapped:
        if not isinstance(value, dict):
            return problem(f"{path}: expected a map, found {type(value).__name__}")
        for key, item in value.items():
            if not isinstance(key, str):
                problem(f"{path}: key {key!r} is not a string")
            strict(item, mapped.group(1), f"{path}.{key}")
        return
    simple = {"str": (str,), "int": (int,), "bool": (bool,), "float": (int, float), "datetime": (str,), "date": (str,), "bytes": (str,)}
    if type_name in simple:
        # YAML's `true` is a bool and `2` an int: a quoted "2" where an int is wanted, or an
        # unquoted 4 where a string is wanted (an env value), is wrong for the API server too.
        ok = isinstance(value, simple[type_name]) and not (type_name in ("int", "float") and isinstance(value, bool))
        if not ok:
            problem(f"{path}: expected {type_name}, found {type(value).__name__} {value!r}")
        return
    if type_name == "object":  # IntOrString and free-form fields
        return
    cls = getattr(client, type_name, None)
    if cls is None:
        return problem(f"{path}: the client has no model {type_name}")
    if not isinstance(value, dict):
        return problem(f"{path}: expected a {type_name} object, found {type(value).__name__}")
    fields = {json_key: attr for attr, json_key in cls.attribute_map.items()}
    for key, item in value.items():
        if key not in fields:
            problem(f"{path}: unknown field '{key}' ({type_name} has {', '.join(sorted(fields))})")
            continue
        strict(item, cls.openapi_types[fields[key]], f"{path}.{key}")


def as_model(doc, where):
    """The document as its client model (required fields and enums checked by the model's
    setters), after the strict walk; None when it is not a known Kubernetes object."""
    if not isinstance(doc, dict) or not isinstance(doc.get("apiVersion"), str) or not isinstance(doc.get("kind"), str):
        problem(f"{where}: not a Kubernetes object (apiVersion and kind missing)")
        return None
    cls = model_class(doc["apiVersion"], doc["kind"])
    if cls is None:
        problem(f"{where}: no model for {doc['apiVersion']} {doc['kind']}")
        return None
    before = len(problems)
    strict(doc, cls.__name__, f"{where} {doc['kind']}")
    if len(problems) > before:
        return None
    try:
        return ApiClient()._ApiClient__deserialize(doc, cls.__name__)
    except (ValueError, TypeError) as e:
        problem(f"{where} {doc['kind']}: {e}")
        return None


# ---- what a Stampede run needs of the objects -------------------------------------------------

def option(command, name):
    """The value after `name` in a command list, or None."""
    if name in command:
        i = command.index(name)
        return command[i + 1] if i + 1 < len(command) else None
    return None


def cpu_cores(quantity):
    if quantity is None:
        return None
    return int(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def check_run(objects, namespace, image_names):
    by_kind = {}
    for o in objects:
        by_kind.setdefault(o.kind, []).append(o)
    jobs = by_kind.get("Job", [])
    indexed = [j for j in jobs if j.spec.completion_mode == "Indexed"]
    others = [j for j in jobs if j.spec.completion_mode != "Indexed"]
    services = by_kind.get("Service", [])
    if len(indexed) != 1 or len(others) != 1 or len(services) != 1:
        problem(f"expected one Indexed Job (workers), one other Job (coordinator) and one Service; found "
                f"{len(indexed)}, {len(others)}, {len(services)}")
        return None
    workers, coordinator, service = indexed[0], others[0], services[0]

    # The workers: N shards, all at once, told N.
    n = workers.spec.completions
    if not isinstance(n, int) or n < 1 or workers.spec.parallelism != n:
        problem(f"workers: completions ({n}) and parallelism ({workers.spec.parallelism}) must be the same count")
    pod = workers.spec.template.spec
    if pod.restart_policy != "Never":
        problem(f"workers: restartPolicy {pod.restart_policy}: a restarted worker has no coordinator (want Never)")
    if len(pod.containers) != 1:
        problem("workers: one container expected")
    worker = pod.containers[0]
    command = (worker.command or []) + (worker.args or [])
    if command[:2] != ["stampede", "worker"]:
        problem(f"workers: command {command} is not `stampede worker …`")
    listen = option(command, "--listen") or ""
    m = re.match(r"^0\.0\.0\.0:(\d+)$", listen)
    if not m:
        problem(f"workers: --listen {listen!r} must be 0.0.0.0:PORT (every pod address)")
        port = None
    else:
        port = int(m.group(1))
    env = {e.name: e.value for e in worker.env or []}
    if env.get("STAMPEDE_WORKER_COUNT") != str(n):
        problem(f"workers: STAMPEDE_WORKER_COUNT {env.get('STAMPEDE_WORKER_COUNT')!r} differs from completions {n}")
    if "JOB_COMPLETION_INDEX" in env:
        problem("workers: JOB_COMPLETION_INDEX is Kubernetes' to set in an Indexed Job, not the manifest's")
    if "--index" in command or "--count" in command:
        problem("workers: --index/--count would override JOB_COMPLETION_INDEX/STAMPEDE_WORKER_COUNT")
    container_ports = {p.name: p.container_port for p in worker.ports or []}
    if port is not None and port not in container_ports.values():
        problem(f"workers: --listen port {port} is not among the container's ports {container_ports}")
    loops = option(command, "--loops")
    cpu = cpu_cores((worker.resources.requests or {}).get("cpu")) if worker.resources else None
    if loops is not None and cpu is not None and float(loops) != cpu:
        problem(f"workers: --loops {loops} differs from the CPU request {cpu}")

    # The headless Service: names every worker pod, ready or not, on the worker port.
    spec = service.spec
    if spec.cluster_ip != "None":
        problem(f"service: clusterIP {spec.cluster_ip!r}: a headless Service needs None")
    if spec.publish_not_ready_addresses is not True:
        problem("service: publishNotReadyAddresses must be true (workers have no readiness probe)")
    labels = workers.spec.template.metadata.labels or {}
    if not spec.selector or any(labels.get(k) != v for k, v in spec.selector.items()):
        problem(f"service: selector {spec.selector} does not select the worker pods {labels}")
    coordinator_labels = coordinator.spec.template.metadata.labels or {}
    if spec.selector and all(coordinator_labels.get(k) == v for k, v in spec.selector.items()):
        problem("service: its selector also selects the coordinator pod")
    if len(spec.ports or []) != 1:
        problem("service: one port expected")
    else:
        sp = spec.ports[0]
        target = sp.target_port if sp.target_port is not None else sp.port
        target_number = container_ports.get(target, target) if isinstance(target, str) else target
        if sp.port != port or target_number != port:
            problem(f"service: port {sp.port} → {target} does not reach the worker's --listen port {port}")
    if pod.subdomain != service.metadata.name:
        problem(f"workers: subdomain {pod.subdomain!r} is not the Service's name {service.metadata.name!r}")

    # The coordinator: names the Service, the count, the scenario and the results volume.
    cpod = coordinator.spec.template.spec
    if coordinator.spec.backoff_limit != 0 or cpod.restart_policy != "Never":
        problem("coordinator: backoffLimit 0 and restartPolicy Never expected (the workers serve one run)")
    c = cpod.containers[0]
    ccommand = (c.command or []) + (c.args or [])
    if ccommand[:2] != ["stampede", "run"] or len(ccommand) < 3:
        problem(f"coordinator: command {ccommand} is not `stampede run SCENARIO …`")
        return None
    expected = f"dns:{service.metadata.name}.{namespace}.svc.cluster.local:{port}"
    if option(ccommand, "--workers") != expected:
        problem(f"coordinator: --workers {option(ccommand, '--workers')!r}, expected {expected!r}")
    if option(ccommand, "--worker-count") != str(n):
        problem(f"coordinator: --worker-count {option(ccommand, '--worker-count')!r} differs from the workers' completions {n}")
    volumes = {v.name: v for v in cpod.volumes or []}
    mounts = {m.mount_path.rstrip("/"): m for m in c.volume_mounts or []}
    scenario_path = ccommand[2]
    scenario_dir, scenario_file = os.path.split(scenario_path)
    mount = mounts.get(scenario_dir)
    volume = volumes.get(mount.name) if mount else None
    scenario = None
    if volume is None or volume.config_map is None:
        problem(f"coordinator: {scenario_path} is not on a ConfigMap volume")
    else:
        key = next((i.key for i in volume.config_map.items or [] if i.path == scenario_file), scenario_file)
        maps = [m for m in by_kind.get("ConfigMap", []) if m.metadata.name == volume.config_map.name]
        if not maps or key not in (maps[0].data or {}):
            problem(f"coordinator: ConfigMap {volume.config_map.name!r} with key {key!r} not found")
        else:
            scenario = maps[0].data[key]
    results = option(ccommand, "--results")
    rmount = mounts.get((results or "").rstrip("/"))
    rvolume = volumes.get(rmount.name) if rmount else None
    if rvolume is None or (rvolume.persistent_volume_claim is None and rvolume.empty_dir is None):
        problem(f"coordinator: --results {results!r} is not a mounted volume (a PersistentVolumeClaim or emptyDir)")
    elif rvolume.persistent_volume_claim is not None:
        claims = [p.metadata.name for p in by_kind.get("PersistentVolumeClaim", [])]
        if rvolume.persistent_volume_claim.claim_name not in claims:
            problem(f"coordinator: claim {rvolume.persistent_volume_claim.claim_name!r} is not among {claims}")

    # Images and namespaces.
    for job in (workers, coordinator):
        for ct in job.spec.template.spec.containers:
            if image_names is not None and ct.image.split(":")[0] not in image_names:
                problem(f"{job.metadata.name}: image {ct.image!r} is not one the kustomization sets ({sorted(image_names)})")
            sc = ct.security_context
            if sc is None or sc.allow_privilege_escalation is not False:
                problem(f"{job.metadata.name}: allowPrivilegeEscalation: false expected")
    for o in objects:
        if o.kind == "Namespace":
            if o.metadata.name != namespace:
                problem(f"Namespace {o.metadata.name!r} is not the kustomization's {namespace!r}")
        elif o.metadata.namespace not in (None, namespace):
            problem(f"{o.kind} {o.metadata.name}: namespace {o.metadata.namespace!r}, expected {namespace!r}")
    return {"workers": n, "port": port, "service": service.metadata.name, "namespace": namespace,
            "scenario": scenario, "scenario_path": scenario_path}


def load_stream(path, where):
    with open(path, encoding="utf-8") as f:
        try:
            return [d for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            problem(f"{where}: not YAML: {e}")
            return []


def main():
    args = sys.argv[1:]
    if len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--rendered"):
        print(__doc__, file=sys.stderr)
        return 2
    folder = args[0]
    kustomization = load_stream(os.path.join(folder, "kustomization.yaml"), "kustomization.yaml")
    k = kustomization[0] if kustomization else {}
    known = {"apiVersion", "kind", "namespace", "resources", "images"}
    if k.get("kind") != "Kustomization" or set(k) - known:
        problem(f"kustomization.yaml: a Kustomization with only {sorted(known)} expected, found {sorted(k)}")
    namespace = k.get("namespace")
    resources = k.get("resources") or []
    on_disk = sorted(f for f in os.listdir(folder) if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml")
    if sorted(resources) != on_disk:
        problem(f"kustomization.yaml: resources {sorted(resources)} differ from the manifests on disk {on_disk}")
    image_names = {i.get("name") for i in k.get("images") or []} | {i.get("newName") for i in k.get("images") or []}

    objects, kinds = [], []
    for name in resources:
        docs = load_stream(os.path.join(folder, name), name)
        if len(docs) != 1:
            problem(f"{name}: one object per file expected, found {len(docs)}")
        for d in docs:
            o = as_model(d, name)
            if o is not None:
                objects.append(o)
                kinds.append(f"{d['apiVersion']} {d['kind']} {o.metadata.name}")
    summary = check_run(objects, namespace, image_names) if not problems else None

    if len(args) == 3:
        rendered = []
        for i, d in enumerate(load_stream(args[2], "rendered")):
            o = as_model(d, f"rendered document {i + 1}")
            if o is not None:
                rendered.append(o)
        if len(rendered) != len(resources):
            problem(f"rendered: {len(rendered)} objects, expected {len(resources)}")
        for o in rendered:
            if o.kind != "Namespace" and o.metadata.namespace != namespace:
                problem(f"rendered {o.kind} {o.metadata.name}: namespace {o.metadata.namespace!r}, expected {namespace!r}")
        if not problems:
            check_run(rendered, namespace, image_names)

    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        return 1
    print(json.dumps(dict(summary or {}, objects=kinds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
