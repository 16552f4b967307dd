#!/usr/bin/env python3
"""What one Workspace status write costs the API server, by write method and object size.

The hub's CPU during installer_scale goes mostly into Workspace status writes
(docs/performance.md). This measures that cost alone: N Workspaces are created from a
template (a Workspace as an API server stored it, status included), then written N at a
time with each method, alternating, and the CPU time the kube-apiserver and etcd used
(/proc/<pid>/stat) is divided by N.

    target/debug/providers-controlplane up --dir /tmp/cp --info-file /tmp/cp.json &
    KUBECONFIG=/tmp/cp/admin.kubeconfig kubectl apply -f manifests/crds/workspaces.yaml
    tests/measure/status_write_cost.py /tmp/cp.json shared/benches/fixtures/stored-workspace.json

Environment: N (writes per block, 400), ROUNDS (3), METHODS (jsonpatch,merge,put,apply),
NS (the namespace to use, created if missing; one per template).
"""
import concurrent.futures as cf
import copy
import json
import os
import sys
import time

import requests

info = json.load(open(sys.argv[1]))
template = json.load(open(sys.argv[2]))
N = int(os.environ.get("N", "400"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
METHODS = os.environ.get("METHODS", "jsonpatch,merge,put,apply").split(",")
NS = os.environ.get("NS", "status-write-cost")
THREADS = 8

session = requests.Session()
session.trust_env = False
session.verify = info["ca_file"]
session.headers["Authorization"] = "Bearer " + info["tokens"]["admin"]
session.mount("https://", requests.adapters.HTTPAdapter(pool_connections=THREADS, pool_maxsize=THREADS))
server = info["server"]
base = f"{server}/apis/providers.platform.dev/v1alpha1/namespaces/{NS}/workspaces"
manager = "fieldManager=providers-installer"


def plane_pids():
    """The etcd and kube-apiserver of this control plane (their command lines name its folder)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        name = os.path.basename(cmdline[0]).decode()
        if name in ("etcd", "kube-apiserver") and info["dir"].encode() in b" ".join(cmdline):
            pids.append(int(pid))
    return pids


PIDS = plane_pids()
assert len(PIDS) == 2, f"expected etcd and kube-apiserver, found {PIDS}"


def cpu_seconds():
    total = 0
    for pid in PIDS:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


session.post(f"{server}/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
stored = {}


def create(i):
    body = {"apiVersion": template["apiVersion"], "kind": template["kind"],
            "metadata": {"name": f"w{i}", "namespace": NS}, "spec": template["spec"]}
    answer = session.post(f"{base}?{manager}", json=body)
    assert answer.status_code in (201, 409), answer.text
    created = session.get(f"{base}/w{i}").json()
    status = copy.deepcopy(template["status"])
    status["workspaceUID"] = created["metadata"]["uid"]
    answer = session.put(f"{base}/w{i}/status?{manager}", json={**created, "status": status})
    assert answer.status_code == 200, answer.text
    stored[i] = answer.json()


with cf.ThreadPoolExecutor(THREADS) as pool:
    list(pool.map(create, range(N)))
compact = lambda v: len(json.dumps(v, separators=(",", ":")))
print(f"stored Workspace: {compact(stored[0])} bytes, managedFields {compact(stored[0]['metadata'].get('managedFields'))}", flush=True)


def status_of(i, mark):
    status = copy.deepcopy(stored[i]["status"])
    status["conditions"][0]["message"] = f"attempt 1: installed ({mark})"
    return status


def jsonpatch(i, mark):
    body = [{"op": "test", "path": "/metadata/uid", "value": stored[i]["metadata"]["uid"]},
            {"op": "add", "path": "/status", "value": status_of(i, mark)}]
    return session.patch(f"{base}/w{i}/status?{manager}", data=json.dumps(body),
                         headers={"Content-Type": "application/json-patch+json"})


def merge(i, mark):
    return session.patch(f"{base}/w{i}/status?{manager}", data=json.dumps({"status": status_of(i, mark)}),
                         headers={"Content-Type": "application/merge-patch+json"})


def put(i, mark):
    return session.put(f"{base}/w{i}/status?{manager}", json={**stored[i], "status": status_of(i, mark)})


def apply(i, mark):
    body = {"apiVersion": template["apiVersion"], "kind": template["kind"],
            "metadata": {"name": f"w{i}", "namespace": NS}, "status": status_of(i, mark)}
    return session.patch(f"{base}/w{i}/status?{manager}&force=true", data=json.dumps(body),
                         headers={"Content-Type": "application/apply-patch+yaml"})


write = {"jsonpatch": jsonpatch, "merge": merge, "put": put, "apply": apply}
results = {method: [] for method in METHODS}
for round_ in range(ROUNDS):
    for method in METHODS:
        def one(i):
            answer = write[method](i, f"{method} {round_}")
            assert answer.status_code == 200, (method, answer.status_code, answer.text[:300])
            stored[i] = answer.json()
        time.sleep(2)
        before, started = cpu_seconds(), time.time()
        with cf.ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(one, range(N)))
        per_write = (cpu_seconds() - before) / N * 1000
        results[method].append(per_write)
        print(f"round {round_ + 1} {method}: {per_write:.1f} ms of API server and etcd CPU per write, {N / (time.time() - started):.0f} writes/s", flush=True)
for method, values in results.items():
    values.sort()
    print(f"status_write_cost method={method} bytes={compact(stored[0])} median_ms={values[len(values) // 2]:.1f} all_ms={','.join(f'{v:.1f}' for v in values)}")
