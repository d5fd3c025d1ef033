# Stand-in for registry.k8s.io/kube-apiserver:v1.36.3, built by `npm run images` (deploy/images/stand-ins.ts)
# where no container registry can be reached. Distroless-like, as upstream: no shell, the static binary at
# upstream's path (/usr/local/bin/kube-apiserver), a passwd with root and nonroot, /tmp. It runs as nonroot
# (65532) unless told otherwise; Dockerfile.kube-apiserver sets its own USER and ENTRYPOINT. The build
# context's rootfs/ is the whole image: the kube-apiserver envtest builds from Go modules (same release),
# /etc/passwd and /etc/group, and /tmp (mode 1777).
FROM scratch
COPY rootfs/ /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kube-apiserver"]
