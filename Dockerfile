# gpu-device-plugin's container image (docs/deploy.md):
#   docker build -t registry.example.com/gpu-device-plugin:0.1.0 .
# Stage 1 builds gpu-device-plugin and dpctl on Debian 12; stage 2 is an empty
# image holding only them, the shared libraries they load and the dynamic
# loader (deploy/image/rootfs.sh; tests/deploy/image_rootfs_test.sh runs the
# same root without Docker), plus gdp-cdi-hook, the memory-limit hook, as a
# self-contained bundle (its own loader and libraries) at
# /usr/local/gpu-device-plugin, the host path the DaemonSet's init container
# copies it to (deploy/image/hook_bundle.sh; tests/deploy/
# hook_bundle_test.sh).
FROM debian:bookworm AS build
COPY scripts/deps.sh /src/scripts/deps.sh
RUN /src/scripts/deps.sh --build && rm -rf /var/lib/apt/lists/*
COPY . /src
WORKDIR /src
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
 && ninja -C /build gpu-device-plugin dpctl gdp-cdi-hook-host \
 && strip /build/src/gpu-device-plugin /build/dpctl/dpctl \
          /build/src/hook/gdp-cdi-hook-host \
 && deploy/image/rootfs.sh /rootfs /build/src/gpu-device-plugin /build/dpctl/dpctl \
 && deploy/image/hook_bundle.sh /rootfs /usr/local/gpu-device-plugin \
          /build/src/hook/gdp-cdi-hook-host

FROM scratch
COPY --from=build /rootfs/ /
# The NVIDIA container toolkit mounts the driver's NVML (libnvidia-ml.so.1)
# and nvidia-smi into a container that asks for these.
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=utility \
    PATH=/usr/bin
ENTRYPOINT ["/usr/bin/gpu-device-plugin"]
