#!/usr/bin/env bash
# cri-up.sh — start podward's CRI test environment: a private containerd 1.6 (CRI v1) and a
# local registry that mirrors docker.io, serving small images built here from Debian's
# busybox-static and bash-static. Needs root (Debian 12, cgroup v1, no systemd needed).
#
# Usage:   hack/cri-up.sh                  progress on stderr; the LAST line of stdout is
#                                          CRI_ENDPOINT=unix://$PODWARD_CRI_BASE/containerd.sock
#          eval "$(hack/cri-up.sh)"        sets CRI_ENDPOINT in the calling shell
#          . "$PODWARD_CRI_BASE/env"       all values below, for tests (written by this script)
#          hack/cri-down.sh                tears it all down again
# Idempotent: a second run reuses the running containerd and registry (restarting one only when
# its configuration changed; containerd's containers survive that) and pushes nothing new.
#
# Env (all optional):
#   PODWARD_CRI_BASE=/tmp/podward-cri  everything lives here (absolute path, no spaces)
#   PODWARD_CRI_REGISTRY_PORT=5000     registry port on 127.0.0.1. When set, it must be free or be
#                                      ours. When unset: the port of our running registry, else 5000,
#                                      else the first free port of 5001-5099.
#   PODWARD_CRI_CNI=1                  1 = configure a CNI network (bridge + host-local IPAM + portmap;
#                                      containerd adds the loopback) so that pods get their own
#                                      network namespace and IP, and hostPorts are mapped: what
#                                      `podward node --runtime cri` uses by default. 0 = no CNI
#                                      config: only host-network pods (namespace_options.network=2)
#                                      can run, and the CRI status reports NetworkReady=false.
#   PODWARD_CRI_CNI_SUBNET=10.X.Y.0/24 pod subnet of the bridge; default derived from the base dir
#                                      (X in 160-223), so that environments running at the same time
#                                      under other base dirs have other subnets; refused when a route
#                                      of the host already covers it or lies in it
#   PODWARD_CRI_CNI_BRIDGE=pwXXXXXXXX  the bridge's name; default derived from the base dir, one per
#                                      CRI environment (cri-down.sh reads it from $BASE/cni/bridge)
#   PODWARD_CRI_MIRRORS=""             more registries (space separated, e.g. "registry.k8s.io") that
#                                      containerd pulls through the local registry, as docker.io:
#                                      registry.k8s.io/e2e-test-images/agnhost:2.66.1 is then
#                                      http://$REG/v2/e2e-test-images/agnhost/manifests/2.66.1
#   PODWARD_CRI_CRICTL=0               1 = also build crictl v1.37.0 into $BASE/cache/bin (go
#                                      install, ~2 min cold). Once cached, every run checks
#                                      `crictl info` (RuntimeReady) and cri-down.sh removes pods
#                                      with it. Use: CRI_CONFIG_FILE=$BASE/crictl.yaml crictl ...
#   PODWARD_CRI_APT_LOCK_TIMEOUT=300   seconds apt-get waits for the dpkg lock
#
# Images (built deterministically — fixed mtimes, owners and order — so the same Debian
# packages always give the same digests; pushed only when the registry lacks them):
#   docker.io/library/busybox:latest  busybox-static, applets as symlinks in /bin, Cmd ["sh"]
#   docker.io/library/busybox:defer   same layer, its own config (own image ID): "in the registry,
#                                     not pulled" for pre-pull tests; removing it never removes
#                                     busybox:latest
#   docker.io/library/bash:latest     busybox layer + bash-static at /usr/local/bin/bash
#   docker.io/library/pause:local     the sandbox image (busybox `sleep inf`: no zombie reaping),
#                                     own image ID. Imported into containerd at start-up
#                                     (RunPodSandbox never pulls) and also in the registry, so
#                                     CRI pulls it back through the mirror if something removes it.
# containerd 1.6 always appends https://registry-1.docker.io after a mirror: pulling an image the
# registry lacks fails with a DNS error for that host (gRPC Unknown), not with "not found".
#
# Layout of $PODWARD_CRI_BASE:
#   containerd.sock  config.toml  env  crictl.yaml   socket, config, values for tests
#   containerd/{root,state,opt,runc}                  containerd's own dirs and runc's --root
#   cni/{net.d,ipam}  registry/  logs/  tmp/          CNI config, registry config+pid, logs
#   cache/{registry,images,bin}                       registry storage, image tars, crictl: kept
#                                                     by cri-down.sh unless PODWARD_CRI_KEEP_CACHE=0
# Outside it, containerd 1.6 writes shim sockets to /run/containerd/s/, pod cgroups to
# /sys/fs/cgroup/<controller>/<cgroup_parent>/ and, with CNI, /var/lib/cni/results; cri-down.sh
# removes this instance's share of them. skopeo keeps a blob cache in /var/lib/containers/cache.
set -euo pipefail
umask 022
export LC_ALL=C DEBIAN_FRONTEND=noninteractive
PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin:/usr/local/go/bin

