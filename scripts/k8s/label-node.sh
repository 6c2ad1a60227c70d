#!/bin/bash
# Label a Kubernetes node by hand from the labels `rocmkit fleet labels REPORT` wrote
# (KEY=VALUE, one a line), e.g. rocmkit.io/gfx=gfx942 rocmkit.io/doctor=pass, and
# remove the rocmkit labels the file does not give (a node that stopped passing keeps
# no stale doctor=pass). The manifests do not need it: in a pod,
# `rocmkit fleet labels REPORT --apply-to-node NODE` sets them through the API.
#
#   label-node.sh NODE LABELS_FILE
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
given=" "
prefix=""
while IFS= read -r line; do
  [ -n "$line" ] || continue
  labels+=("$line")
  given+="${line%%=*} "
  prefix=${line%%/*}
done < "$file"

# Every label rocmkit sets (rocmkit/fleet/labels.py KEYS): those not given are removed.
for key in doctor doctor-level gfx gpus rocm torch; do
  case "$given" in
    *" $prefix/$key "*) ;;
    *) labels+=("$prefix/$key-") ;;
  esac
done

kubectl label node "$node" "${labels[@]}" --overwrite
echo "labelled node $node: ${labels[*]}" >&2
