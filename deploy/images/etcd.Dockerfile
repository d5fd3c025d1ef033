# Stand-in for registry.k8s.io/etcd:3.6.8-0, built by `npm run images` (deploy/images/stand-ins.ts) where
# no container registry can be reached. Distroless-like, as upstream: no shell, no package manager, static
# binaries where upstream has them (/usr/local/bin/etcd and etcdctl), a passwd with root and nonroot, /tmp.
# It runs as nonroot (65532) unless told otherwise; Dockerfile.etcd sets its own USER and ENTRYPOINT.
# The build context's rootfs/ is the whole image: etcd (built by envtest from Go modules), etcdctl
# (deploy/images/go/etcdctl), /etc/passwd and /etc/group, and /tmp (mode 1777).
FROM scratch
COPY rootfs/ /
USER 65532:65532
EXPOSE 2379 2380
ENTRYPOINT ["/usr/local/bin/etcd"]