BASE=${PODWARD_CRI_BASE:-/tmp/podward-cri}
SOCK=$BASE/containerd.sock
CNI=${PODWARD_CRI_CNI:-1}
# The bridge's name and subnet, by default from a hash of the base dir: two environments under
# two base dirs (engineers' tests running side by side) get two bridges and two subnets.
BASE_HASH=$(printf %s "$BASE" | sha256sum | cut -c1-8)
SUBNET=${PODWARD_CRI_CNI_SUBNET:-10.$((160 + 0x${BASE_HASH:0:2} % 64)).$((0x${BASE_HASH:2:2})).0/24}
BRIDGE=${PODWARD_CRI_CNI_BRIDGE:-pw$BASE_HASH}
MIRRORS=${PODWARD_CRI_MIRRORS:-}
# the CNI network's name: libcni keeps results under /var/lib/cni/results/NAME-*, which
# cri-down.sh removes, so each bridge has a network of its own
NETWORK=podward-bridge
[ "$BRIDGE" = pwcni0 ] || NETWORK=podward-$BRIDGE
CRICTL=${PODWARD_CRI_CRICTL:-0}
CRICTL_VERSION=v1.37.0
APT_TIMEOUT=${PODWARD_CRI_APT_LOCK_TIMEOUT:-300}
SANDBOX_IMAGE=docker.io/library/pause:local
# Bump when the image recipe below changes: it is part of the image cache key.
IMAGE_RECIPE=1

T0=$(date +%s%N)
say() { local ms=$((($(date +%s%N) - T0) / 1000000)); printf '[cri-up %3d.%02ds] %s\n' $((ms / 1000)) $((ms % 1000 / 10)) "$*" >&2; }
SHOW_LOGS=0 # set once our daemons may be involved: die then shows the end of their logs
die() {
  say "FAILED: $*"
  local f
  [ "$SHOW_LOGS" = 1 ] || exit 1
  for f in "$BASE/logs/containerd.log" "$BASE/logs/registry.log"; do
    [ -s "$f" ] && { echo "--- last lines of $f" >&2; tail -n 15 "$f" >&2; }
  done
  exit 1
}

