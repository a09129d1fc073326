# SPDX-License-Identifier: GPL-3.0-or-later
# mahimahi in a container: Debian 12, the Debian packages built from this checkout (debian/) and
# installed with apt, which pulls in what the programs run (Apache, dnsmasq, libnftnl).
#
#   docker build -t mahimahi .
#   docker run --rm -it --network none --cap-add NET_ADMIN --cap-add SYS_ADMIN \
#     --device /dev/net/tun --security-opt systempaths=unconfined --security-opt apparmor=unconfined \
#     mahimahi
#
# What the shells need, and why (docs/guide/installing.md, "Docker and podman"):
#   --cap-add NET_ADMIN      TUN devices, addresses, routes, nftables tables
#   --cap-add SYS_ADMIN      unshare(CLONE_NEWNET) and setns(): each shell is a network namespace
#   --device /dev/net/tun    the TUN devices every shell is made of
#   --security-opt systempaths=unconfined
#                            /proc/sys writable: per-device forwarding of the shell's own devices
#                            (never net.ipv4.ip_forward), in the container's own network namespace
#   --security-opt apparmor=unconfined
#                            only where AppArmor confines containers (Debian, Ubuntu): its default
#                            profile denies writes to /proc/sys
# --network none is enough for replays and emulation of traffic inside the container; leave it
# out to reach the outside through the shells. Inside, run as root, or as the unprivileged user
# "mahimahi" (--user mahimahi): the shells are setuid root, as on a shared machine. Or rootless,
# with no capability added (docs/containers.md): passt (pasta) is installed for the way out.

FROM debian:12 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends build-essential dpkg-dev
COPY . /build/mahimahi
WORKDIR /build/mahimahi
# The build dependencies debian/control lists (without those only the tests need), then the
# packages (make check runs in the project's CI, not in every image build).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get build-dep -y --no-install-recommends -P nocheck ./ \
 && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" DEB_BUILD_PROFILES=nocheck dpkg-buildpackage -us -uc -b \
 && mkdir /debs && mv ../mahimahi_*.deb ../mahimahi-data_*.deb /debs/

FROM debian:12
COPY --from=build /debs /debs
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      /debs/mahimahi_*.deb /debs/mahimahi-data_*.deb curl iproute2 iputils-ping passt \
 && rm -rf /debs /var/lib/apt/lists/* \
 && useradd --create-home --shell /bin/bash mahimahi
CMD ["bash"]
