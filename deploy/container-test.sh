#!/usr/bin/env bash
# container-test.sh: `make container-test`. Builds the Dockerfile with Podman
# (no Docker engine needed), runs the image, and checks that attnd answers
# inside it: /healthz, /readyz, one /v1/attention, the image's HEALTHCHECK
# command, the non-root user. Prints the image size and the time taken.
#
# Steps:
#   1. podman, buildah and debootstrap: installed with apt-get when missing
#      (as root, or through sudo).
#   2. The base image debian:bookworm-slim: used when Podman has it, pulled
#      when a registry answers, and otherwise made here: `debootstrap
#      --variant=minbase bookworm` from the Debian mirror apt already uses
#      (/etc/apt/sources.list*), slimmed the way the official -slim image is
#      (no docs, man pages, locales or apt lists), `podman import`ed and
#      tagged docker.io/library/debian:bookworm-slim. Made once; later runs
#      reuse it.
#   3. `podman build --isolation=chroot --format docker --layers=false`
#      (docker format keeps the HEALTHCHECK; the OCI format drops it; no step
#      is cached, so a run leaves no image behind but the base, and $IMAGE
#      with CONTAINER_KEEP=1).
#   4. The image runs with `podman run --network host`, or, where Podman
#      cannot start a container (no usable cgroups or namespaces), with
#      `buildah run --isolation chroot`, which shares the host's network.
#      attnd listens on 127.0.0.1 with an ephemeral port (--port 0).
#
# Environment:
#   IMAGE=localhost/attnd:test   tag to build
#   CONTAINER_KEEP=1             keep the built image (the base is always kept)
#   CONTAINER_RUNNER=podman|buildah   skip the detection
#   DEBIAN_MIRROR=URL            mirror for debootstrap (default: apt's own)
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/attnd:test}
# the commit attnd_build_info and the image label name (.git stays out of the build context)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
BASE=docker.io/library/debian:bookworm-slim
started=$SECONDS

