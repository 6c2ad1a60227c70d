# Excerpt of bitsandbytes-foundation/bitsandbytes .github/scripts/build-rocm.sh @ 092e9bf502d742af5dc2c93721d29e794167bf35
# (the Linux arch list each ROCm library of the wheel is built for)
bnb_rocm_arch="gfx90a;gfx942;gfx1100;gfx1101;gfx1102;gfx1103"

# ROCm 6.4+ - Add RDNA4 and RDNA3.5 targets. Note we assume >=6.4.4.
if rocm_version_at_least "6.4"; then
    bnb_rocm_arch="${bnb_rocm_arch};gfx1150;gfx1151;gfx1152;gfx1153;gfx1200;gfx1201"
fi

# ROCm 7.0+ - Add gfx950
if rocm_version_at_least "7.0"; then
    bnb_rocm_arch="${bnb_rocm_arch};gfx950"
fi

# ROCm 7.14+ - Add CDNA1 and RDNA2 targets.
if rocm_version_at_least "7.14"; then
    bnb_rocm_arch="${bnb_rocm_arch};gfx908;gfx1030;gfx1031;gfx1032;gfx1033;gfx1034;gfx1035;gfx1036"
fi

# ROCm 7.14+ - Add CDNA5 (gfx1250).
if rocm_version_at_least "7.14"; then
    bnb_rocm_arch="${bnb_rocm_arch};gfx1250"
fi
# (Linux:) cmake -DCOMPUTE_BACKEND=hip -DCMAKE_BUILD_TYPE=MinSizeRel -DCMAKE_HIP_FLAGS="--offload-compress" -DBNB_ROCM_ARCH="${bnb_rocm_arch}" .
