#!/bin/bash
# Label a Kubernetes node from the labels `rocmkit fleet labels REPORT` wrote
# (KEY=VALUE, one a line), e.g. rocmkit.io/gfx=gfx942 rocmkit.io/doctor=pass.
#
#   label-node.sh NODE LABELS_FILE
#
# Runs in a kubectl container next to the doctor (the rocmkit image has no
# kubectl); the pod's service account needs get/patch on nodes (rbac.yaml).
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: $0 NODE LABELS_FILE" >&2
  exit 4
fi
node=$1
file=$2
if [ ! -s "$file" ]; then
  echo "error: $file is missing or empty: the doctor step wrote no labels" >&2
  exit 4
fi

labels=()
while IFS= read -r line; do
  [ -n "$line" ] && labels+=("$line")
done < "$file"

kubectl label node "$node" "${labels[@]}" --overwrite
echo "labelled node $node: ${labels[*]}" >&2
