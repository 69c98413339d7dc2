# The controller image: a static binary on distroless, run as non-root
# (65532, which kustomize/base/manager/deployment.yaml names as well).
# Build: make docker-build
# (IMG=ghcr.io/programming-kubernetes/cnat-controller:<VERSION> by default).

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so a code change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w" -o /out/cnat-controller ./cmd/cnat-controller

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/cnat-controller /cnat-controller
USER 65532:65532
ENTRYPOINT ["/cnat-controller"]
