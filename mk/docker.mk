# DockerSandbox specs (spec/docker_spec.lua, spec/conformance/docker_spec.lua):
# a private Podman service serving the Docker Engine API, with runc (crun
# fails on this kind of machine: cgroups in hybrid mode, no
# CAP_SYS_RESOURCE) and a local image made from busybox-static, nothing
# pulled (spec/helpers/podman.lua).
DEB_PACKAGES += podman runc busybox-static
