#!/usr/bin/env python3
# Copyright Advanced Micro Devices, Inc.
# SPDX-License-Identifier: MIT

"""Upload multi-arch PyTorch wheels from a local directory to a release bucket.

Used by the multi-arch release PyTorch wheels workflows to push the
host wheel and per-gfx amd-torch-device-* wheels produced by the kpack
splitter into the release bucket.

Example with ``--source-dir /tmp/dist --release-type dev``::

    /tmp/dist/torch-2.10.0+rocm7.10.0-cp312-cp312-linux_x86_64.whl
    /tmp/dist/amd-torch-device-gfx942-2.10.0+rocm7.10.0-py3-none-linux_x86_64.whl
      -> s3://therock-repo-amd-dev-pytorch/v5/rocm/pytorch/whl-next/torch/torch-...whl
      -> s3://therock-repo-amd-dev-pytorch/v5/rocm/pytorch/whl-next/amd-torch-device-gfx942/amd-torch-device-...whl

Test usage::

    python build_tools/github_actions/publish_pytorch_to_release_bucket.py \\
        --source-dir /tmp/dist --release-type dev --dry-run
"""

import argparse
import logging
import sys
from pathlib import Path

_BUILD_TOOLS_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_BUILD_TOOLS_DIR))

from _therock_utils.s3_buckets import (
    get_product_release_bucket_config,
    get_release_bucket_config,
    get_release_package_index_url,
)
from _therock_utils.python_package_paths import plan_local_uploads
from _therock_utils.storage_backend import create_storage_backend
from _therock_utils.storage_location import StorageLocation
from github_actions.github_actions_api import gha_set_output

logger = logging.getLogger(__name__)


LEGACY_MULTI_ARCH_INDEX_URLS = {
    "dev": "https://rocm.devreleases.amd.com/whl-multi-arch/",
    "dev-bkc": "https://rocm.devreleases.amd.com/whl-multi-arch/",
    "nightly": "https://rocm.nightlies.amd.com/whl-multi-arch/",
    "nightly-bkc": "https://rocm.nightlies.amd.com/whl-multi-arch/",
    "prerelease": "https://rocm.prereleases.amd.com/whl-multi-arch/",
}


def _publish_structured(source_dir, dest_bucket, index, backend) -> None:
    """Upload wheels into product-local package directories.

    Plans per-wheel destinations under ``v5/rocm/pytorch/<index>/<package>/``
    and uploads them, failing fast if the source directory holds no wheels.
    """
    plans = plan_local_uploads(source_dir, dest_bucket, "pytorch", index)
    if not plans:
        raise FileNotFoundError(f"No wheels found at {source_dir}")
    for plan in plans:
        logger.info("PyTorch wheel: %s -> %s", plan.source, plan.dest.s3_uri)
    count = backend.upload_files([(plan.source, plan.dest) for plan in plans])
    logger.info("Uploaded %d wheel files (structured)", count)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        description="Upload multi-arch PyTorch wheels to a release bucket"
    )
    parser.add_argument(
        "--source-dir",
        required=True,
        type=Path,
        help="Local directory containing the wheels to upload",
    )
    parser.add_argument(
        "--release-type",
        required=True,
        choices=["dev", "dev-bkc", "nightly", "nightly-bkc", "prerelease"],
        help="Release type used to select the destination Python bucket",
    )
    parser.add_argument(
        "--structured",
        action="store_true",
        help="Publish wheels into product-local package directories "
        "(v5/rocm/pytorch/<index>/<package>/) instead of the flat v4/whl "
        "prefix.",
    )
    parser.add_argument(
        "--python-index",
        default="whl-next",
        choices=["whl", "whl-next"],
        help="Product-local index name for structured publishing (default: "
        "whl-next). Selects the v5/rocm/pytorch/<index>/ path segment.",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="Print plan without uploading"
    )
    args = parser.parse_args(argv)

    if not args.source_dir.is_dir():
        raise FileNotFoundError(f"Source directory not found: {args.source_dir}")

    backend = create_storage_backend(dry_run=args.dry_run)

    if args.structured:
        bucket = get_product_release_bucket_config(args.release_type, "pytorch")
        _publish_structured(args.source_dir, bucket.name, args.python_index, backend)
        package_index_url = get_release_package_index_url(args.release_type)
    else:
        bucket = get_release_bucket_config(args.release_type, "python")
        dest = StorageLocation(bucket.name, "v4/whl")
        logger.info("PyTorch wheels: %s -> %s", args.source_dir, dest.s3_uri)
        count = backend.upload_directory(args.source_dir, dest, include=["*.whl"])
        logger.info("Uploaded %d wheel files", count)
        if count == 0:
            raise FileNotFoundError(f"No wheels found at {args.source_dir}")
        package_index_url = LEGACY_MULTI_ARCH_INDEX_URLS[args.release_type]

    gha_set_output({"package_index_url": package_index_url})


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main(sys.argv[1:])
