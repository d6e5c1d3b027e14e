# Gantry's container image: `gantry scheduler` and `gantry binder` (see deploy/).
#   docker build -t gantry:latest .
# The build stage installs what scripts/setup.sh installs (less valgrind, for benchmarks only)
# plus libcurl, OpenSSL, zlib and simdjson for the Kubernetes client and jemalloc (the heap on
# transparent huge pages, src/util/allocator.h); the runtime stage holds the binary, its
# shared libraries and CA certificates, and runs as an unprivileged user (uid 65532, as deploy/
# expects).

FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libgtest-dev \
      libcurl4-openssl-dev libssl-dev zlib1g-dev libsimdjson-dev libjemalloc-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DGANTRY_BUILD_TESTS=OFF -DGANTRY_BUILD_BENCH=OFF \
 && ninja -C /build gantry \
 && strip /build/gantry \
 && mkdir -p /out/lib \
 && cp /build/gantry /out/gantry \
 && ldd /build/gantry | awk '/=> \// {print $3}' \
      | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' \
      | xargs -r -I{} cp -L {} /out/lib/

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 gantry \
 && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin gantry
COPY --from=build /out/lib/ /usr/local/lib/gantry/
COPY --from=build /out/gantry /usr/local/bin/gantry
ENV LD_LIBRARY_PATH=/usr/local/lib/gantry
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["gantry"]
