# Stand-in for golang:1.26.8-bookworm, built by `npm run images` (deploy/images/stand-ins.ts) where no
# container registry can be reached: Debian bookworm with the Go toolchain of that exact version in
# /usr/local/go, on PATH, GOPATH=/go, as upstream. The build context is the toolchain's GOROOT (go/).
ARG BASE
FROM ${BASE}
COPY go /usr/local/go
ENV GOLANG_VERSION=1.26.8 GOTOOLCHAIN=local GOPATH=/go PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN mkdir -p /go/bin /go/src && go version
WORKDIR /go