# ----------------------------------------------------------------------------- 0. preconditions
[ "$(id -u)" = 0 ] || die "must run as root (containerd, runc, mounts and cgroups need it)"
case $BASE in
  /*[[:space:]]* | *[[:space:]]*) die "PODWARD_CRI_BASE must not contain white space: '$BASE'" ;;
  / | /*/.. | /*/../*) die "PODWARD_CRI_BASE must be a plain absolute directory: '$BASE'" ;;
  /?*) ;;
  *) die "PODWARD_CRI_BASE must be an absolute path: '$BASE'" ;;
esac
[ ${#SOCK} -lt 100 ] || die "PODWARD_CRI_BASE is too long for a unix socket path: $SOCK"
case $CNI in 0 | 1) ;; *) die "PODWARD_CRI_CNI must be 0 or 1" ;; esac
[[ $BRIDGE =~ ^[a-z][a-z0-9]{0,14}$ ]] || die "bad PODWARD_CRI_CNI_BRIDGE '$BRIDGE' (a link name: lower-case letters and digits, at most 15)"
for m in $MIRRORS; do
  [[ $m =~ ^[a-z0-9.-]+(:[0-9]+)?$ ]] || die "bad registry '$m' in PODWARD_CRI_MIRRORS"
done
if [ -d "$BASE" ] && [ ! -e "$BASE/.podward-cri" ] && [ -n "$(ls -A "$BASE")" ]; then
  die "$BASE exists, is not empty and was not made by this script (no .podward-cri marker)"
fi
mkdir -p "$BASE"
touch "$BASE/.podward-cri"
# One up or down at a time per base dir. fd 9 is closed for every daemon started below, or
# the daemon would hold the lock forever.
exec 9>"$BASE/.lock"
flock -w 600 9 || die "another cri-up/cri-down holds $BASE/.lock"
mkdir -p "$BASE"/{containerd/root,containerd/state,containerd/opt,containerd/runc,cni/net.d,cni/ipam} \
  "$BASE"/{registry,logs,tmp,cache/registry,cache/images,cache/bin}

# ----------------------------------------------------------------------------- 1. packages
PKGS=(containerd runc containernetworking-plugins iptables busybox-static bash-static docker-registry skopeo
  iproute2 curl util-linux tar)
installed=" $(dpkg-query -W -f='${Package} ${Status}\n' "${PKGS[@]}" 2>/dev/null |
  awk '$NF == "installed" {printf "%s ", $1}' || true)"
need=()
for p in "${PKGS[@]}"; do
  [[ $installed == *" $p "* ]] || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  say "apt-get install ${need[*]}"
  apt_install() {
    apt-get -o DPkg::Lock::Timeout="$APT_TIMEOUT" install -y -qq --no-install-recommends "${need[@]}" \
      >>"$BASE/logs/apt.log" 2>&1
  }
  if ! apt_install; then # package lists missing or stale: refresh once
    apt-get -o DPkg::Lock::Timeout="$APT_TIMEOUT" update -qq >>"$BASE/logs/apt.log" 2>&1 ||
      { tail -n 20 "$BASE/logs/apt.log" >&2; die "apt-get update"; }
    apt_install || { tail -n 20 "$BASE/logs/apt.log" >&2; die "apt-get install ${need[*]}"; }
  fi
fi
for b in containerd ctr containerd-shim-runc-v2 runc docker-registry skopeo curl ip flock setsid; do
  command -v "$b" >/dev/null || die "$b not found after installing packages"
done
if [ ! -x /bin/busybox ] || [ ! -x /bin/bash-static ]; then die "/bin/busybox or /bin/bash-static missing"; fi
RUNC=$(command -v runc)
say "containerd $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1{print $3}')"

# ----------------------------------------------------------------------------- 2. registry
REG_CONF=$BASE/registry/config.yml
REG_PIDF=$BASE/registry/registry.pid
# pids_of CMDLINE: pids whose whole command line (arguments joined by spaces) is CMDLINE.
# Our daemons are found this way, never by a bare program name.
pids_of() {
  local d args
  for d in /proc/[0-9]*; do
    mapfile -d '' -t args 2>/dev/null <"$d/cmdline" || continue
    [ "${args[*]:-}" = "$1" ] && echo "${d#/proc/}"
  done
  return 0
}
REG_CMD="docker-registry serve $REG_CONF"
CD_CMD="containerd --config $BASE/config.toml"
port_busy() { [ -n "$(ss -Hltn "( sport = :$1 )" 2>/dev/null)" ]; }
# alive pid: running and not a zombie (our daemons are reparented to PID 1, which may reap late)
alive() {
  local st
  read -r st 2>/dev/null <"/proc/$1/stat" || return 1
  st=${st##*) }
  [ "${st%% *}" != Z ]
}
stop_pid() { # pid: TERM, then KILL after 10 s
  kill -TERM "$1" 2>/dev/null || return 0
  for _ in $(seq 1 200); do alive "$1" || return 0; sleep 0.05; done
  kill -KILL "$1" 2>/dev/null || true
}

reg_pid=$(pids_of "$REG_CMD" | sed -n 1p)
reg_port=$(cat "$BASE/registry/port" 2>/dev/null) || reg_port=
if [ -n "${PODWARD_CRI_REGISTRY_PORT:-}" ]; then
  PORT=$PODWARD_CRI_REGISTRY_PORT
  if ! [[ $PORT =~ ^[0-9]{1,5}$ ]] || [ "$PORT" -lt 1 ] || [ "$PORT" -gt 65535 ]; then
    die "bad PODWARD_CRI_REGISTRY_PORT '$PORT'"
  fi
  if [ -z "$reg_pid" ] || [ "$reg_port" != "$PORT" ]; then
    if port_busy "$PORT"; then
      die "port $PORT is in use by another program (see: ss -ltnp 'sport = :$PORT'); choose another PODWARD_CRI_REGISTRY_PORT"
    fi
    [ -n "$reg_pid" ] && { say "registry: port changed $reg_port -> $PORT, restarting"; stop_pid "$reg_pid"; reg_pid=; }
  fi
elif [ -n "$reg_pid" ] && [ -n "$reg_port" ]; then
  PORT=$reg_port
else
  PORT=
  for p in 5000 $(seq 5001 5099); do port_busy "$p" || { PORT=$p; break; }; done
  [ -n "$PORT" ] || die "no free port in 5000-5099 for the registry; set PODWARD_CRI_REGISTRY_PORT"
  [ "$PORT" = 5000 ] || say "registry: port 5000 is taken by another program, using $PORT"
fi
REG=127.0.0.1:$PORT
SHOW_LOGS=1

cat >"$REG_CONF.new" <<EOF
# written by hack/cri-up.sh
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $BASE/cache/registry
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $REG
  headers:
    X-Content-Type-Options: [nosniff]
health:
  storagedriver:
    enabled: false
EOF
if ! cmp -s "$REG_CONF.new" "$REG_CONF"; then
  mv "$REG_CONF.new" "$REG_CONF"
  [ -n "$reg_pid" ] && { say "registry: config changed, restarting"; stop_pid "$reg_pid"; reg_pid=; }
else
  rm -f "$REG_CONF.new"
fi
reg_ok() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$REG/v2/")" = 200 ]; }
if [ -n "$reg_pid" ]; then
  reg_ok || die "our registry (pid $reg_pid) does not answer on http://$REG/v2/"
  say "registry already running (pid $reg_pid) on $REG"
else
  setsid docker-registry serve "$REG_CONF" </dev/null >>"$BASE/logs/registry.log" 2>&1 9>&- &
  echo $! >"$REG_PIDF"
  echo "$PORT" >"$BASE/registry/port"
  for _ in $(seq 1 200); do reg_ok && break; sleep 0.05; done
  reg_ok || die "registry did not answer on http://$REG/v2/ within 10 s"
  say "registry started (pid $(cat "$REG_PIDF")) on $REG, storage $BASE/cache/registry"
fi

# check_subnet dies when a route of the host, but our bridge's, covers $SUBNET or lies in it:
# another environment's bridge (or the host's own network) has it.
check_subnet() {
  [[ $SUBNET =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/[0-9]+$ ]] || die "bad PODWARD_CRI_CNI_SUBNET '$SUBNET' (an IPv4 CIDR)"
  local clash
  clash=$({ ip -4 route show match "$SUBNET"; ip -4 route show root "$SUBNET"; } 2>/dev/null |
    awk -v br="$BRIDGE" '$1 != "default" { for (i = 1; i < NF; i++) if ($i == "dev" && $(i + 1) != br) { print; break } }' | sort -u)
  [ -z "$clash" ] || die "the pod subnet $SUBNET is routed already ($(echo "$clash" | head -n 1)): set PODWARD_CRI_CNI_SUBNET (and PODWARD_CRI_CNI_BRIDGE) to free ones"
}

# ----------------------------------------------------------------------------- 3. containerd config
{
  cat <<EOF
# written by hack/cri-up.sh (cni=$CNI, registry=$REG)
version = 2
root = "$BASE/containerd/root"
state = "$BASE/containerd/state"
# no CAP_SYS_RESOURCE on these machines: keep every oom_score_adj at 0
oom_score = 0

[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  level = "info"

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$BASE/containerd/opt"
  [plugins."io.containerd.grpc.v1.cri"]
    # imported at start-up (and in the registry); containerd never pulls an image that is present
    sandbox_image = "$SANDBOX_IMAGE"
    # CRI's default sandbox oom_score_adj=-998 cannot be written without CAP_SYS_RESOURCE
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    disable_tcp_service = true
    disable_apparmor = true
    enable_selinux = false
    tolerate_missing_hugetlb_controller = true
    disable_hugetlb_controller = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          BinaryName = "$RUNC"
          Root = "$BASE/containerd/runc"
          SystemdCgroup = false
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "$BASE/cni/net.d"
      max_conf_num = 1
    [plugins."io.containerd.grpc.v1.cri".registry]
      [plugins."io.containerd.grpc.v1.cri".registry.mirrors]
        [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
          endpoint = ["http://$REG"]
EOF
  for m in $MIRRORS; do
    printf '        [plugins."io.containerd.grpc.v1.cri".registry.mirrors."%s"]\n          endpoint = ["http://%s"]\n' "$m" "$REG"
  done
} >"$BASE/config.toml.new"
CNI_CONF=$BASE/cni/net.d/10-podward-bridge.conflist
if [ "$CNI" = 1 ]; then
  for plugin in bridge host-local portmap loopback; do # loopback: containerd's own lo network
    [ -x "/usr/lib/cni/$plugin" ] || die "CNI plugin $plugin missing in /usr/lib/cni (package containernetworking-plugins)"
  done
  command -v iptables >/dev/null || die "iptables not found (the portmap plugin needs it)"
  check_subnet
  echo "$BRIDGE" >"$BASE/cni/bridge" # tells cri-down.sh which bridge the plugin creates, to delete it
  # portmap: the sandboxes' PortMappings (the pods' hostPorts) as DNAT rules, also from the host
  # itself to 127.0.0.1 (snat, route_localnet on the bridge)
  cat >"$CNI_CONF" <<EOF
{"cniVersion": "1.0.0", "name": "$NETWORK", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$SUBNET"}]], "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": "$BASE/cni/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}]}
EOF
else
  rm -f "$CNI_CONF"
fi
printf 'runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 30\n' "$SOCK" "$SOCK" >"$BASE/crictl.yaml"

# ----------------------------------------------------------------------------- 4. containerd
CTR=(ctr --address "$SOCK")
ctr_ok() { timeout 5 "${CTR[@]}" version >/dev/null 2>&1; }
cd_pid=$(pids_of "$CD_CMD" | sed -n 1p)
if ! cmp -s "$BASE/config.toml.new" "$BASE/config.toml"; then
  mv "$BASE/config.toml.new" "$BASE/config.toml"
  if [ -n "$cd_pid" ]; then # its containers survive the restart
    say "containerd: config changed, restarting pid $cd_pid"
    stop_pid "$cd_pid"
    cd_pid=
  fi
else
  rm -f "$BASE/config.toml.new"
fi
if [ -n "$cd_pid" ] && ctr_ok; then
  say "containerd already running (pid $cd_pid)"
else
  [ -n "$cd_pid" ] && { say "containerd pid $cd_pid does not answer, restarting"; stop_pid "$cd_pid"; }
  rm -f "$SOCK" "$SOCK.ttrpc"
  ts=$(date +%s%N)
  setsid containerd --config "$BASE/config.toml" </dev/null >>"$BASE/logs/containerd.log" 2>&1 9>&- &
  echo $! >"$BASE/containerd.pid"
  for _ in $(seq 1 400); do ctr_ok && break; sleep 0.05; done
  ctr_ok || die "containerd did not come up within 20 s (log: $BASE/logs/containerd.log)"
  say "containerd started (pid $(cat "$BASE/containerd.pid")) in $((($(date +%s%N) - ts) / 1000000)) ms"
fi
cri_ok() { timeout 10 "${CTR[@]}" plugins ls 2>/dev/null | grep -Eq '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$'; }
for _ in $(seq 1 40); do cri_ok && break; sleep 0.05; done
cri_ok || die "CRI plugin not ok: $(timeout 10 "${CTR[@]}" plugins ls 2>&1 | grep -E '[[:space:]]cri[[:space:]]' || true)"
say "CRI plugin ok"

# ----------------------------------------------------------------------------- 5. images
# Deterministic docker-archive tars, cached under cache/images/<key>, keyed on the recipe and
# the two static binaries. Layer A: busybox rootfs. Layer B: /usr/local/bin/bash.
ARCH=$(dpkg --print-architecture)
sha() { sha256sum "$1" | cut -d' ' -f1; }
KEY=$(printf '%s\n' "$IMAGE_RECIPE" "$ARCH" "$(sha /bin/busybox)" "$(sha /bin/bash-static)" | sha256sum | cut -c1-16)
IMGDIR=$BASE/cache/images/$KEY
# images: name (as in the registry, under library/) and the tar that holds it
IMAGES=(busybox:latest busybox:defer bash:latest pause:local)

mklayer() { # rootfs-dir out-tar: fixed order, mtimes, owners
  local top
  mapfile -t top < <(ls -A "$1")
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu -C "$1" -cf "$2" -- "${top[@]}"
}
build_images() {
  local w r d a b name cmd label layers diffs c tar
  w=$(mktemp -d "$BASE/tmp/build.XXXXXX")
  r=$w/rootfs-a
  mkdir -p "$r"/{bin,etc,tmp,proc,sys,dev,root,var,run}
  chmod 0755 "$r" && chmod 1777 "$r/tmp" && chmod 0700 "$r/root"
  cp /bin/busybox "$r/bin/busybox" && chmod 0755 "$r/bin/busybox"
  for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "$r/bin/$a"; done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
  chmod 0644 "$r/etc/passwd" "$r/etc/group"
  mklayer "$r" "$w/a.tar"
  r=$w/rootfs-b
  mkdir -p "$r/usr/local/bin"
  chmod 0755 "$r" "$r/usr" "$r/usr/local" "$r/usr/local/bin"
  cp /bin/bash-static "$r/usr/local/bin/bash" && chmod 0755 "$r/usr/local/bin/bash"
  mklayer "$r" "$w/b.tar"
  a=$(sha "$w/a.tar") && b=$(sha "$w/b.tar")
  for name in "${IMAGES[@]}"; do
    case $name in
      busybox:latest) cmd='["sh"]' layers=("$a") ;;
      busybox:defer) cmd='["sh"]' layers=("$a") ;;
      bash:latest) cmd='["/usr/local/bin/bash"]' layers=("$a" "$b") ;;
      pause:local) cmd='["/bin/sleep","inf"]' layers=("$a") ;;
    esac
    label=$name
    diffs=$(printf '"sha256:%s",' "${layers[@]}")
    # The label makes every image's config (so its image ID) distinct, also for busybox:defer.
    printf '{"architecture":"%s","os":"linux","created":"1970-01-01T00:00:00Z","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":%s,"WorkingDir":"/","Labels":{"org.podward.image":"%s"}},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
      "$ARCH" "$cmd" "$label" "${diffs%,}" >"$w/config.json"
    c=$(sha "$w/config.json")
    tar=$w/${name%%:*}-${name#*:}
    mkdir -p "$tar"
    mv "$w/config.json" "$tar/$c.json"
    for d in "${layers[@]}"; do
      mkdir -p "$tar/$d"
      if [ "$d" = "$a" ]; then cp "$w/a.tar" "$tar/$d/layer.tar"; else cp "$w/b.tar" "$tar/$d/layer.tar"; fi
    done
    printf '[{"Config":"%s.json","RepoTags":["docker.io/library/%s"],"Layers":[%s]}]\n' \
      "$c" "$name" "$(printf '"%s/layer.tar",' "${layers[@]}" | sed 's/,$//')" >"$tar/manifest.json"
    (cd "$tar" && tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --format=gnu -cf "$tar.tar" -- *)
    echo "sha256:$c" >"$tar.config"
  done
  mkdir -p "$IMGDIR"
  for name in "${IMAGES[@]}"; do
    tar=$w/${name%%:*}-${name#*:}
    mv "$tar.tar" "$tar.config" "$IMGDIR/"
  done
  touch "$IMGDIR/complete"
  rm -rf "$w"
}
if [ ! -e "$IMGDIR/complete" ]; then
  rm -rf "$IMGDIR"
  build_images
  say "built images into $IMGDIR"
fi
# drop image tars of older recipes/binaries
for d in "$BASE"/cache/images/*/; do [ "${d%/}" = "$IMGDIR" ] || rm -rf "$d"; done