work=$(mktemp -d "${TMPDIR:-/tmp}/container-test.XXXXXX")
ctr=""
runner=""
bpid=""
cleanup() {
	if [[ -n $bpid ]]; then
		kill "$bpid" 2>/dev/null || true
		wait "$bpid" 2>/dev/null || true
	fi
	if [[ -n $ctr && $runner == podman ]]; then
		podman rm -f -t 5 "$ctr" >/dev/null 2>&1 || true
	elif [[ -n $ctr && $runner == buildah ]]; then
		buildah rm "$ctr" >/dev/null 2>&1 || true
	fi
	if [[ -z ${CONTAINER_KEEP:-} ]]; then
		podman rmi -f "$IMAGE" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() {
	echo "container-test: FAIL: $*" >&2
	exit 1
}
step() { printf '== %s (%ds)\n' "$*" $((SECONDS - started)); }

as_root() {
	if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

# ---- 1. tools ---------------------------------------------------------------
install_tools() {
	local missing=() tool
	for tool in podman buildah debootstrap; do
		command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
	done
	((${#missing[@]} == 0)) && return 0
	step "installing ${missing[*]}"
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# ---- 2. base image ----------------------------------------------------------
# apt_mirror SUFFIX: the first http(s) URI of the apt sources whose path ends
# in SUFFIX (/debian or /debian-security), one-line or deb822 format.
apt_mirror() {
	local suffix=$1
	{
		cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; break } }'
		cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
			awk '$1 == "URIs:" { for (i = 2; i <= NF; i++) print $i }'
	} | sed 's:/*$::' | grep -E "^https?://.*${suffix}\$" | head -n 1
}

make_base() {
	local mirror security root="$work/rootfs"
	mirror=${DEBIAN_MIRROR:-$(apt_mirror /debian)}
	mirror=${mirror:-http://deb.debian.org/debian}
	security=$(apt_mirror /debian-security)
	security=${security:-http://deb.debian.org/debian-security}
	step "no registry: making $BASE with debootstrap from $mirror"
	as_root debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
	slim_rootfs "$root" "$mirror" "$security"
	as_root tar --numeric-owner -C "$root" -c . |
		podman import --change 'CMD ["bash"]' - "$BASE" >/dev/null
	as_root rm -rf "$root"
}

# slim_rootfs ROOT MIRROR SECURITY: what the official -slim images do to a
# minbase root: dpkg leaves docs, man pages and locales out of every later
# install, apt keeps no package files or translations, and the ones the
# bootstrap left behind go.
slim_rootfs() {
	local root=$1
	as_root tee "$root/etc/dpkg/dpkg.cfg.d/docker" >/dev/null <<-'EOF'
		path-exclude /usr/share/doc/*
		path-include /usr/share/doc/*/copyright
		path-exclude /usr/share/man/*
		path-exclude /usr/share/groff/*
		path-exclude /usr/share/info/*
		path-exclude /usr/share/lintian/*
		path-exclude /usr/share/linda/*
		path-exclude /usr/share/locale/*
		path-include /usr/share/locale/locale.alias
	EOF
	as_root tee "$root/etc/apt/apt.conf.d/docker-clean" >/dev/null <<-'EOF'
		DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
		Dir::Cache::pkgcache "";
		Dir::Cache::srcpkgcache "";
	EOF
	echo 'Acquire::Languages "none";' | as_root tee "$root/etc/apt/apt.conf.d/docker-no-languages" >/dev/null
	echo 'APT::AutoRemove::SuggestsImportant "false";' |
		as_root tee "$root/etc/apt/apt.conf.d/docker-autoremove-suggests" >/dev/null
	as_root rm -f "$root/etc/apt/sources.list"
	as_root tee "$root/etc/apt/sources.list.d/debian.sources" >/dev/null <<-EOF
		Types: deb
		URIs: $2
		Suites: bookworm bookworm-updates
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb
		URIs: $3
		Suites: bookworm-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	as_root find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
	as_root find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
	as_root rm -rf "$root"/usr/share/{man,groff,info,lintian,linda}/* "$root"/var/lib/apt/lists/* \
		"$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/log/*.log
	as_root find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
}

ensure_base() {
	if podman image exists "$BASE"; then
		step "base $BASE present"
	elif timeout 120 podman pull -q "$BASE" >/dev/null 2>"$work/pull.err"; then
		step "base $BASE pulled"
	else
		make_base
	fi
}

# ---- 3. build ---------------------------------------------------------------
build_image() {
	step "podman build --isolation=chroot -t $IMAGE"
	# --layers=false: no cached image of each step is kept; with them every
	# run left three untagged images behind (the build stage's), which the
	# clean-up's rmi of $IMAGE does not reach
	podman build --isolation=chroot --format docker --pull=never --layers=false -t "$IMAGE" \
		--build-arg ATTND_COMMIT="$commit" . \
		>"$work/build.log" 2>&1 ||
		{ tail -n 40 "$work/build.log" >&2; die "podman build failed (log above)"; }
	grep -E '^(== check_|[0-9]+%: Checks)|attnd [0-9]' "$work/build.log" || true
}

# ---- 4. run -----------------------------------------------------------------
# start_attnd: starts the image's entrypoint on 127.0.0.1:0 with podman run,
# or buildah run where podman cannot; sets $runner, $ctr and $port.
start_attnd() {
	local i out="$work/attnd.log"
	: >"$out"
	# no health timer: podman keeps it in systemd, which a CI box may lack;
	# the HEALTHCHECK command is run by hand below
	if [[ ${CONTAINER_RUNNER:-podman} == podman ]] &&
		podman run -d --name "attnd-test-$$" --network host --no-healthcheck \
			"$IMAGE" --host 127.0.0.1 --port 0 >/dev/null 2>"$work/run.err"; then
		runner=podman ctr="attnd-test-$$"
	else
		[[ -s $work/run.err ]] &&
			echo "podman run cannot start a container here: $(tail -n 1 "$work/run.err")"
		podman rm -f "attnd-test-$$" >/dev/null 2>&1 || true
		runner=buildah
		ctr=$(buildah from --pull-never "$IMAGE")
		# buildah run does not apply the image's entrypoint: name it, as the image's user
		buildah run --isolation chroot --user 10001:10001 "$ctr" \
			/usr/local/bin/attnd --host 127.0.0.1 --port 0 >"$out" 2>&1 &
		bpid=$!
	fi
	step "attnd started with $runner run"
	for ((i = 0; i < 300; i++)); do
		[[ $runner == podman ]] && podman logs "$ctr" >"$out" 2>&1
		port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$out" | head -n 1)
		[[ -n $port ]] && return 0
		sleep 0.1
	done
	cat "$out" >&2
	die "attnd did not print its port"
}

# in_container CMD...: runs CMD in the running container (podman exec) or in
# a fresh chroot of the image (buildah run), as the image's user, with
# ATTND_PORT set to the port attnd was given.
in_container() {
	if [[ $runner == podman ]]; then
		podman exec --env "ATTND_PORT=$port" "$ctr" "$@"
	else
		buildah run --isolation chroot --user 10001:10001 --env "ATTND_PORT=$port" "$ctr" "$@"
	fi
}

check() {
	local name=$1 want=$2 got
	shift 2
	got=$("$@" 2>&1) || true
	if [[ $got == *"$want"* ]]; then
		echo "ok   $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name: want '$want', got: ${got:0:300}"
		failed=$((failed + 1))
	fi
}

http() { curl -sS --max-time 10 -w ' %{http_code}' "$@"; }

run_checks() {
	local url="http://127.0.0.1:$port" probe
	check "GET /healthz" " 200" http "$url/healthz"
	check "GET /readyz" " 200" http "$url/readyz"
	check "POST /v1/attention (seeds, tiny)" '"tokens":["나는","맛있는","사과를","먹었다"]' \
		http "$url/v1/attention" -H 'Content-Type: application/json' \
		-d '{"model": "tiny", "text": "나는 맛있는 사과를 먹었다"}'
	check "POST /v1/attention answers 200" " 200" \
		http "$url/v1/attention" -H 'Content-Type: application/json' \
		-d '{"model": "tiny", "text": "나는 맛있는 사과를 먹었다"}'
	check "GET /openapi.json (embedded at build time)" '"openapi"' http "$url/openapi.json"
	check "attnd_build_info names commit $commit" "commit=\"$commit\"" http "$url/metrics"
	check "image label org.opencontainers.image.revision=$commit" "$commit" \
		podman image inspect --format '{{index .Config.Labels "org.opencontainers.image.revision"}}' "$IMAGE"
	# the image's HEALTHCHECK command as recorded in the image, run in it
	probe=$(podman image inspect --format '{{json .Config.Healthcheck.Test}}' "$IMAGE")
	check "HEALTHCHECK is attnd --probe: $probe" "attnd --probe" echo "$probe"
	probe=$(podman image inspect --format '{{index .Config.Healthcheck.Test 1}}' "$IMAGE")
	check "HEALTHCHECK command passes inside the image" "probe-ok" \
		in_container /bin/sh -c "$probe && echo probe-ok"
	check "HEALTHCHECK command fails with attnd down" "probe-failed" \
		in_container /bin/sh -c "ATTND_PORT=1; $probe || echo probe-failed"
	check "runs as uid 10001" "10001" podman image inspect --format '{{.Config.User}}' "$IMAGE"
	check "OPENBLAS_NUM_THREADS=1" "OPENBLAS_NUM_THREADS=1" \
		podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$IMAGE"
	check "EXPOSE 8080" "8080/tcp" podman image inspect --format '{{json .Config.ExposedPorts}}' "$IMAGE"
}

# descendant_named PID NAME: the first process called NAME below PID.
descendant_named() {
	ps -e -o pid=,ppid=,comm= | awk -v root="$1" -v name="$2" '
		{ parent[$1] = $2; comm[$1] = $3 }
		END {
			for (p in comm) {
				if (comm[p] != name) continue
				for (q = parent[p]; q > 1; q = parent[q])
					if (q == root) { print p; exit }
			}
		}'
}

# stop_attnd: SIGTERM, as `docker stop` sends; attnd drains and exits 0.
stop_attnd() {
	local rc
	if [[ $runner == podman ]]; then
		podman stop -t 20 "$ctr" >/dev/null
		rc=$(podman inspect --format '{{.State.ExitCode}}' "$ctr")
	else
		# buildah run does not forward SIGTERM (it kills its child): signal
		# attnd itself, a descendant of buildah run; buildah exits with its status
		local apid
		apid=$(descendant_named "$bpid" attnd)
		[[ -n $apid ]] || die "cannot find attnd under buildah run ($bpid)"
		kill -TERM "$apid"
		rc=0
		wait "$bpid" || rc=$?
		bpid=""
	fi
	check "exits 0 on SIGTERM" "rc=0" echo "rc=$rc"
}

passed=0 failed=0
install_tools
ensure_base
build_image
start_attnd
run_checks
stop_attnd

size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
printf 'image %s: %d MB (%d bytes); base %s: %d MB\n' "$IMAGE" $((size / 1000000)) "$size" \
	"$BASE" $(($(podman image inspect --format '{{.Size}}' "$BASE") / 1000000))
echo "container-test: $((SECONDS - started)) s, runner $runner"
echo "container-test: $passed passed, $failed failed"
((failed == 0))