# registry_config REPO TAG: the config digest of the manifest the registry holds, or nothing
registry_config() {
  curl -sf --max-time 10 \
    -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
    -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
    "http://$REG/v2/library/$1/manifests/$2" 2>/dev/null |
    tr -d ' \n' | grep -o '"config":{[^}]*}' | grep -o 'sha256:[0-9a-f]\{64\}' || true
}
pushed=0
for name in "${IMAGES[@]}"; do
  f=$IMGDIR/${name%%:*}-${name#*:}
  want=$(cat "$f.config")
  [ "$(registry_config "${name%%:*}" "${name#*:}")" = "$want" ] && continue
  TMPDIR=$BASE/tmp skopeo copy -q --insecure-policy --dest-tls-verify=false --format v2s2 \
    "docker-archive:$f.tar" "docker://$REG/library/$name" >>"$BASE/logs/skopeo.log" 2>&1 ||
    { tail -n 10 "$BASE/logs/skopeo.log" >&2; die "skopeo copy $name to $REG"; }
  pushed=$((pushed + 1))
  say "pushed docker.io/library/$name ($want)"
done
[ "$pushed" = 0 ] && say "registry already has ${IMAGES[*]}"

# The sandbox image: imported (unpacked) into the CRI namespace, so RunPodSandbox never pulls.
# Its own config means removing any other image never removes it.
pause_cfg=$(cat "$IMGDIR/pause-local.config")
if [ "$(cat "$BASE/containerd/pause.imported" 2>/dev/null)" != "$pause_cfg" ] ||
  ! timeout 10 "${CTR[@]}" -n k8s.io images ls -q | grep -xF "$SANDBOX_IMAGE" >/dev/null; then
  timeout 60 "${CTR[@]}" -n k8s.io images import "$IMGDIR/pause-local.tar" >/dev/null ||
    die "import $SANDBOX_IMAGE"
  timeout 10 "${CTR[@]}" -n k8s.io images ls -q | grep -xF "$SANDBOX_IMAGE" >/dev/null ||
    die "$SANDBOX_IMAGE missing after import"
  echo "$pause_cfg" >"$BASE/containerd/pause.imported"
  say "imported sandbox image $SANDBOX_IMAGE"
fi

# ----------------------------------------------------------------------------- 6. crictl (optional)
if [ "$CRICTL" = 1 ] && [ ! -x "$BASE/cache/bin/crictl" ]; then
  GO=$(command -v go || true)
  [ -n "$GO" ] || die "PODWARD_CRI_CRICTL=1 needs go in PATH"
  say "building crictl $CRICTL_VERSION (go install; ~2 min cold)"
  (cd / && GOFLAGS=-mod=mod GOBIN=$BASE/cache/bin "$GO" install "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION") \
    >>"$BASE/logs/crictl-build.log" 2>&1 || { tail -n 10 "$BASE/logs/crictl-build.log" >&2; die "go install crictl"; }
fi

# ----------------------------------------------------------------------------- 7. health check
cri_ok || die "CRI plugin not ok"
for name in "${IMAGES[@]}"; do
  [ "$(registry_config "${name%%:*}" "${name#*:}")" = "$(cat "$IMGDIR/${name%%:*}-${name#*:}.config")" ] ||
    die "registry at $REG does not serve library/$name"
done
if [ -x "$BASE/cache/bin/crictl" ]; then
  CRI_CONFIG_FILE=$BASE/crictl.yaml timeout 10 "$BASE/cache/bin/crictl" info 2>/dev/null |
    tr -d ' \n' | grep -o '{[^{}]*"type":"RuntimeReady"[^{}]*}' | grep '"status":true' >/dev/null ||
    die "crictl info: RuntimeReady is not true"
  say "crictl: $BASE/cache/bin/crictl (config $BASE/crictl.yaml), RuntimeReady"
fi

cat >"$BASE/env" <<EOF
CRI_ENDPOINT=unix://$SOCK
PODWARD_CRI_BASE=$BASE
PODWARD_CRI_REGISTRY=$REG
PODWARD_CRI_SANDBOX_IMAGE=$SANDBOX_IMAGE
PODWARD_CRI_CNI=$CNI
PODWARD_CRI_CNI_SUBNET=$SUBNET
PODWARD_CRI_CNI_BRIDGE=$BRIDGE
PODWARD_CRI_RUNC_ROOT=$BASE/containerd/runc
EOF
say "ready: containerd pid $(cat "$BASE/containerd.pid"), registry $REG (mirror of docker.io), CNI $([ "$CNI" = 1 ] && echo "bridge $BRIDGE $SUBNET" || echo "off (host-network pods only)")"
echo "CRI_ENDPOINT=unix://$SOCK"
